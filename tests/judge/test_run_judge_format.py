"""A run negotiates its judge's format before the first case (issue 25 item 1), end to end: a
real grid over the harness corpus whose judge is a fake llama-cpp-python server.

Before: the judge asked only `response_format: json_schema`, llama.cpp answered every request
500, and the grid ended with every case unscored and exit 0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from parquet_agent.experiment.runner import Experiment
from parquet_agent.explore.runs import RunStore
from parquet_agent.models.fakes.llama_cpp import LlamaCpp, llama_cpp_server
from parquet_agent.transcript import JudgeFormat, Judgment
from tests.harness_corpus import make_harness_corpus

KEY = {"LOCAL_JUDGE_KEY": "local-not-a-secret"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_harness_corpus(tmp_path_factory.mktemp("judge-format") / "corpus")


def _config(folder: Path, corpus: Path, url: str, judge_extra: str = "") -> Path:
    path = folder / "exp.toml"
    path.write_text(f"""
name = "local-judge"
corpus = "{corpus}"
questions = "{corpus / 'questions.jsonl'}"
sample = {{ n = 2, seed = 1 }}
strategies = ["sql"]
runs_dir = "{folder / 'runs'}"

[[models]]
name = "floor"
provider = "baseline"

[judge]
name = "local"
provider = "openai"
model = "gpt-4o-mini"
base_url = "{url}/v1"
api_key_env = "LOCAL_JUDGE_KEY"
tool_call_content = ""
max_tokens_field = "max_tokens"
price = "free"
max_attempts = 2
{judge_extra}
""")
    return path


def test_a_llama_cpp_judge_judges_every_case_as_json_object(corpus, tmp_path):
    with llama_cpp_server(LlamaCpp()) as server:
        run = Experiment.from_toml(_config(tmp_path, corpus, server.url), env=KEY,
                                   progress=False).run()
        formats = [r.json["response_format"]["type"] for r in server.model_calls()
                   if (r.json or {}).get("response_format")]
    cases = run.cases_df()
    assert len(cases) == 2 and cases["correctness"].notna().all()
    chosen = [e.payload for e in run.run_events() if isinstance(e.payload, JudgeFormat)]
    assert [(c.judge, c.mode) for c in chosen] == [("local", "json_object")]
    assert chosen[0].tried[0]["mode"] == "json_schema" and not chosen[0].tried[0]["ok"]
    # two refused probes, then json_object: the probe and one judgment per case
    assert formats == ["json_schema", "json_schema", "json_object", "json_object", "json_object"]
    judgments = [e.payload for cid in cases["case_id"] for e in run.case_events(cid)
                 if isinstance(e.payload, Judgment)]
    assert {j.provenance["structured_output"] for j in judgments} == {"json_object"}


def test_a_run_whose_judge_cannot_judge_stops_before_the_first_case(corpus, tmp_path):
    with llama_cpp_server(LlamaCpp(text="ok")) as server:
        config = _config(tmp_path, corpus, server.url, "structured_output = false")
        proc = subprocess.run([sys.executable, "-m", "parquet_agent", "run", str(config),
                               "--quiet"], capture_output=True, text=True,
                              env={**os.environ, **KEY}, timeout=300)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "judge 'local'" in proc.stderr and "cannot judge" in proc.stderr
    assert "No case was run" in proc.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    run = RunStore(run_dir.parent).open(run_dir)
    assert run.case_ids() == [] or all(not run.case_events(c) for c in run.case_ids())
    chosen = [e.payload for e in run.run_events() if isinstance(e.payload, JudgeFormat)]
    assert len(chosen) == 1 and chosen[0].mode is None
