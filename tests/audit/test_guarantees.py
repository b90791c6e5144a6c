"""The audit path keeps the experiments' guarantees: an HTTP auditor model through the official
SDK and our recording transport (raw bytes stored, the key never written), token and cost
accounting, and the sandbox refusing what a hostile model asks for."""

from __future__ import annotations

import json

from parquet_agent.audit.prompt import unquoted
from parquet_agent.audit import AuditConfig, Auditor
from parquet_agent.audit.baseline import BaselineAuditor
from parquet_agent.models import ModelSpec, build_model
from parquet_agent.models.fakes import FakeReply, FakeToolCall, openai_server
from parquet_agent.models.scripted import ScriptedModel
from parquet_agent.store.blobs import RawStore

CANARY = "sk-canary-audit-0b1c2d3e4f5a6b7c8d9e"


def _baseline_over_http(received):
    """The fake OpenAI server answers each step as the baseline auditor would."""
    state = unquoted(received.json["messages"][-1]["content"])
    reasoning, tool, args = BaselineAuditor().decide(state)
    return FakeReply(text=reasoning, tool_calls=(FakeToolCall(tool, args, id="c1"),))


def test_an_http_auditor_is_recorded_and_its_key_never_stored(filings_dir, tmp_path):
    with openai_server(_baseline_over_http) as server:
        model = build_model(ModelSpec(name="gpt", provider="openai", model="gpt-4o-mini",
                                      api_key_env="KEY", base_url=server.url + "/v1",
                                      timeout_s=10.0, price="list"), env={"KEY": CANARY})
        report = Auditor(model=model).run(filings_dir, run_dir=tmp_path / "run")
        calls = server.model_calls()
        assert calls and all(r.headers.get("authorization") == f"Bearer {CANARY}"
                                       for r in calls)
    assert report.status == "complete" and report.tokens == 19 * len(report.steps)
    assert report.cost_usd is not None and report.cost_usd > 0  # priced from the price table
    raw = RawStore(tmp_path / "run", writable=False)
    for step in report.steps:
        request, response = (raw.read(p) for p in step.raw or ())
        assert b"State:" in request and b"tool_calls" in response
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            assert CANARY.encode() not in path.read_bytes(), path


def test_hostile_actions_stay_in_the_sandbox(filings_dir, tmp_path):
    script = [
        {"text": "read a host file", "tool_calls": [{"name": "run_query", "arguments": {
            "sql": "SELECT count(*) FROM read_text('/etc/passwd')"}}]},
        {"text": "sneak a write", "tool_calls": [{"name": "run_query", "arguments": {
            "sql": "WITH x AS (DELETE FROM data RETURNING *) SELECT 1"}}]},
        {"text": "a finding that reads a file", "tool_calls": [{"name": "write_finding", "arguments": {
            "category": "validity", "columns": ["md5"], "title": "t", "rationale": "r",
            "predicate": "md5 IN (SELECT content FROM read_text('/etc/hostname'))"}}]},
        {"text": "two calls at once", "tool_calls": [
            {"name": "get_stats", "arguments": {"column": "md5"}},
            {"name": "get_stats", "arguments": {"column": "year"}}]},
        {"text": "stop", "tool_calls": [{"name": "conclude", "arguments": {}}]},
    ]
    config = AuditConfig(run_policy="accept")
    report = Auditor(config, model=ScriptedModel(script)).run(filings_dir, run_dir=tmp_path / "r")
    first, second, third, fourth, _ = report.steps
    # the allow-list gate (issue 14) refuses read_text by name before the sandbox is reached
    assert first.gate == "FAIL" and "read_text()" in first.critique
    assert second.gate == "FAIL" and "SQL gate" in second.critique
    assert third.finding_action == "dismissed" and report.findings == ()
    assert "evidence could not be computed" in report.dismissed[0].dismissed_reason
    assert fourth.gate == "FAIL" and "exactly one tool call" in fourth.critique
    assert report.status == "incomplete" and report.coverage.run_gate == "FAIL"
    assert "accept" in report.reason and "run gate failed" in report.reason


def test_a_spent_budget_ends_the_run_as_incomplete(filings_dir, tmp_path):
    model = ScriptedModel(lambda request: {"text": "look", "tool_calls": [
        {"name": "get_stats", "arguments": {"column": "month"}}]})
    report = Auditor(AuditConfig(max_steps=3), model=model).run(filings_dir, run_dir=tmp_path / "r")
    assert report.status == "incomplete" and "budget ran out (steps)" in report.reason
    assert len(model.requests) == 3 and report.coverage.run_gate == "FAIL"
    assert [s.gate for s in report.steps[:3]] == ["PASS", "FAIL", "FAIL"]  # repeats refused
