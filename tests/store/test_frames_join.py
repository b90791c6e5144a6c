"""DataFrames a researcher can join (issue 19, part 5 and finding 5): every frame of a run
carries run_id, case_id, question_id, model and strategy; cases_df has the question, the
reference, the answer and the rationale; `export RUN --tables` writes them all (one fold) as
Parquet and CSV; an unknown cost is NaN in `summary()`, never 0.0.

Real runs: the offline demo grid and the official OpenAI SDK against the fake server on
127.0.0.1 (whose model id has no price), over the harness corpus; the CLI as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from parquet_agent.analysis.frames import KEYS
from parquet_agent.cli.experiment import demo_config
from parquet_agent.experiment.runner import Experiment
from parquet_agent.models.fakes import openai_server
from parquet_agent.store.readable import summary_table
from tests.harness_corpus import make_harness_corpus
from tests.test_experiment import _answer_script, _write_config

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_harness_corpus(tmp_path_factory.mktemp("join") / "corpus")


@pytest.fixture(scope="module")
def demo_run(corpus, tmp_path_factory):
    runs = tmp_path_factory.mktemp("join-runs")
    return Experiment(demo_config(corpus, runs), progress=False).run(runs / "demo")


def test_every_frame_carries_the_keys_and_they_join(demo_run):
    cases, attempts = demo_run.cases_df(), demo_run.attempts_df()
    tools, ledger = demo_run.tool_calls_df(), demo_run.ledger()
    for frame in (cases, attempts, tools, ledger):
        assert list(frame.columns[:len(KEYS)]) == KEYS
    assert cases["case_id"].is_unique and len(cases) == 6
    assert (cases["run_id"] == demo_run.run_id).all()

    # the contract's names and the texts a researcher reads next to the scores
    done = cases[cases["status"] == "complete"]
    assert len(done) == 6
    for col in ("question", "reference_answer", "answer", "rationale"):
        assert done[col].map(lambda v: isinstance(v, str) and v != "").all(), col
    assert {"requested_by_model", "processed", "api_attempt_count"} <= set(cases.columns)

    # attempts and tool calls join their case on all five keys, none left over
    in_cases = attempts[attempts["case_id"].notna()]
    joined = in_cases.merge(cases[[*KEYS, "status"]], on=KEYS, how="left",
                            validate="many_to_one", indicator=True)
    assert (joined["_merge"] == "both").all() and len(joined) == len(in_cases)
    health = attempts[attempts["case_id"].isna()]
    assert len(health) == 2 and (health["purpose"] == "health").all()  # model + judge
    joined = tools.merge(cases[KEYS], on=KEYS, how="left", indicator=True)
    assert len(tools) > 0 and (joined["_merge"] == "both").all()
    per_case = tools.groupby("case_id").size()
    assert (per_case.reindex(cases["case_id"], fill_value=0).values
            == cases.set_index("case_id")["processed"].values).all()

    # summary joins on model x strategy
    summary = demo_run.summary()
    counts = cases.groupby(["model", "strategy"]).size().rename("n").reset_index()
    both = summary.merge(counts, on=["model", "strategy"], validate="one_to_one")
    assert (both["cases"] == both["n"]).all() and len(both) == 2


def test_export_tables_writes_every_frame_from_one_fold(demo_run):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-m", "parquet_agent", "export", str(demo_run.dir),
                           "--tables"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    folder = demo_run.dir / "tables"
    assert f"tables:     {folder}" in proc.stdout
    meta = json.loads((folder / "tables.json").read_text())
    assert meta["schema_version"] == 1 and meta["keys"] == KEYS
    frames = {"cases": demo_run.cases_df(), "attempts": demo_run.attempts_df(),
              "tool_calls": demo_run.tool_calls_df(), "ledger": demo_run.ledger(),
              "summary": demo_run.summary()}
    for name, frame in frames.items():
        parquet = pd.read_parquet(folder / f"{name}.parquet")
        csv = pd.read_csv(folder / f"{name}.csv")
        assert meta["tables"][name]["rows"] == len(frame) == len(parquet) == len(csv), name
        assert list(parquet.columns) == list(frame.columns) == list(csv.columns), name
    cases = pd.read_parquet(folder / "cases.parquet")
    assert cases["question"].tolist() == frames["cases"]["question"].tolist()
    calls = pd.read_parquet(folder / "tool_calls.parquet")
    assert json.loads(calls["arguments"].iloc[0]) == frames["tool_calls"]["arguments"].iloc[0]
    # joinable from the files too
    attempts = pd.read_parquet(folder / "attempts.parquet")
    joined = attempts.dropna(subset=["case_id"]).merge(cases[KEYS], on=KEYS, indicator=True)
    assert len(joined) == int(attempts["case_id"].notna().sum())


def test_an_unknown_cost_is_nan_in_summary_never_zero(corpus, tmp_path):
    with openai_server(_answer_script) as server:  # gpt-fake: not in the price table
        config = _write_config(tmp_path, corpus, server.url)
        run = Experiment.from_toml(config, env={"FAKE_OPENAI_KEY": "sk-x"},
                                   progress=False).run(tmp_path / "runs" / "r")
    summary = run.summary()
    assert summary["cost_usd"].isna().all()  # was 0.0 beside cost_unknown_attempts
    assert (summary["cases_with_unknown_cost"] == summary["cases"]).all()
    assert summary_table(summary)["cost USD"].tolist() == ["unknown"] * 2
    assert run.cases_df()["cost_usd"].isna().all()

    free = tmp_path / "free"
    free.mkdir()
    with openai_server(_answer_script) as server:  # the same model declared free
        config = _write_config(free, corpus, server.url, model_extra='price = "free"')
        run = Experiment.from_toml(config, env={"FAKE_OPENAI_KEY": "sk-x"},
                                   progress=False).run(free / "runs" / "r")
    summary = run.summary()
    assert (summary["cost_usd"] == 0.0).all() and summary["cost_usd"].notna().all()
    assert summary_table(summary)["cost USD"].tolist() == ["$0.0000"] * 2
