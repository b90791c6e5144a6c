"""Re-judging asks again what it could not obtain (issue 25 item 3): the real CLI
(`parquet-agent judge RUN --judge CONFIG`) over a real offline run, the official OpenAI SDK
against a fake judge server.

Before: with the judge's port closed, "2 judged now", exit 0, every judgment recorded unscored;
with the server up, the same command said "0 judged now, 2 before" and never asked again. And
the agreement tables showed n = 0 without saying why."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from parquet_agent.cli.experiment import demo_config
from parquet_agent.experiment.config import ExperimentConfig
from parquet_agent.experiment.runner import Experiment
from parquet_agent.explore.runs import RunStore
from parquet_agent.models.fakes import FakeReply, http_error, openai_server
from tests.fake_judge import JUDGE_KEY_ENV, judge_config
from tests.harness_corpus import make_harness_corpus

GOOD = {"rationale": "Matches.", "verdict": "correct", "correctness": 100,
        "citation_support": 50}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rejudge-pending")
    corpus = make_harness_corpus(folder / "corpus")
    config = ExperimentConfig.from_dict(demo_config(corpus, folder / "runs").to_dict()
                                        | {"sample": {"ids": ["Q001"]}})
    return Experiment(config, progress=False).run().dir


def _judge(run, config) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "parquet_agent", "judge", str(run), "--judge",
                           str(config), "--no-export"], capture_output=True, text=True,
                          env={**os.environ, **JUDGE_KEY_ENV}, timeout=300)


def _copy(run_dir, tmp_path):
    import shutil

    target = tmp_path / "runs" / run_dir.name
    shutil.copytree(run_dir, target)
    return target


def test_a_judge_that_could_not_be_asked_is_asked_again_next_time(run_dir, tmp_path):
    run = _copy(run_dir, tmp_path)
    refusing = True

    def server(req):
        if b"Acme Corp" in req.body:  # the format probe
            return FakeReply(text=json.dumps(GOOD))
        return http_error(400) if refusing else FakeReply(text=json.dumps(GOOD))

    with openai_server(server) as fake:
        config = judge_config(tmp_path, fake.url, name="strict")
        first = _judge(run, config)
        refusing = False
        second = _judge(run, config)
        third = _judge(run, config)
    assert first.returncode == 1, first.stdout + first.stderr
    assert "0 scored, 0 unscored now (0 judged before); 2 pending" in first.stdout
    assert "2 x pending: judge call failed" in first.stdout
    assert second.returncode == 0, second.stdout + second.stderr
    assert "2 scored, 0 unscored now (0 judged before)" in second.stdout
    assert "0 scored, 0 unscored now (2 judged before)" in third.stdout
    with RunStore(run.parent).open(run) as opened:
        pairs = opened.judge_agreement()["pairs"]
    assert pairs["n"].tolist() == [2]


def test_an_unreachable_judge_judges_nothing_and_says_so(run_dir, tmp_path):
    run = _copy(run_dir, tmp_path)
    with openai_server([]) as fake:
        config = judge_config(tmp_path, fake.url, name="gone")
    proc = _judge(run, config)  # the server is gone: connection refused
    assert proc.returncode == 1
    assert "the judge did not answer" in proc.stderr and "nothing was judged" in proc.stderr
    assert not list((run / "judgments").glob("*.jsonl")) or all(
        b'"judgment"' not in p.read_bytes() for p in (run / "judgments").glob("*.jsonl"))


def test_the_agreement_tables_say_why_n_is_zero(run_dir, tmp_path):
    run = _copy(run_dir, tmp_path)

    def server(req):
        if b"Acme Corp" in req.body:
            return FakeReply(text=json.dumps(GOOD))
        return FakeReply(text="I cannot grade this.")  # never a judgment: unscored

    with openai_server(server) as fake:
        proc = _judge(run, judge_config(tmp_path, fake.url, name="mute"))
    assert proc.returncode == 1 and "0 scored, 2 unscored now" in proc.stdout
    assert "2 x unscored: malformed judgment" in proc.stdout
    with RunStore(run.parent).open(run) as opened:
        tables = opened.judge_agreement()
    (pair,) = tables["pairs"].to_dict("records")
    assert pair["n"] == 0
    assert "gave 0 verdict(s) of 2 judgment(s)" in pair["why"]
    assert "malformed judgment" in pair["why"]
    mute = tables["checks"][tables["checks"]["judge"] != "run"]
    assert (mute["n"] == 0).all() and mute["why"].str.contains("gave 0 verdict").all()
