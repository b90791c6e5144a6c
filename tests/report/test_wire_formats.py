"""Case records from the Anthropic and Gemini wire formats (real SDKs against the local fakes):
the question as the model got it, the exact final request, tool results matched to the request
that carried them (by id for Anthropic, by position for Gemini's id-less functionResponse)."""

from __future__ import annotations

import json

import pytest

from parquet_agent.experiment.config import ExperimentConfig
from parquet_agent.experiment.runner import Experiment
from parquet_agent.explore.runs import RunStore
from parquet_agent.models.fakes import (
    FakeReply,
    FakeToolCall,
    anthropic_server,
    gemini_server,
)
from parquet_agent.report.exporter import export_run
from parquet_agent.store import ToolCallEvent, read_raw

SERVERS = {"anthropic": (anthropic_server, "claude-haiku-4-5"),
           "google": (gemini_server, "gemini-2.5-pro")}


def _script(request):
    body = request.body
    if b"single word" in body:
        return FakeReply(text="OK")
    if b"tool_result" in body or b"functionResponse" in body:
        return FakeReply(text="Total revenue was $813 million [source: x, chars 1-2].")
    return FakeReply(tool_calls=(FakeToolCall("sql", {"query": "SELECT 1 AS one"}, id="tu_1"),))


@pytest.mark.parametrize("provider", sorted(SERVERS))
def test_wire_format_case_record(provider, corpus, tmp_path):
    factory, model = SERVERS[provider]
    with factory(_script) as server:
        config = ExperimentConfig.from_dict({
            "name": provider, "corpus": str(corpus), "questions": str(corpus / "questions.jsonl"),
            "sample": {"ids": ["Q001"]}, "strategies": ["sql"], "runs_dir": str(tmp_path),
            "models": [{"name": "m", "provider": provider, "model": model,
                        "api_key_env": "FAKE_KEY", "base_url": server.url}],
            "judge": {"provider": "rubric"}})
        run = Experiment(config, env={"FAKE_KEY": "k-test"}, progress=False).run(tmp_path / "r")
    case_id = "Q001__m__sql"
    record = json.loads((run.dir / "cases" / f"{case_id}.json").read_text(encoding="utf-8"))
    assert record["status"] == "complete", record["status_reason"]
    assert record["question"] == "What was Northwind Mining Co's total revenue for fiscal 2024?"
    final = record["final_request"]
    assert final["kind"] == "http_request"
    assert final["text"].encode() == read_raw(run.dir, final["path"])
    assert record["model"]["actual_model"] != "unverified"
    assert record["tool_outputs_not_in_latest_request"] == []

    # a tool output produced after the last request was written (as a crash would leave it)
    with RunStore(run.dir.parent).open(run.dir, writable=True) as writable:
        writable.journal(case_id).append(ToolCallEvent(
            turn=3, call_id="late-9", name="sql", arguments={"query": "SELECT 2"}, ok=True,
            model_text="{}", output={}))
    export_run(run.dir)
    record = json.loads((run.dir / "cases" / f"{case_id}.json").read_text(encoding="utf-8"))
    assert record["tool_outputs_not_in_latest_request"] == ["late-9"]
