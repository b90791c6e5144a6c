"""Failures look like failures (issue 19, findings 2 and 9): a failed health check stops the run
before any case, a run with failed cases exits non-zero with its reasons grouped and the command
that resumes it, a circuit breaker stops a dead model's cases (whichever engine runs them: the
hook is the engine's `before_case` / `after_case`), `runs` / `RunStore.list()` show the state
of every run, Ctrl-C names the run folder, and the demo can resume.

Real CLI processes, real run folders, the OpenAI SDK against the fake server on 127.0.0.1 (or a
closed port), the harness corpus."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import tomllib
from datetime import datetime
from pathlib import Path

import pytest

from parquet_agent.cli.experiment import demo_config
from parquet_agent.experiment.config import ExperimentConfig
from parquet_agent.experiment.run import create_run
from parquet_agent.experiment.runner import Experiment
from parquet_agent.explore.runs import RunStore
from parquet_agent.models.fakes import DROP, http_error, openai_server, slow
from parquet_agent.store import RunStarted, freeze
from tests.harness_corpus import make_harness_corpus
from tests.test_experiment import _answer_script, _write_config

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_harness_corpus(tmp_path_factory.mktemp("fail") / "corpus")


def _closed_port_url() -> str:
    with socket.socket() as s:  # bound then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _config(folder: Path, corpus: Path, url: str, *, workers: int = 1) -> Path:
    """The experiment config of tests/test_experiment.py, one attempt per model call."""
    return _write_config(folder, corpus, url, workers=workers, model_extra="max_attempts = 1")


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, FAKE_OPENAI_KEY="sk-test")
    return subprocess.run([sys.executable, "-m", "parquet_agent", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_closed_port_stops_before_any_case_with_one_clear_line(corpus, tmp_path):
    url = _closed_port_url()
    config = _config(tmp_path, corpus, url)
    proc = _cli("run", str(config), "--run-dir", str(tmp_path / "runs" / "r"), "--quiet")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "health check failed for 'fake'" in lines[0] and f"{url}/v1" in lines[0]
    assert "connect" in lines[0].lower() and "--keep-going" in lines[0]
    run = RunStore(tmp_path / "runs").open("r")
    assert run.case_ids() == []  # no case started
    listing = RunStore(tmp_path / "runs").list().set_index("run_id")
    assert listing.loc["r", "status"] == "failed"
    assert listing.loc["r", "unfinished"] == 6


def test_a_401_stops_the_run_before_any_case(corpus, tmp_path):
    with openai_server([http_error(401)] * 3) as server:
        config = _config(tmp_path, corpus, server.url)
        proc = _cli("run", str(config), "--run-dir", str(tmp_path / "runs" / "r"), "--quiet")
        assert len(server.model_calls()) == 1  # the health call only
    assert proc.returncode == 2 and "401" in proc.stderr
    assert "health check failed for 'fake'" in proc.stderr


def test_keep_going_runs_fails_groups_reasons_and_the_breaker_stops_the_model(corpus,
                                                                             tmp_path):
    config = _config(tmp_path, corpus, _closed_port_url())
    run_dir = tmp_path / "runs" / "r"
    proc = _cli("run", str(config), "--run-dir", str(run_dir), "--quiet", "--keep-going")
    assert proc.returncode == 1, proc.stderr
    err = proc.stderr
    assert "(--keep-going: running anyway)" in err
    assert "3 cases in a row could not reach its server" in err  # the breaker, said once
    assert err.count("cases in a row") == 1
    # grouped reasons with counts: 3 cases failed their calls, 3 never started
    assert "3 x unfinished: ModelCallError: model 'fake'" in err
    assert "3 x unfinished: never started" in err
    assert f"--run-dir {run_dir} --resume" in err
    assert proc.stdout == ""  # --quiet: no estimate, no summary; the failure is on stderr
    run = RunStore(run_dir.parent).open(run_dir)
    assert len(run.case_ids()) == 3  # the breaker started no more


def test_server_dying_mid_run_trips_the_breaker_and_a_resume_finishes(corpus, tmp_path):
    calls = {"n": 0}

    def dies_after_the_first_case(request):
        calls["n"] += 1
        if calls["n"] > 3:  # health + the first case's two turns, then the server is gone
            return DROP
        return _answer_script(request)

    with openai_server(dies_after_the_first_case) as server:
        config = _config(tmp_path, corpus, server.url)
        run_dir = tmp_path / "runs" / "r"
        proc = _cli("run", str(config), "--run-dir", str(run_dir), "--quiet")
        assert proc.returncode == 1, proc.stderr
        assert "3 cases in a row could not reach its server" in proc.stderr
        assert calls["n"] == 3 + 3  # one dropped call per failed case; none after the breaker
        statuses = RunStore(run_dir.parent).list().set_index("run_id").loc["r"]
        assert statuses["status"] == "partial" and statuses["complete"] == 1
        assert statuses["unfinished"] == 5
        assert len(RunStore(run_dir.parent).open(run_dir).case_ids()) == 4  # 2 never started
    with openai_server(_answer_script) as server:  # the server is back on another port
        config = _config(tmp_path, corpus, server.url)
        proc = _cli("run", str(config), "--run-dir", str(run_dir), "--quiet", "--resume")
        assert proc.returncode == 0, proc.stderr
    listing = RunStore(run_dir.parent).list().set_index("run_id").loc["r"]
    assert listing["status"] == "complete" and listing["complete"] == 6


def test_latency_counts_each_session_of_a_case_never_the_gap_between_them(corpus, tmp_path):
    """Issue 19, finding 10: `latency_p50_ms` counted the time between a kill and its resume
    (296,008 ms). Three sessions 2.5 s apart: twice the server is down (the same 3 cases fail,
    unfinished, then the breaker), then it is back and every case finishes. A case's time is
    its time running in each session; an unfinished case has no latency yet."""
    run_dir = tmp_path / "runs" / "r"
    dead = _config(tmp_path, corpus, _closed_port_url())
    for _ in range(2):
        proc = _cli("run", str(dead), "--run-dir", str(run_dir), "--quiet", "--keep-going",
                    *(["--resume"] if run_dir.exists() else []))
        assert proc.returncode == 1, proc.stderr
        time.sleep(2.5)
    run = RunStore(run_dir.parent).open(run_dir)
    retried = sorted(run.case_ids())
    assert len(retried) == 3
    assert all(run.summary()["latency_p50_ms"].isna())  # nothing finished: no latency
    assert run.cases_df()["wall_ms"].isna().all()
    with openai_server(_answer_script) as server:
        config = _config(tmp_path, corpus, server.url)
        proc = _cli("run", str(config), "--run-dir", str(run_dir), "--quiet", "--resume")
        assert proc.returncode == 0, proc.stderr
    run = RunStore(run_dir.parent).open(run_dir)
    cases = run.cases_df().set_index("case_id")
    assert (cases["status"] == "complete").all()
    for cid in retried:  # the sessions where it failed count too, the gaps between them not
        events = run.case_events(cid)
        last = [e for e in events if e.event == "case_finished"][-1]
        assert cases.loc[cid, "wall_ms"] > last.data["wall_ms"]
        # from its first start to its last event: its three sessions and the two 2.5 s sleeps
        # between them (a bound by construction, not a guess at how long a case takes here)
        span_ms = (_instant(events[-1].at) - _instant(events[0].at)) * 1000
        assert cases.loc[cid, "wall_ms"] <= span_ms - 2 * 2500, (cid, span_ms)
    summary = run.summary()  # each cell's latency is a percentile of its cases' times
    for _, cell in summary.iterrows():
        walls = cases[(cases["model"] == cell["model"]) & (cases["strategy"] == cell["strategy"])]
        assert walls["wall_ms"].min() <= cell["latency_p50_ms"] <= walls["wall_ms"].max()


def _instant(at: str) -> float:
    """Seconds since the epoch of a journal timestamp (`...Z`)."""
    return datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()


def test_runs_command_and_list_show_status_counts_and_cost(corpus, tmp_path):
    runs = tmp_path / "runs"
    Experiment(demo_config(corpus, runs), progress=False).run(runs / "ok")
    _cli("run", str(_config(tmp_path, corpus, _closed_port_url())), "--run-dir",
         str(runs / "dead"), "--quiet")
    # a run whose session is open in a live process reads as running
    store = RunStore(runs)
    live = create_run(store, demo_config(corpus, runs), freeze(
        question_ids=["Q001"], corpus_snapshot=None, prompt_hashes={}, sandbox_mode="none"),
        run_id="live")
    live.run_journal().append(RunStarted(session=0, pid=os.getpid()))
    try:
        listing = store.list().set_index("run_id")
    finally:
        live.close()
    assert listing.loc["ok", "status"] == "complete" and listing.loc["ok", "complete"] == 6
    assert listing.loc["dead", "status"] == "failed"
    assert listing.loc["live", "status"] == "running"
    proc = _cli("runs", str(runs))
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[0]: line for line in proc.stdout.splitlines()[1:]}
    assert "complete" in rows["ok"] and "$0.0000" in rows["ok"]
    assert "failed" in rows["dead"] and "running" in rows["live"]


def _interruptible() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_names_the_run_folder_and_the_resume_command(corpus, tmp_path):
    with openai_server(lambda request: slow(3.0, _answer_script(request))) as server:
        config = _config(tmp_path, corpus, server.url)
        run_dir = tmp_path / "runs" / "r"
        env = dict(os.environ, FAKE_OPENAI_KEY="sk-test")
        # Ctrl-C as a terminal gives it: a suite started in the background (`nohup pytest &`)
        # runs with SIGINT ignored, a child inherits that, and Python then installs no
        # KeyboardInterrupt at all (the run finished with exit 0)
        proc = subprocess.Popen([sys.executable, "-m", "parquet_agent", "run", str(config),
                                 "--run-dir", str(run_dir), "--quiet"], cwd=REPO, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=_interruptible)
        deadline = time.monotonic() + 240  # a bound for a stuck run only (CLI start under load)
        while len(server.model_calls()) < 2:  # past the health check, inside a case
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert f"interrupted; run folder {run_dir}" in err
    assert f"resume with: parquet-agent run {config} --run-dir {run_dir} --resume" in err


def test_demo_resumes_and_configs_demo_toml_is_what_the_demo_runs(corpus, tmp_path):
    runs = tmp_path / "runs"
    proc = _cli("demo", "--data", str(corpus), "--runs", str(runs), "--resume", "--quiet")
    assert proc.returncode == 2 and "no unfinished demo run" in proc.stderr
    first = _cli("demo", "--data", str(corpus), "--runs", str(runs), "--run-dir",
                 str(runs / "d"), "--quiet")
    assert first.returncode == 0, first.stderr
    again = _cli("demo", "--data", str(corpus), "--runs", str(runs), "--run-dir",
                 str(runs / "d"), "--resume")
    assert again.returncode == 0, again.stderr
    # the low scores come with what they are and what is known of real models (issue 27 item 7)
    assert "the offline baseline is a keyword policy, not a language model" in again.stdout
    assert "expected to score low" in again.stdout and "docs/financebench.md" in again.stdout
    assert again.stdout.index("About these scores") > again.stdout.index("correctness")
    assert RunStore(runs).list().set_index("run_id").loc["d", "sessions"] == 2
    # configs/demo.toml: the same experiment as `parquet-agent demo` (paths aside)
    shipped = tomllib.loads((REPO / "configs" / "demo.toml").read_text())
    demo = demo_config(Path("data/sample"), Path("runs")).to_dict()
    for key in ("sample", "strategies", "models", "judge", "limits"):
        assert ExperimentConfig.from_dict(shipped | {
            "corpus": "x", "questions": "x", "runs_dir": "x"}).to_dict()[key] == demo[key], key


def test_a_model_answering_everything_still_exits_zero(corpus, tmp_path):
    with openai_server(_answer_script) as server:
        proc = _cli("run", str(_config(tmp_path, corpus, server.url)), "--run-dir",
                    str(tmp_path / "runs" / "r"), "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert "did not finish" not in proc.stderr


def test_quiet_prints_nothing_on_stdout_and_loud_prints_estimate_and_summary(corpus, tmp_path):
    """`run --quiet` on a run that goes well prints nothing at all (it printed the cost
    estimate); without it, the estimate comes first and the summary after."""
    with openai_server(_answer_script) as server:
        config = _config(tmp_path, corpus, server.url)
        quiet = _cli("run", str(config), "--run-dir", str(tmp_path / "runs" / "q"), "--quiet")
        loud = _cli("run", str(config), "--run-dir", str(tmp_path / "runs" / "l"))
    assert quiet.returncode == 0 and loud.returncode == 0, quiet.stderr + loud.stderr
    assert quiet.stdout == "" and "estimate" not in quiet.stderr
    assert loud.stdout.startswith("estimated cost before the run") and "run folder:" in loud.stdout
