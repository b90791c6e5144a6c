"""A grid that produced nothing usable looks failed (issue 25 items 1 and 8): the real CLI over
the harness corpus, the official OpenAI SDK against fake servers.

Before: a grid with 0 of 4 cases complete (every reply blocked) exited 0 with no "why" block,
and one whose judge scored none of the answers said only "unscored" and exited 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from parquet_agent.models.fakes import FakeReply, http_error, openai_server
from tests.harness_corpus import make_harness_corpus

KEY = {"FAKE_KEY": "sk-fake-grid-exit"}
GOOD = {"rationale": "ok", "verdict": "correct", "correctness": 100, "citation_support": 0}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_harness_corpus(tmp_path_factory.mktemp("grid-exit") / "corpus")


def _run(folder: Path, corpus: Path, url: str, judge: str) -> subprocess.CompletedProcess:
    path = folder / "exp.toml"
    path.write_text(f"""
name = "grid"
corpus = "{corpus}"
questions = "{corpus / 'questions.jsonl'}"
sample = {{ n = 2, seed = 1 }}
strategies = ["sql"]
runs_dir = "{folder / 'runs'}"

[[models]]
name = "m"
provider = "openai"
model = "gpt-4o-mini"
base_url = "{url}/v1"
api_key_env = "FAKE_KEY"
price = "list"
max_attempts = 2

[judge]
{judge}
""")
    return subprocess.run([sys.executable, "-m", "parquet_agent", "run", str(path), "--quiet"],
                          capture_output=True, text=True, env={**os.environ, **KEY},
                          timeout=300)


def test_a_grid_with_no_case_complete_exits_1_and_says_why(corpus, tmp_path):
    def server(req):
        if b"Reply with the single word" in req.body:
            return FakeReply(text="OK")
        return FakeReply(text=None, finish_reason="content_filter")

    with openai_server(server) as fake:
        proc = _run(tmp_path, corpus, fake.url, 'provider = "rubric"')
    assert proc.returncode == 1, proc.stderr
    assert "2 incomplete of 2 cases: none complete. Why:" in proc.stderr
    assert "2 x incomplete: the provider blocked the reply (content_filter)" in proc.stderr


def test_a_grid_whose_judge_scored_nothing_exits_1_and_says_why(corpus, tmp_path):
    def server(req):
        body = req.json or {}
        if b"Reply with the single word" in req.body:
            return FakeReply(text="OK")
        if "response_format" not in body:  # the answer model
            return FakeReply(text="Revenue was $812 million.")
        if b"Acme Corp" in req.body:  # the judge's format probe
            return FakeReply(text=json.dumps(GOOD))
        return http_error(400)  # every real judgment is refused

    judge = ('provider = "openai"\nmodel = "gpt-4o-mini"\nbase_url = "{url}/v1"\n'
             'api_key_env = "FAKE_KEY"\nprice = "list"')
    with openai_server(server) as fake:
        proc = _run(tmp_path, corpus, fake.url, judge.format(url=fake.url))
    assert proc.returncode == 1, proc.stderr
    assert "the judge scored none of the 2 answers. Why:" in proc.stderr
    assert "2 x unscored: judge call failed" in proc.stderr and "HTTP 400" not in proc.stdout
