"""The action gate as an experiment option (`[gates] action = ["rules"]`): real corpus, real
sandboxed tools, real run folders. Off by default (the config and its hash unchanged); when on,
every evaluation (PASS, WARN, FAIL) is a `gate_evaluation` event in the case journal just
before its `tool_call`, and a FAIL reaches no worker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from parquet_agent.errors import ConfigError, ResumeRefusedError
from parquet_agent.experiment.runner import Experiment
from parquet_agent.experiment.config import ExperimentConfig
from parquet_agent.tools import Tools
from parquet_agent.tools.action_gate import ActionGate, GateEvaluation, query_rules
from tests.harness_corpus import make_harness_corpus

SCAN = "SELECT file_stem FROM filings WHERE contains(parsed_md, 'Northwind')"
WHOLE = "SELECT parsed_md FROM filings WHERE month = 1 LIMIT 1"
COUNT = "SELECT count(*) AS n FROM filings"
CID = "Q001__s__sql"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_harness_corpus(tmp_path_factory.mktemp("gate") / "corpus")


def _config(corpus: Path, folder: Path, gates: dict | None) -> ExperimentConfig:
    stem = "0001234567-25-000001"
    calls = [{"name": "sql", "arguments": {"query": SCAN}},
             {"name": "sql", "arguments": {"query": WHOLE}},
             {"name": "sql", "arguments": {"query": COUNT}},
             {"name": "sql", "arguments": {"query": SCAN.replace("filings", "filing"),
                                           "file_stem": stem}}]
    script = folder / "script.json"
    script.write_text(json.dumps(["ok", {"tool_calls": calls}, "Northwind's revenue"]))
    data = {"name": "gated", "corpus": str(corpus), "questions": str(corpus / "questions.jsonl"),
            "sample": {"ids": ["Q001"]}, "strategies": ["sql"], "runs_dir": str(folder / "runs"),
            "models": [{"name": "s", "provider": "scripted", "script": str(script)}],
            "judge": {"provider": "rubric"}, "limits": {"case_workers": 1}}
    if gates is not None:
        data["gates"] = gates
    return ExperimentConfig.from_dict(data)


def _events(run, kind: str) -> list[dict]:
    return [e.data for e in run.case_events(CID) if e.event == kind]


def test_gate_on_records_every_verdict_and_refuses_the_unnarrowed_scan(corpus, tmp_path):
    config = _config(corpus, tmp_path, {"action": ["rules"]})
    run = Experiment(config, progress=False).run(tmp_path / "runs" / "r")
    assert run.manifest["config"]["gates"] == {"action": ["rules"]}
    evaluations = _events(run, "gate_evaluation")
    assert [e["verdict"] for e in evaluations] == ["FAIL", "WARN", "PASS", "PASS"]
    assert all(e["gate"] == "action" and e["evaluator"] == "rules" for e in evaluations)
    assert "pattern scan over parsed_md" in evaluations[0]["critique"]
    assert "whole parsed_md cells" in evaluations[1]["critique"]
    assert [e["narrowed"] for e in evaluations] == [False, False, False, True]
    assert [e["arguments"]["query"] for e in evaluations[:3]] == [SCAN, WHOLE, COUNT]
    # each evaluation sits just before the tool_call it judged
    kinds = [e.event for e in run.case_events(CID)
             if e.event in ("gate_evaluation", "tool_call")]
    assert kinds == ["gate_evaluation", "tool_call"] * 4
    refused, whole, counted, narrowed = _events(run, "tool_call")
    assert refused["error_kind"] == "forbidden" and not refused["ok"]
    assert refused["error_message"].startswith("action gate (rules) FAIL: a pattern scan")
    assert whole["ok"] and counted["ok"] and narrowed["ok"]
    assert refused["worker_id"] is None  # no worker ran it
    # typed in the transcript, folded once, and in the exported case record
    gated = [e.payload for e in run.case_events(CID) if isinstance(e.payload, GateEvaluation)]
    assert [g.verdict for g in gated] == ["FAIL", "WARN", "PASS", "PASS"]
    record = json.loads((run.dir / "cases" / f"{CID}.json").read_text(encoding="utf-8"))
    assert [g["verdict"] for g in record["gate_evaluations"]] == ["FAIL", "WARN", "PASS", "PASS"]
    assert record["gate_evaluations"][0]["critique"] == evaluations[0]["critique"]
    # a resume replays the saved calls: nothing is evaluated (or recorded) twice
    again = Experiment(config, progress=False).run(tmp_path / "runs" / "r", resume=True)
    assert len(_events(again, "gate_evaluation")) == 4


def test_gate_off_by_default_leaves_config_and_calls_unchanged(corpus, tmp_path):
    config = _config(corpus, tmp_path, None)
    assert "gates" not in config.to_dict()
    assert config.config_hash() == _config(corpus, tmp_path, {"action": []}).config_hash()
    run = Experiment(config, progress=False).run(tmp_path / "runs" / "r")
    assert "gates" not in run.manifest["config"]
    assert _events(run, "gate_evaluation") == []
    assert all(call["ok"] for call in _events(run, "tool_call"))  # the scan ran
    record = json.loads((run.dir / "cases" / f"{CID}.json").read_text(encoding="utf-8"))
    assert "gate_evaluations" not in record  # ungated records keep their shape
    # turning the gate on changes the experiment: a resume refuses it, naming the key
    gated = _config(corpus, tmp_path, {"action": ["rules"]})
    with pytest.raises(ResumeRefusedError, match="gates"):
        Experiment(gated, progress=False).run(tmp_path / "runs" / "r", resume=True)


@pytest.mark.parametrize("gates, message", [
    ({"action": ["judge"]}, "'judge' is not an evaluator an experiment can run"),
    ({"action": ["rules", "rules"]}, "lists an evaluator twice"),
    ({"finding": ["rules"]}, "finding"),
    ({"action": "rules"}, "a list of evaluator names"),
])
def test_gate_config_errors_name_the_key(corpus, tmp_path, gates, message):
    with pytest.raises(ConfigError, match=message):
        _config(corpus, tmp_path, gates)


def test_scoped_rows_count_as_narrowed(corpus):
    seen = []
    with Tools.open(corpus, strategy="sql") as tools:
        scoped = ActionGate(tools.scoped(["0001234567-25-000001"]), seen.append, scoped=True)
        assert scoped.call_raw("sql", {"query": SCAN}).ok
        gated = ActionGate(tools, seen.append)
        assert gated.call_raw("sql", json.dumps({"query": SCAN})).error.kind == "forbidden"
        assert gated.call_raw("describe_corpus", {}).ok  # not SQL: not evaluated
    assert [(e.verdict, e.narrowed) for e in seen] == [("PASS", True), ("FAIL", False)]
    assert query_rules("DELETE FROM filings", ["parsed_md"])[0] == "FAIL"
