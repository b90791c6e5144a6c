"""The experiment runner end to end: real corpus, real sandboxed tools, real run folders, the
official OpenAI SDK against a fake server on 127.0.0.1, and real processes killed with SIGKILL."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from parquet_agent.errors import ResumeRefusedError, SnapshotChangedError, StaleIndexError
from parquet_agent.experiment.runner import Experiment
from parquet_agent.cli.experiment import demo_config
from parquet_agent.experiment.config import ExperimentConfig
from parquet_agent.explore.runs import RunStore
from parquet_agent.models.fakes import FakeReply, FakeToolCall, openai_server
from parquet_agent.store import (
    CorpusDrift,
    ModelTurn,
    RunFinished,
    ToolCallEvent,
    read_raw,
)
from tests.harness_corpus import CANARY, make_harness_corpus

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_harness_corpus(tmp_path_factory.mktemp("exp") / "corpus")


def _answer_script(request):
    """A fake model: first turn runs one SQL query, then answers from the tool result."""
    body = request.json or {}
    messages = body.get("messages", [])
    if not any(m.get("role") == "tool" for m in messages):
        question = next(m["content"] for m in messages if m["role"] == "user")
        return FakeReply(tool_calls=(FakeToolCall(
            "sql", {"query": f"SELECT count(*) AS n FROM filings -- {question[:20]}"},
            id="call_1"),))
    return FakeReply(text="There are 6 filings.", cost=0.0005)


def _write_config(folder: Path, corpus: Path, server_url: str, *, workers: int = 1,
                  model_extra: str = "") -> Path:
    path = folder / "exp.toml"
    path.write_text(f"""
name = "fake"
corpus = "{corpus}"
questions = "{corpus / 'questions.jsonl'}"
sample = "all"
strategies = ["sql", "sql+stream"]
runs_dir = "{folder / 'runs'}"

[[models]]
name = "fake"
provider = "openai"
model = "gpt-fake"
api_key_env = "FAKE_OPENAI_KEY"
base_url = "{server_url}/v1"
{model_extra}

[judge]
provider = "rubric"

