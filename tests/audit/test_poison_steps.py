"""Poison steps (issue 24, item 4): an auditor model's action that used to crash the audit's
own process, and every resume after it, is a refused step with a critique the model sees.

- evidence that is not a count within its denominator (500 of 10, a negative or HUGEINT count,
  5 of 0) is refused by the finding gate, never committed, never a `math domain error`;
- a predicate of 300 nested `abs(` (DuckDB parses it, Python's recursion limit does not hold
  its tree) is dismissed with a critique instead of a RecursionError in the fingerprint;
- a reply whose arguments nest 900 deep (through the official OpenAI SDK and a fake server) is
  refused before it is journaled, so journaling does not recurse;
- a poison step an older version journaled before crashing is refused on resume, not replayed.

Real workers, real journals; the auditor model is scripted.
"""

from __future__ import annotations

import json

import pytest

from parquet_agent.audit import AuditConfig, Auditor
from parquet_agent.audit.auditor import JOURNAL
from parquet_agent.audit.events import AUDIT_EVENTS, StepModel
from parquet_agent.audit.finding import wilson
from parquet_agent.audit.prompt import state_of
from parquet_agent.errors import ScriptExhaustedError
from parquet_agent.models import ModelSpec, build_model
from parquet_agent.models.fakes import FakeReply, FakeToolCall, openai_server
from parquet_agent.models.scripted import ScriptedModel
from parquet_agent.store.journal import Journal

CONCLUDE = {"text": "stop", "tool_calls": [{"name": "conclude", "arguments": {}}]}
NESTED = "abs(" * 300 + "year" + ")" * 300 + " > 0"
EVIDENCE = {
    "over": ("SELECT 500", "SELECT 10"),
    "negative": ("SELECT -5", "SELECT 10"),
    "hugeint": ("SELECT 170141183460469231731687303715884105727::HUGEINT", "SELECT 10"),
    "huge denominator": ("SELECT 5", "SELECT 170141183460469231731687303715884105727::HUGEINT"),
    "of zero": ("SELECT 5", "SELECT 0"),
}


def _finding(title: str, **sql: str) -> dict:
    return {"category": "validity", "columns": ["year"], "title": title, "rationale": "r", **sql}


def _step(arguments: dict, tool: str = "write_finding") -> dict:
    return {"text": "poison", "tool_calls": [{"name": tool, "arguments": arguments}]}


def _audit(folder, run_dir, script, **kw):
    # "accept" ends the run at the script's conclude; its run gate fails, so it is `incomplete`
    return Auditor(AuditConfig(run_policy="accept"), model=ScriptedModel(script),
                   store=run_dir.parent / "findings.sqlite").run(folder, run_dir=run_dir, **kw)


def test_evidence_outside_its_denominator_is_a_refused_step(filings_dir, tmp_path):
    script = [_step(_finding(name, count_sql=c, denominator_sql=d))
              for name, (c, d) in EVIDENCE.items()]
    model = ScriptedModel([*script, CONCLUDE])
    report = Auditor(AuditConfig(run_policy="accept"), model=model,
                     store=tmp_path / "f.sqlite").run(filings_dir, run_dir=tmp_path / "r")
    assert report.status == "incomplete" and report.findings == ()
    assert [s.finding_action for s in report.steps[:len(EVIDENCE)]] == ["dismissed"] * len(EVIDENCE)
    reasons = {d.title: d.dismissed_reason for d in report.dismissed}
    assert set(reasons) == set(EVIDENCE)
    assert all("count within its denominator" in r for r in reasons.values()), reasons
    assert "gave 500 and the denominator query 10" in reasons["over"]
    # the model sees why in its next state
    assert "count within its denominator" in json.dumps(state_of(model.requests[1])["dismissed"])


def test_wilson_never_raises_on_counts_an_older_journal_holds():
    assert wilson(500, 10) == wilson(-5, 10) == wilson(5, 0) == (0.0, 1.0)
    low, high = wilson(3, 10)
    assert 0 < low < 0.3 < high < 1


def test_a_predicate_nested_past_pythons_recursion_limit_is_dismissed(filings_dir, tmp_path):
    report = _audit(filings_dir, tmp_path / "r", [_step(_finding("deep", predicate=NESTED)),
                                                  CONCLUDE])
    assert report.status == "incomplete" and report.findings == ()
    first = report.steps[0]
    assert first.finding_action == "dismissed"
    assert "evidence could not be computed" in report.dismissed[0].dismissed_reason


def test_arguments_nested_900_deep_are_refused_before_they_are_journaled(filings_dir, tmp_path):
    deep = '{"sql": "SELECT 1", "x": ' + "[" * 900 + "]" * 900 + "}"
    asked = []

    def answer(received):  # a model that repeats its poison whenever it is asked step 1
        asked.append(received)
        step = received.json["messages"][-1]["content"]
        if '"queries":[]' in step and '"critiques":[]' in step:
            return FakeReply(text="x", tool_calls=(FakeToolCall("run_query", deep, id="c1"),))
        return FakeReply(text="x", tool_calls=(FakeToolCall("conclude", {}, id="c2"),))

    with openai_server(answer) as server:
        model = build_model(ModelSpec(name="gpt", provider="openai", model="gpt-4o-mini",
                                      api_key_env="KEY", base_url=server.url + "/v1",
                                      timeout_s=10.0, price="list"), env={"KEY": "k"})
        report = Auditor(AuditConfig(run_policy="accept"), model=model,
                         store=tmp_path / "f.sqlite").run(filings_dir, run_dir=tmp_path / "r")
    assert report.status == "incomplete"
    first = report.steps[0]
    assert first.gate == "FAIL" and "nest more than 32 levels" in first.critique
    assert first.arguments == {}  # not journaled: encoding them recursed 900 deep


@pytest.mark.parametrize("poison", ["evidence", "nested predicate", "deep arguments"])
def test_a_resume_refuses_a_journaled_poison_step_instead_of_replaying_the_crash(
        filings_dir, tmp_path, poison):
    run_dir = tmp_path / "r"
    with pytest.raises(ScriptExhaustedError):  # stopped before step 1 (an empty script)
        _audit(filings_dir, run_dir, [])
    arguments = {"evidence": _finding("t", count_sql="SELECT 500", denominator_sql="SELECT 10"),
                 "nested predicate": _finding("t", predicate=NESTED),
                 "deep arguments": {"sql": "SELECT 1", "x": json.loads("[" * 200 + "]" * 200)}}[poison]
    tool = "run_query" if poison == "deep arguments" else "write_finding"
    journal = Journal(run_dir / JOURNAL, family=AUDIT_EVENTS)  # as an older version left it
    journal.append(StepModel(1, "poison", tool, arguments, None, {}, 0.0, []))
    journal.close()
    report = _audit(filings_dir, run_dir, [CONCLUDE], resume=True)
    assert report.status == "incomplete" and report.findings == ()
    first = report.steps[0]
    assert first.step == 1 and first.ok is False
    assert first.gate == "FAIL" or first.finding_action == "dismissed"
