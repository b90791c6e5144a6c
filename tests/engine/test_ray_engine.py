"""The Ray engine on a real local Ray cluster: a head and a second node process (`ray start`),
a grid of 12 cases against the fake OpenAI server (official SDK over HTTP).

Checked: a node's actor worker process killed mid-run (SIGKILL) -> every case completes once,
each answer turn is recorded once, the server saw a repeated call only for a case that was in
flight on the killed process, `Run.verify()` is clean and the exports have the same shape as a
local run's; a node whose corpus differs is refused by name and never used; the driver killed
mid-run -> `--resume` on the local engine finishes the run; a node lost just after its case's
`case_finished` was durable -> that case counts done once; a whole node killed -> its cases
finish on the other node. Each node kill is placed by construction (tests/engine/freeze.py: the
processes frozen while the journals are read), not by timing. The cluster is stopped even when
a test fails.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import psutil
import pyarrow.parquet as pq
import pytest

from parquet_agent.engine import EngineConfig
from parquet_agent.errors import EngineError, MachineFault
from parquet_agent.experiment.config import load_config
from parquet_agent.experiment.runner import Experiment
from parquet_agent.explore.runs import RunStore
from parquet_agent.models.fakes import DROP, openai_server
from tests.conftest import fill_disk
from tests.engine.freeze import FinishedSince, kill_mid_case, open_cases, step
from tests.engine.grid import GridScript, harness_answers, write_config
from tests.window import answer_responses, last_node, replayed_attempts

pytestmark = pytest.mark.ray
pytest.importorskip("ray", reason="Ray is not installed here: pip install 'parquet_agent[ray]' "
                                  "(.ci/run installs it, so CI never skips)")


REPO = Path(__file__).resolve().parents[2]
ENV = {"FAKE_OPENAI_KEY": "sk-test"}
GRID = 12  # 3 questions x 2 models x 2 strategies


def _engine(cluster, case_workers: int = 2, **extra) -> str:
    lines = ['kind = "ray"', f'address = "{cluster.address}"',
             f"case_workers_per_node = {case_workers}"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in extra.items() if not isinstance(v, dict)]
    table = "".join(f"\n[engine.{k}]\n" + "".join(f'"{a}" = "{b}"\n' for a, b in v.items())
                    for k, v in extra.items() if isinstance(v, dict))
    return "[engine]\n" + "\n".join(lines) + "\n" + table


def _node_workers(cluster, node: str, actor: str = "NodeWorker") -> list[psutil.Process]:
    """The `actor` processes (NodeWorker actors, or the Mailbox) under node `node`'s raylet."""
    found = []
    for raylet in cluster.node_processes(node):
        for proc in raylet.children(recursive=True):
            try:
                if actor in " ".join(proc.cmdline()) or actor in proc.name():
                    found.append(proc)
            except psutil.Error:
                continue
    return found


def _mailbox(cluster) -> list[psutil.Process]:
    """The Mailbox actor's process (on the driver's node, the head)."""
    return _node_workers(cluster, "node-0", "Mailbox")


def _kill(procs: list[psutil.Process]) -> None:
    for proc in procs:
        try:
            proc.send_signal(signal.SIGKILL)
        except psutil.Error:
            continue


def _whole_node(cluster, node: str) -> list[psutil.Process]:
    """Every process of node `node`: its raylet and all the raylet's descendants."""
    procs = []
    for raylet in cluster.node_processes(node):
        try:
            procs += [raylet, *raylet.children(recursive=True)]
        except psutil.Error:
            continue
    return procs


def _kill_mid_case(script: GridScript, calls: int, victims, killed: list,
                   run_dir: Path) -> threading.Thread:
    """Kill `victims()` once the server saw `calls` answer calls, at a moment node-1 has a
    case in flight that cannot have finished (tests/engine/freeze.py: chosen with node-1
    frozen, not by timing)."""
    return kill_mid_case(run_dir, "node-1", victims,
                         lambda: sum(script.calls.values()) >= calls, killed)


