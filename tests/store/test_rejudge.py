"""Re-judging a saved run (issue 16 part 1): judgments appended with provenance under
judgments/, the original journals byte for byte unchanged, one primary judge for the figures,
agreement tables and chart, the report section, and a kill -9 during re-judging that resumes
without asking a finished judgment again (one at a time) or paying for a batch twice."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from parquet_agent.cli.experiment import demo_config
from parquet_agent.experiment.runner import Experiment
from parquet_agent.explore.runs import RunStore
from parquet_agent.judge import Judge, RubricJudgeModel
from parquet_agent.models.fakes import FakeBatches, FakeReply, openai_server
from tests.fake_judge import JUDGE_KEY_ENV, judge_config
from tests.harness_corpus import make_harness_corpus

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return make_harness_corpus(tmp_path_factory.mktemp("rejudge-corpus"))


@pytest.fixture
def demo_run(corpus, tmp_path) -> Path:
    return Experiment(demo_config(corpus, tmp_path / "runs"), progress=False).run(
        tmp_path / "runs" / "demo").dir


def _hashes(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.iterdir()) if p.is_file()}


def _question(body: dict) -> str:
    text = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return json.loads(text.split("```json", 1)[1].rsplit("```", 1)[0])["question"]


def _strict_judge(body: dict) -> FakeReply:
    """A judge stricter than the rubric: only questions about Northwind are correct."""
    ok = "Northwind" in _question(body)
    return FakeReply(text=json.dumps({
        "rationale": "strict", "verdict": "correct" if ok else "incorrect",
        "correctness": 90 if ok else 10, "citation_support": 50}), cost=0.001)


def test_rejudging_appends_judgments_and_changes_nothing_recorded(demo_run, tmp_path):
    journals = _hashes(demo_run / "journal")
    run_journal = (demo_run / "journal" / "_run.jsonl").read_bytes()
    with RunStore(demo_run.parent).open(demo_run) as run:
        before = run.summary()
        own = run.fold().cases
    assert before["correct_rate"].notna().all()  # the demo's own judge gives verdicts
    with openai_server(lambda r: _strict_judge(r.json)) as server:
        from tests.models.conftest import make_model

        model = make_model("openai", server, name="strict")
        with RunStore(demo_run.parent).open(demo_run, writable=True) as run:
            result = run.rejudge(Judge(model))
    cases = [c.case_id for c in own if c.answer is not None]
    assert sorted(j.split("#")[0] for j in result.judged) == sorted(cases)
    after = _hashes(demo_run / "journal")
    # the case journals byte for byte; the run journal only gains the judging's commitment
    assert {k: v for k, v in after.items() if k != "_run.jsonl"} == {
        k: v for k, v in journals.items() if k != "_run.jsonl"}
    grown = (demo_run / "journal" / "_run.jsonl").read_bytes()
    assert grown.startswith(run_journal) and grown[len(run_journal):].count(b"\n") == 1
    assert f'"case_id":"judgments/{result.judging}"'.encode() in grown[len(run_journal):]
    with RunStore(demo_run.parent).open(demo_run) as run:
        assert run.summary().equals(before)  # the config's judge stays primary
        rejudged = run.summary(judge=result.judging)
        views = {c.case_id: c for c in run.fold().cases}
        tables = run.judge_agreement()
        info = run.judgings()[result.judging]
    assert info["judge"]["model"] == "gpt-4o-mini" and info["judge"]["prompt_hash"]
    assert not rejudged["correct_rate"].equals(before["correct_rate"])
    assert all(len(views[c].judgments) == 2 for c in cases)
    pair = tables["pairs"].iloc[0]
    assert (pair["a"], pair["b"], pair["n"]) == ("run", result.judging, len(cases))
    assert set(tables["checks"]["check"]) == {"numeric", "citations"}
    # judged again: nothing new is asked
    calls = len(server.model_calls())
    with openai_server(lambda r: _strict_judge(r.json)) as again:
        with RunStore(demo_run.parent).open(demo_run, writable=True) as run:
            second = run.rejudge(Judge(make_model("openai", again, name="strict")))
    assert second.judging == result.judging and not second.judged
    assert second.already == len(cases) and not again.model_calls() and calls == len(cases)


def test_exports_and_charts_for_any_judge_and_a_primary(demo_run):
    from parquet_agent import charts
    from parquet_agent.explore.sections import report_extras
    from parquet_agent.report.exporter import export_run

    with RunStore(demo_run.parent).open(demo_run, writable=True) as run:
        result = run.rejudge(Judge(RubricJudgeModel(name="rubric2")), repeat=3)
        run.set_primary_judge(result.judging)
    export_run(demo_run, extras=report_extras(demo_run))
    summary = json.loads((demo_run / "summary.json").read_text())
    record = json.loads(next((demo_run / "cases").glob("*.json")).read_text())
    assert record["judgment"]["judging"] == result.judging
    assert len(record["judgment"]["judgments"]) == 4  # the run's own + 3 repeats
    assert {"correct_rate", "incorrect_rate", "abstained_rate"} <= set(
        summary["by_model_strategy"][0])
    report = (demo_run / "report.html").read_text()
    assert "Judge agreement" in report and "correct / incorrect / abstained" in report
    with RunStore(demo_run.parent).open(demo_run) as run:
        tables = run.judge_agreement()
    repeats = tables["repeats"].iloc[0]
    assert repeats["repeats"] == 3 and repeats["flip_rate"] == 0.0  # the rubric never flips
    fig = charts.judge_agreement(demo_run)
    assert [t.name for t in fig.data] == ["kappa", "flip rate"]
    assert [t.name for t in charts.verdicts(demo_run).data] == ["correct", "incorrect",
                                                                "abstained"]


def _judge_cli(run_dir: Path, config: Path, *extra: str) -> subprocess.Popen:
    env = dict(os.environ, **JUDGE_KEY_ENV)
    return subprocess.Popen([sys.executable, "-m", "parquet_agent", "judge", str(run_dir),
                             "--judge", str(config), "--no-export", *extra], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.parametrize("kill_after", [1, 3])
def test_kill_9_during_rejudging_resumes_without_asking_again(demo_run, tmp_path, kill_after):
    def slow_judge(request):
        time.sleep(0.2)
        return _strict_judge(request.json)

    with openai_server(slow_judge) as server:
        config = judge_config(tmp_path, server.url, name="strict")
        proc = _judge_cli(demo_run, config)
        deadline = time.monotonic() + 240  # a bound for a stuck run only (CLI start under load)
        while len(server.model_calls()) < kill_after and proc.poll() is None:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        resumed = _judge_cli(demo_run, config)
        out, err = resumed.communicate(timeout=120)
        assert resumed.returncode == 0, err.decode()[-2000:]
        # each invocation first asks its format probe (judge.negotiate): not a case's request
        asked = [_question(r.json) + r.json["messages"][1]["content"][-300:]
                 for r in server.model_calls() if b"Acme Corp" not in r.body]
    with RunStore(demo_run.parent).open(demo_run) as run:
        views = run.fold().cases
        appended = [j for c in views for j in c.judgments if j.judging]
    judged = [c for c in views if c.answer is not None]
    assert len(appended) == len(judged)  # every case judged once in the judging journal
    repeated = len(asked) - len(set(asked))
    assert repeated <= 1  # only the request in flight at the kill may be asked again


def test_kill_9_during_batch_rejudging_picks_up_the_same_batch(demo_run, tmp_path):
    batches = FakeBatches(lambda cid, body: _strict_judge(body), polls=10_000)
    with openai_server([], batches=batches) as server:
        config = judge_config(tmp_path, server.url, name="strict")
        proc = _judge_cli(demo_run, config, "--batch")
        # the first status poll comes after the ledger line is durable (models/batch/runner.py):
        # killed then, the batch is certainly in the ledger (a fixed 0.3 s sleep was a guess)
        deadline = time.monotonic() + 240
        while not any(b.polls_left < 10_000 for b in batches.batches.values()) \
                and proc.poll() is None:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        next(iter(batches.batches.values())).polls_left = 0  # the provider finishes it
        resumed = _judge_cli(demo_run, config, "--batch")
        out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err.decode()[-2000:]
    assert batches.created == 1  # never paid twice
    with RunStore(demo_run.parent).open(demo_run) as run:
        appended = [j for c in run.fold().cases for j in c.judgments if j.judging]
    assert appended and all(j.provenance.get("batch") for j in appended)
    from parquet_agent.store.journal import read_journal
    from parquet_agent.transcript import JudgeAttempt

    journal = next((demo_run / "judgments").glob("*.jsonl"))
    attempts = [e.payload.attempt for e in read_journal(journal).events
                if isinstance(e.payload, JudgeAttempt)]
    assert len(attempts) == len(appended)
    assert all("batch price" in a.cost.note and a.request_path.endswith("input.jsonl")
               for a in attempts)