[limits]
case_workers = {workers}
""")
    return path


def test_offline_grid_judges_every_case_and_no_reference_reaches_an_agent(corpus, tmp_path):
    run = Experiment(demo_config(corpus, tmp_path / "runs"), progress=False).run()
    cases = run.cases_df()
    assert len(cases) == 6 and set(cases["status"]) == {"complete"}
    assert cases["correctness"].notna().all() and (cases["correctness"] == 100).all()
    summary = run.summary()
    assert sorted(summary["strategy"]) == ["sql", "sql+stream"]
    manifest = run.manifest
    assert manifest["question_ids"] == ["Q001", "Q002", "Q003"]
    assert {"agent:sql", "agent:sql+stream", "judge", "tools:sql"} <= set(manifest["prompt_hashes"])
    # Canary scan: the references carry CANARY; no answer-model request may contain it.
    attempts = run.attempts_df()
    answer_paths = attempts.loc[attempts["purpose"] == "answer", "request_path"].dropna()
    assert len(answer_paths) >= 12
    for path in answer_paths:
        assert CANARY.encode() not in read_raw(run.dir, path)
    judge_paths = attempts.loc[attempts["purpose"] == "judge", "request_path"].dropna()
    assert any(CANARY.encode() in read_raw(run.dir, p) for p in judge_paths)  # the judge sees it


def test_resume_after_completion_makes_no_inference_call(corpus, tmp_path):
    with openai_server(_answer_script) as server:
        config = _write_config(tmp_path, corpus, server.url)
        env = {"FAKE_OPENAI_KEY": "sk-test-key"}
        run = Experiment.from_toml(config, env=env, progress=False).run(tmp_path / "runs" / "r")
        first = len(server.model_calls())
        assert first == 1 + 6 * 2  # one health check, two turns per case
        # canary scan over the wire: no answer-model request carries a reference
        answers = [r.body for r in server.model_calls() if b"Reply with the single word" not in r.body]
        assert len(answers) == 12 and not any(CANARY.encode() in body for body in answers)
        assert set(run.cases_df()["status"]) == {"complete"}
        again = Experiment.from_toml(config, env=env, progress=False).run(
            tmp_path / "runs" / "r", resume=True)
        assert len(server.model_calls()) == first  # not even a health check
        # the tool-call turns report no cost: each case's cost_usd is unknown (NaN, as in
        # cases-index), its known part is the answer turn's
        cases = again.cases_df()
        assert cases["cost_usd"].isna().all() and (cases["cost_unknown_attempts"] == 1).all()
        assert cases["cost_usd_known"].sum() == pytest.approx(6 * 0.0005)


def test_resume_refuses_a_changed_config_naming_the_change(corpus, tmp_path):
    with openai_server(_answer_script) as server:
        config = _write_config(tmp_path, corpus, server.url)
        env = {"FAKE_OPENAI_KEY": "k"}
        Experiment.from_toml(config, env=env, progress=False).run(tmp_path / "runs" / "r")
        config.write_text(config.read_text() + "max_tool_calls = 3\n")
        with pytest.raises(ResumeRefusedError, match="max_tool_calls: 12 -> 3"):
            Experiment.from_toml(config, env=env, progress=False).run(
                tmp_path / "runs" / "r", resume=True)


def test_a_corpus_file_changed_during_the_run_stops_it(tmp_path):
    import pyarrow.parquet as pq

    corpus = make_harness_corpus(tmp_path / "corpus")
    config = demo_config(corpus, tmp_path / "runs")

    class Rewritten(Experiment):
        """Rewrites a snapshotted file (valid Parquet, one row fewer) after preflight."""

        def _health_checks(self, *args):
            super()._health_checks(*args)
            path = corpus / "2025-02.parquet"
            table = pq.read_table(path)
            pq.write_table(table.slice(1), path)

    with pytest.raises(SnapshotChangedError, match="2025-02.parquet"):
        Rewritten(config, progress=False).run(tmp_path / "runs" / "r")
    finished = [e.payload for e in RunStore(tmp_path / "runs").open("r").run_events()
                if isinstance(e.payload, RunFinished)]
    assert finished[-1].status == "error"  # recorded, not lost
    index = json.loads((tmp_path / "runs" / "r" / "cases-index.json").read_text())
    assert {row["status"] for row in index["cases"]} == {"incomplete"}  # exported as they are
    with pytest.raises(StaleIndexError, match="rebuild it"):  # no new run on the stale index
        Experiment(config, progress=False).run()


def test_a_new_corpus_file_is_excluded_and_recorded(tmp_path):
    corpus = make_harness_corpus(tmp_path / "corpus")
    (corpus / "manifest.json").unlink(missing_ok=True)
    config = ExperimentConfig.from_dict(demo_config(corpus, tmp_path / "runs").to_dict()
                                        | {"sample": {"ids": ["Q001"]}, "strategies": ["sql"]})

    class Late(Experiment):
        """Drops a new file into the corpus between preflight and the first case."""

        def _health_checks(self, *args):
            super()._health_checks(*args)
            shutil.copy(corpus / "2025-01.parquet", corpus / "2025-03.parquet")

    run = Late(config, progress=False).run()
    drift = [e.payload for e in run.run_events() if isinstance(e.payload, CorpusDrift)]
    assert drift == [CorpusDrift(excluded_new_files=["2025-03.parquet"])]
    assert [f["name"] for f in run.manifest["corpus_snapshot"]["files"]] == [
        "2025-01.parquet", "2025-02.parquet"]


def _run_cli(config: Path, run_dir: Path, *extra: str, quiet: bool = True) -> subprocess.Popen:
    env = dict(os.environ, FAKE_OPENAI_KEY="sk-kill-test")
    return subprocess.Popen(
        [sys.executable, "-m", "parquet_agent", "run", str(config), "--run-dir", str(run_dir),
         *(["--quiet"] if quiet else []), *extra], cwd=REPO, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE)


@pytest.mark.parametrize("kill_after", [1, 2, 4, 7, 10])
def test_kill_9_at_any_point_then_resume_finishes_without_paying_twice(corpus, tmp_path,
                                                                       kill_after):
    """Kill the run process after `kill_after` model requests reached the server, resume until
    done, and count: every journaled turn was requested once; only a turn in flight at the kill
    may be asked again (plus one health check per session)."""
    with openai_server(_answer_script) as server:
        config = _write_config(tmp_path, corpus, server.url)
        run_dir = tmp_path / "runs" / "killed"
        proc = _run_cli(config, run_dir)
        deadline = time.monotonic() + 240  # a bound for a stuck run only (CLI start under load)
        while len(server.model_calls()) < kill_after and proc.poll() is None:
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        sessions, kills = 1, 1
        for _ in range(3):
            resumed = _run_cli(config, run_dir, "--resume")
            out, err = resumed.communicate(timeout=120)
            sessions += 1
            if resumed.returncode == 0:
                break
        assert resumed.returncode == 0, err.decode()[-2000:]

    run = RunStore(run_dir.parent).open(run_dir)
    cases = run.cases_df()
    assert len(cases) == 6 and set(cases["status"]) == {"complete"}
    turns = [e.payload for cid in run.case_ids() for e in run.case_events(cid)
             if isinstance(e.payload, ModelTurn)]
    labels = [t.label for t in turns]
    assert len(labels) == len(set(labels)) == 12  # each turn journaled exactly once
    calls = len(server.model_calls())
    # health checks + journaled turns + at most one redone in-flight turn per kill
    assert sessions + 12 <= calls <= sessions + 12 + kills
    # every request that reached the server is in the ledger: a recorded attempt, or one the
    # kill interrupted (cost unknown, never 0)
    ledger = run.ledger()
    interrupted = ledger[ledger["outcome"] == "interrupted"]
    assert calls - sessions - 12 <= len(interrupted) <= kills
    assert interrupted["cost_usd"].isna().all() and not interrupted["cost_known"].any()
    verify = run.verify()
    assert verify.ok, str(verify)


def test_cli_run_prints_the_summary(corpus, tmp_path):
    with openai_server(_answer_script) as server:
        config = _write_config(tmp_path, corpus, server.url)
        proc = _run_cli(config, tmp_path / "runs" / "cli", quiet=False)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    text = out.decode()
    assert re.search(r"fake\s+sql\s+3\s+3", text) and "run folder:" in text
    manifest = json.loads((tmp_path / "runs" / "cli" / "manifest.json").read_text())
    assert "sk-kill-test" not in json.dumps(manifest)


def test_closed_book_strategy_offers_no_tools_and_answers_in_one_round(corpus, tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["I do not know."] * 4))  # 1 health check + 3 cases
    config = ExperimentConfig.from_dict({
        "name": "closed", "corpus": str(corpus), "questions": str(corpus / "questions.jsonl"),
        "strategies": ["none"], "runs_dir": str(tmp_path / "runs"),
        "models": [{"name": "s", "provider": "scripted", "script": str(script)}],
        "judge": {"provider": "rubric"}})
    run = Experiment(config, progress=False).run()
    cases = run.cases_df()
    assert sorted(cases["case_id"]) == [f"Q00{i}__s__none" for i in (1, 2, 3)]
    assert (cases["model_rounds"] == 1).all() and (cases["processed"] == 0).all()
    first = json.loads(read_raw(run.dir, run.attempts_df()
                                .query("purpose == 'answer'")["request_path"].iloc[0]))
    assert first["request"]["tools"] == [] and "no tools" in json.dumps(first)


def test_scope_limits_each_question_to_its_filings(corpus, tmp_path):
    from parquet_agent.corpus.questions import load_questions

    qs = load_questions(corpus / "questions.jsonl")
    scope = {q: [qs.reference(q).gold_evidence[0].file_stem] for q in qs.ids}
    scope_file = tmp_path / "scope.json"
    scope_file.write_text(json.dumps({"schema_version": 1, "scopes": scope}))
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["ok"] + [
        {"tool_calls": [{"name": "sql", "arguments": {"query": "SELECT count(*) FROM filings"}}]},
        "one filing"] * 3))
    config = ExperimentConfig.from_dict({
        "name": "scoped", "corpus": str(corpus), "questions": str(corpus / "questions.jsonl"),
        "strategies": ["sql"], "runs_dir": str(tmp_path / "runs"), "scope": str(scope_file),
        "models": [{"name": "s", "provider": "scripted", "script": str(script)}],
        "judge": {"provider": "rubric"}, "limits": {"case_workers": 1}})
    run = Experiment(config, progress=False).run()
    texts = [e.payload.model_text for cid in run.case_ids() for e in run.case_events(cid)
             if isinstance(e.payload, ToolCallEvent)]
    assert len(texts) == 3 and all('"rows":[[1]]' in t for t in texts)
    assert run.manifest["prompt_hashes"]["scope"].startswith("sha256:")
    scope_file.write_text(json.dumps({"schema_version": 1, "scopes": {"Q001": scope["Q001"]}}))
    with pytest.raises(Exception, match="no file_stems for 2 sampled question"):
        Experiment(config, progress=False).run()


@pytest.mark.parametrize("skip_index", [True, False])
def test_skip_index_switch_is_recorded_and_case_records_show_pages(tmp_path, skip_index):
    from parquet_agent.corpus.skipindex import build_skip_index

    corpus = make_harness_corpus(tmp_path / "corpus")
    build_skip_index(corpus)
    query = "SELECT count(*) FROM filings WHERE contains(parsed_md, 'Northwind Mining')"
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["ok", {"tool_calls": [{"name": "sql", "arguments": {"query": query}}]},
                                  "two filings"]))
    config = ExperimentConfig.from_dict({
        "name": "skip", "corpus": str(corpus), "questions": str(corpus / "questions.jsonl"),
        "sample": {"ids": ["Q001"]}, "strategies": ["sql"], "runs_dir": str(tmp_path / "runs"),
        "models": [{"name": "s", "provider": "scripted", "script": str(script)}],
        "judge": {"provider": "rubric"}, "limits": {"case_workers": 1, "skip_index": skip_index}})
    run = Experiment(config, progress=False).run()
    limits = run.manifest["config"]["limits"]
    assert limits.get("skip_index", True) is skip_index
    record = json.loads((run.dir / "cases" / "Q001__s__sql.json").read_text(encoding="utf-8"))
    (call,) = [c for c in record["tool_calls"] if c["name"] == "sql"]
    assert call["output"]["rows"] == [[2]]
    if skip_index:
        assert call["skip_index"]["used"] is True
        assert call["skip_index"]["pages_skipped"] > 0
    else:
        assert call["skip_index"] == {"used": False, "reason": "disabled (skip_index = false)",
                                      "pages_total": 0, "pages_read": 0, "pages_skipped": 0}