def _stepped_run(cluster, corpus: Path, tmp_path: Path, script: GridScript, run_dir: Path,
                 nodes: tuple[str, ...], look, kill):
    """Run the grid one case per node; from the first case on `nodes`, step their workers and
    the mailbox in turns (tests/engine/freeze.py `step`) until `look()` finds its window, where
    `kill` acts. Returns the run and what `look` found (None: the run ended first)."""
    caught: list = []
    running = threading.Event()
    running.set()

    def watch() -> None:
        while running.is_set() and not any(open_cases(run_dir, n) for n in nodes):
            time.sleep(0.005)
        workers = lambda: [p for n in nodes for p in _node_workers(cluster, n)]
        caught.append(step(look, kill, workers, lambda: _mailbox(cluster), running.is_set))

    with openai_server(script) as server:
        config = write_config(tmp_path / "ray.toml", corpus, tmp_path / "runs", server.url,
                              engine=_engine(cluster, case_workers=1))
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            run = Experiment.from_toml(config, env=ENV, progress=False).run(run_dir)
        finally:
            running.clear()
            watcher.join(timeout=60)
    return run, (caught[0] if caught else None)


def _events(run, name: str) -> list:
    return [e for evs in run.all_events().values() for e in evs if e.event == name]


def _check_complete_once(run) -> None:
    assert run.verify().ok, str(run.verify())
    events = run.all_events()
    cases = [c for c in events if c != "_run"]
    assert len(cases) == GRID
    for cid in cases:
        finished = [e for e in events[cid] if e.event == "case_finished"]
        assert len(finished) == 1 and finished[0].data["status"] == "complete", cid
        turns = [e.data["turn"] for e in events[cid] if e.event == "model_turn"]
        assert sorted(turns) == sorted(set(turns)), f"{cid}: a turn was recorded twice"


def _shape(value):
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    return type(value).__name__ if value is not None else None


def _export_shape(run_dir: Path) -> dict:
    files = sorted(p.relative_to(run_dir).as_posix() for p in run_dir.rglob("*")
                   if p.is_file() and p.parts[len(run_dir.parts)] not in ("raw", "journal")
                   and p.name != ".lock")
    record = json.loads((run_dir / "cases" / "Q001__fake-a__sql.json").read_text())
    index = json.loads((run_dir / "cases-index.json").read_text())
    return {"files": files, "record": sorted(record), "index": _shape(index["cases"][0])}


def test_a_killed_node_worker_reruns_its_cases_elsewhere_and_the_run_matches_a_local_one(
        cluster, corpus, tmp_path):
    script = GridScript(harness_answers(corpus), latency_s=0.3)
    killed: list[int] = []
    with openai_server(script) as server:
        config = write_config(tmp_path / "ray.toml", corpus, tmp_path / "runs", server.url,
                              engine=_engine(cluster))
        killer = _kill_mid_case(script, 10, lambda: _node_workers(cluster, "node-1"), killed,
                                tmp_path / "runs" / "ray")
        run = Experiment.from_toml(config, env=ENV, progress=False).run(tmp_path / "runs" / "ray")
        killer.join(timeout=5)
    assert killed, "the node-1 worker never had a case in flight to kill it in"
    _check_complete_once(run)
    lost = [e for e in _events(run, "case_failed") if e.data["error_type"] == "NodeLost"]
    assert lost, "the case in flight on the killed worker was not lost"
    assert all("node-1" in e.data["message"] for e in lost)
    # a call repeated at the server only where a lost case's in-flight call was cut off
    assert sum(n - 1 for n in script.duplicates().values()) <= len(lost)
    finished = [e for e in run.run_events() if e.event == "run_finished"][-1].data["engine"]
    assert sum(n["lost"] for n in finished["nodes"].values()) == len(lost)
    assert sum(n["cases"] for n in finished["nodes"].values()) == GRID
    assert finished["write_round_trip"]["count"] > 0
    # the nodes' process trees count in the run's peak memory, not only the driver's
    assert all(n["peak_pss_bytes"] > 0 for n in finished["nodes"].values() if n["cases"])
    closing = [e for e in run.run_events() if e.event == "run_finished"][-1].data
    assert closing["peak_rss_bytes"] > finished["nodes_peak_pss_bytes"] > 0
    nodes = {e.data.get("node") for e in _events(run, "case_started")}
    assert nodes == {"node-0", "node-1"}
    engine = run.manifest["engine"]
    assert [n["name"] for n in engine["nodes"]] == ["node-0", "node-1"]
    assert all(n["sandbox_mode"] for n in engine["nodes"])
    figures = run.run_figures()["nodes"]  # where each case finished, from the journals
    assert {name: f["cases"] for name, f in figures.items()} == {
        label.split("/")[0]: n["cases"] for label, n in finished["nodes"].items() if n["cases"]}

    local_script = GridScript(harness_answers(corpus))
    with openai_server(local_script) as server:
        config = write_config(tmp_path / "local.toml", corpus, tmp_path / "runs", server.url)
        local = Experiment.from_toml(config, env=ENV, progress=False).run(
            tmp_path / "runs" / "local")
    _check_complete_once(local)
    assert "engine" not in local.manifest
    assert _export_shape(run.dir) == _export_shape(local.dir)
    assert run.cases_df()["correctness"].tolist() == local.cases_df()["correctness"].tolist()


