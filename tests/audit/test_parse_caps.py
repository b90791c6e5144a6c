"""The auditor parses no unbounded SQL in its own process (issue 24, item 7): a run_query or a
finding's predicate over 20,000 characters is refused at the action gate before DuckDB's parser
or json.loads sees it (a 6.9 MB IN list cost 2 GiB and 27-50 s there), and the fingerprint
refuses to parse what is over the parse limit."""

from __future__ import annotations

import pytest

from parquet_agent.audit import AuditConfig, Auditor
from parquet_agent.audit.finding import fingerprint
from parquet_agent.models.scripted import ScriptedModel
from parquet_agent.tools.gate import MAX_PARSE_CHARS, MAX_QUERY_CHARS


def _in_list(chars: int) -> str:
    return "year IN (" + ",".join(f"{i:07d}" for i in range(chars // 8 + 1)) + ")"


def test_an_oversize_query_or_predicate_is_refused_before_it_is_parsed(filings_dir, tmp_path):
    big = _in_list(MAX_QUERY_CHARS + 100)
    script = [
        {"text": "a long query", "tool_calls": [{"name": "run_query", "arguments": {
            "sql": f"SELECT count(*) FROM data WHERE {big}"}}]},
        {"text": "a long predicate", "tool_calls": [{"name": "write_finding", "arguments": {
            "category": "validity", "columns": ["year"], "title": "t", "rationale": "r",
            "predicate": big}}]},
        {"text": "stop", "tool_calls": [{"name": "conclude", "arguments": {}}]},
    ]
    report = Auditor(AuditConfig(run_policy="accept"), model=ScriptedModel(script)).run(
        filings_dir, run_dir=tmp_path / "r")
    query, finding, _ = report.steps
    assert query.gate == "FAIL" and f"{MAX_QUERY_CHARS:,}" in query.critique
    assert finding.gate == "FAIL" and "predicate:" in finding.critique
    assert f"{MAX_QUERY_CHARS:,}" in finding.critique and report.findings == ()


def test_the_fingerprint_does_not_parse_past_the_limit():
    with pytest.raises(ValueError, match="not fingerprinted"):
        fingerprint("SELECT count(*) FROM data WHERE " + _in_list(MAX_PARSE_CHARS))
    assert fingerprint("SELECT count(*) FROM data WHERE " + _in_list(MAX_QUERY_CHARS)).startswith("fp:")
