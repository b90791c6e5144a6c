"""The optional action gate for question-answering agents: an un-narrowed text scan is refused
before it reaches a worker (and recorded as the case's tool error); narrowed ones run."""

from __future__ import annotations

from parquet_agent.agent import Agent
from parquet_agent.audit.qa_gate import GatedTools
from parquet_agent.corpus.questions import Question
from parquet_agent.models.scripted import ScriptedModel
from parquet_agent.models.sink import DirectorySink
from parquet_agent.models.protocol import ToolCall
from parquet_agent.tools import Tools


def test_gated_tools_refuse_unnarrowed_scans(filings_dir, tmp_path):
    scan = "SELECT file_stem FROM filings WHERE contains(parsed_md, 'Northwind')"
    narrowed = scan + " AND month = 2"
    model = ScriptedModel([ToolCall("c1", "sql", {"query": scan}),
                           ToolCall("c2", "sql", {"query": narrowed}),
                           ToolCall("c3", "sql", {"query": "SELECT count(*) AS n FROM filings"}),
                           "done"])
    with Tools.open(filings_dir, strategy="sql") as tools:
        gated = GatedTools(tools)
        outcome = Agent(model, gated).run(Question("Q1", "Which filings name Northwind?"),
                                          case_id="Q1__m__sql", sink=DirectorySink(tmp_path))
        plain = tools.call("sql", query=scan)
    assert [e.verdict for e in gated.evaluations] == ["FAIL", "PASS", "PASS"]
    refused, ran, counted = (m for m in model.requests[-1].messages if m.role == "tool")
    assert "action gate (rules) FAIL" in refused.content and "forbidden" in refused.content
    assert '"rows"' in ran.content and '"rows"' in counted.content
    assert plain.ok  # without the gate the same scan runs (off by default: unchanged)
    assert outcome is not None