def test_a_node_whose_corpus_differs_is_refused_by_name_and_never_used(cluster, corpus,
                                                                       tmp_path):
    altered = tmp_path / "altered"
    altered.mkdir()
    for f in corpus.iterdir():
        if f.is_file():
            (altered / f.name).write_bytes(f.read_bytes())
    pq.write_table(pq.read_table(corpus / "2025-02.parquet"), altered / "2025-02.parquet",
                   compression="gzip")
    script = GridScript(harness_answers(corpus))
    with openai_server(script) as server:
        config = write_config(tmp_path / "refuse.toml", corpus, tmp_path / "runs", server.url,
                              engine=_engine(cluster, corpus_by_node={"node-1": str(altered)}))
        run = Experiment.from_toml(config, env=ENV, progress=False).run(tmp_path / "runs" / "r")
        _check_complete_once(run)
        refused = run.manifest["engine"]["refused"]
        assert [r["name"] for r in refused] == ["node-1"]
        assert "2025-02.parquet" in refused[0]["refused"] and "node-1" in refused[0]["refused"]
        assert {e.data.get("node") for e in _events(run, "case_started")} == {"node-0"}

        every = write_config(tmp_path / "none.toml", corpus, tmp_path / "runs", server.url,
                             engine=_engine(cluster, corpus=str(altered)))
        with pytest.raises(EngineError) as err:
            Experiment.from_toml(every, env=ENV, progress=False).run(tmp_path / "runs" / "none")
    message = str(err.value)
    assert "node-0" in message and "node-1" in message and "2025-02.parquet" in message


def test_a_killed_driver_is_finished_by_a_local_resume(cluster, corpus, tmp_path):
    script = GridScript(harness_answers(corpus), latency_s=0.3)
    run_dir = tmp_path / "runs" / "driver"
    with openai_server(script) as server:
        config = write_config(tmp_path / "ray.toml", corpus, tmp_path / "runs", server.url,
                              engine=_engine(cluster))
        proc = subprocess.Popen(
            [sys.executable, "-m", "parquet_agent", "run", str(config), "--run-dir",
             str(run_dir), "--quiet"], cwd=REPO, env=dict(os.environ, **ENV),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 240
        while sum(script.calls.values()) < 12 and proc.poll() is None:
            assert time.monotonic() < deadline, "the Ray run made no progress"
            time.sleep(0.05)
        assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stderr.close()
        with RunStore(run_dir.parent).open(run_dir) as killed:
            unfinished = [c for c in killed.case_ids() if c not in killed.completed_cases()]
        assert unfinished, "the driver finished before it was killed"
        local = replace(load_config(config), engine=EngineConfig())
        run = Experiment(local, env=ENV, progress=False).run(run_dir, resume=True)
    _check_complete_once(run)
    assert sum(n - 1 for n in script.duplicates().values()) <= len(unfinished)
    assert run.manifest["engine"]["kind"] == "ray"
    sessions = [e.data["engine"] for e in run.run_events() if e.event == "run_started"]
    assert [s["kind"] for s in sessions] == ["ray", "local"]


def test_a_response_durable_on_the_driver_but_not_journaled_is_replayed_not_paid_again(
        cluster, corpus, tmp_path):
    """The node dies after its answer's response reached the driver's raw store and before the
    turn was journaled (certainly: killed before it heard the write was done, tests/engine/
    freeze.py): the case re-runs on the other node from its journal and the raw records, and the
    server sees no answer call twice. One case per node at a time, so the killed worker has no
    other call in flight."""
    script = GridScript(harness_answers(corpus), latency_s=0.05)
    run_dir = tmp_path / "runs" / "window"
    seen: list[set[str]] = []

    def fresh_response() -> str | None:
        """An answer response made durable since the previous look (no node has its reply)."""
        now = answer_responses(run_dir)
        fresh = sorted(now - seen[-1]) if seen else []
        seen.append(now)
        return fresh[0] if fresh else None

    run, caught = _stepped_run(
        cluster, corpus, tmp_path, script, run_dir, ("node-0", "node-1"), fresh_response,
        lambda response: _kill(_node_workers(cluster, last_node(run_dir, response))))
    assert caught, "the run finished before a response was caught unjournaled"
    _check_complete_once(run)
    assert script.duplicates() == {}, "a paid answer call was made twice"
    assert [a["response_path"] for a in replayed_attempts(run)] == [caught]
    lost = [e for e in _events(run, "case_failed") if e.data["error_type"] == "NodeLost"]
    assert len(lost) == 1


def test_the_drivers_disk_full_stops_the_run_then_resume_finishes(cluster, corpus, tmp_path,
                                                                   small_tmpfs):
    """Nodes write through the driver: its full disk stops the run as a local one (issue 14)."""
    script = GridScript(harness_answers(corpus), latency_s=0.3)
    run_dir = small_tmpfs / "runs" / "full"
    filled: list[Path] = []

    def fill() -> None:
        deadline = time.monotonic() + 240
        while not list((run_dir / "journal").glob("*.jsonl.gz")) and time.monotonic() < deadline:
            time.sleep(0.02)
        filled.append(fill_disk(small_tmpfs))

    with openai_server(script) as server:
        config = write_config(tmp_path / "ray.toml", corpus, small_tmpfs / "runs", server.url,
                              engine=_engine(cluster))
        filler = threading.Thread(target=fill, daemon=True)
        filler.start()
        with pytest.raises(MachineFault) as err:
            Experiment.from_toml(config, env=ENV, progress=False).run(run_dir)
        filler.join(timeout=5)
        assert filled, "no case finished before the run stopped"
        message = str(err.value)
        assert "disk is full" in message and str(run_dir) in message and "--resume" in message
        filled[0].unlink()
        run = Experiment.from_toml(config, env=ENV, progress=False).run(run_dir, resume=True)
    _check_complete_once(run)
    failed = [e for e in _events(run, "case_failed") if e.data["error_type"] != "NodeLost"]
    assert not failed, "the machine's fault was recorded as a case failure"


def test_the_circuit_breaker_stops_a_dead_model_on_ray_too(cluster, corpus, tmp_path, capfd):
    """Issue 19: the breaker is the engine's before_case / after_case hook, so a Ray run stops
    dispatching a model whose server is gone. One case in flight per node: fake-a's cases are
    slow, fake-b's fail at once (its server drops every answer call), so fake-b's third case
    in a row fails before its Q003 cases are dispatched; those stay unstarted (resumable)."""
    grid = GridScript(harness_answers(corpus), latency_s=1.0)

    def b_is_dead(request):
        body = request.json or {}
        user = next((m["content"] for m in body.get("messages", []) if m["role"] == "user"), "")
        if body.get("model") == "gpt-fake-b" and "single word" not in str(user):
            return DROP
        return grid(request)

    engine = (f'[engine]\nkind = "ray"\naddress = "{cluster.address}"\n'
              "case_workers_per_node = 1\n")
    with openai_server(b_is_dead) as server:
        config = write_config(tmp_path / "ray.toml", corpus, tmp_path / "runs", server.url,
                              engine=engine)
        run = Experiment.from_toml(config, env=ENV, progress=False).run(tmp_path / "runs" / "b")
    err = capfd.readouterr().err
    assert err.count("cases in a row could not reach its server") == 1
    assert "model 'fake-b'" in err
    started = {cid for cid in run.case_ids()}
    assert {c for c in started if "__fake-a__" in c} == {
        f"{q}__fake-a__{s}" for q in ("Q001", "Q002", "Q003") for s in ("sql", "sql+stream")}
    # fake-b's third failure opens the breaker; its fourth case may already be on the other
    # node by then, but Q003's come after fake-a's slow Q003 cases and are never started
    b_started = {c for c in started if "__fake-b__" in c}
    assert 3 <= len(b_started) <= 4 and not any(c.startswith("Q003") for c in b_started)
    cases = run.cases_df().set_index("case_id")
    assert (cases.loc[[c for c in cases.index if "__fake-a__" in c], "status"]
            == "complete").all()
    assert not any(c in run.completed_cases() for c in started if "__fake-b__" in c)


def test_a_node_lost_just_after_its_case_finished_counts_that_case_done_once(
        cluster, corpus, tmp_path):
    """The window of stop 21's CI failure, hit by construction (tests/engine/freeze.py): node-1's
    worker dies after its case's `case_finished` is durable on the driver and before its result
    reached the driver. The case is done on node-1 (not lost, not re-run, nothing paid twice),
    counted once in the engine's figures; node-1's actor comes back and takes cases again. One
    case per node at a time, so the killed worker has no other case in flight."""
    script = GridScript(harness_answers(corpus), latency_s=0.05)
    run_dir = tmp_path / "runs" / "finished"
    run, caught = _stepped_run(cluster, corpus, tmp_path, script, run_dir, ("node-1",),
                               FinishedSince(run_dir, "node-1"),
                               lambda _: _kill(_node_workers(cluster, "node-1")))
    assert caught, "the run finished before node-1 finished a case"
    _check_complete_once(run)
    started = [e.data.get("node") for e in run.all_events()[caught] if e.event == "case_started"]
    assert started == ["node-1"], f"{caught} was run again: {started}"
    assert not _events(run, "case_failed"), "a case was recorded lost or failed"
    assert script.duplicates() == {}, "a paid answer call was made twice"
    finished = [e for e in run.run_events() if e.event == "run_finished"][-1].data["engine"]
    assert sum(n["lost"] for n in finished["nodes"].values()) == 0
    assert sum(n["cases"] for n in finished["nodes"].values()) == GRID
    figures = run.run_figures()["nodes"]  # where each case finished, from the journals
    assert {name: f["cases"] for name, f in figures.items()} == {
        label.split("/")[0]: n["cases"] for label, n in finished["nodes"].items() if n["cases"]}
    assert {e.data.get("node") for e in _events(run, "case_started")} == {"node-0", "node-1"}


def test_a_whole_node_killed_mid_run_finishes_on_the_other(cluster, corpus, tmp_path):
    """Runs last: node-1 does not come back."""
    script = GridScript(harness_answers(corpus), latency_s=0.3)
    killed: list[int] = []
    with openai_server(script) as server:
        config = write_config(tmp_path / "ray.toml", corpus, tmp_path / "runs", server.url,
                              engine=_engine(cluster))
        killer = _kill_mid_case(script, 10, lambda: _whole_node(cluster, "node-1"), killed,
                                tmp_path / "runs" / "n")
        run = Experiment.from_toml(config, env=ENV, progress=False).run(tmp_path / "runs" / "n")
        killer.join(timeout=5)
    assert killed, "node-1 never had a case in flight to kill it in"
    _check_complete_once(run)
    lost = [e for e in _events(run, "case_failed") if e.data["error_type"] == "NodeLost"]
    assert lost and sum(n - 1 for n in script.duplicates().values()) <= len(lost)
    last = {}
    for cid, evs in run.all_events().items():
        starts = [e.data.get("node") for e in evs if e.event == "case_started"]
        if starts:
            last[cid] = starts[-1]
    assert all(last[e_cid] == "node-0" for e_cid in
               {cid for cid, evs in run.all_events().items()
                if any(e.event == "case_failed" for e in evs)})
