"""Key collisions: a finding whose key another finding holds with another fingerprint is reported,
never merged into it. A real 64-bit key collision cannot be produced on demand, so the test
makes one at the findings store, the seam the history comes through: after a first audit, the
stored row of its finding is rewritten to another defect (other predicate, other fingerprint)
under the same key, which is exactly what the next run would see after a hash collision."""

from __future__ import annotations

import json
import sqlite3

from parquet_agent.audit.prompt import unquoted
from parquet_agent.audit import AuditConfig, Auditor, FindingsStore
from parquet_agent.models.scripted import ScriptedModel

OTHERS = ["completeness", "uniqueness", "validity", "consistency", "referential", "volume",
          "coverage", "distribution_drift", "schema_drift"]
COLUMNS = ["accession", "file_stem", "year", "month", "parsed_md", "char_count", "md5", "has_ocr",
           "source_format"]


def _script() -> list[dict]:
    finding = {"category": "range", "columns": ["month"], "title": "February rows",
               "rationale": "a test defect", "predicate": "month = 2"}
    # every column profiled: the run gate passes, so each audit is complete and the first is
    # the second's previous run
    profile = [{"text": "profile", "tool_calls": [{"name": "get_stats", "arguments": {"column": c}}]}
               for c in COLUMNS]
    return [{"text": "propose", "tool_calls": [{"name": "write_finding", "arguments": finding}]},
            *profile,
            {"text": "stop", "tool_calls": [{"name": "conclude", "arguments": {
                "summary": "done", "skipped": {c: "not in this test" for c in OTHERS}}}]}]


def test_a_key_held_by_another_fingerprint_is_reported_not_merged(filings_dir, tmp_path):
    store = tmp_path / "findings.sqlite"
    config = AuditConfig(run_policy="accept")
    first = Auditor(config, model=ScriptedModel(_script()), store=store).run(
        filings_dir, run_dir=tmp_path / "a", lineage="L")
    (held,) = first.findings
    assert first.status == "complete", first.reason
    # the seam: the stored finding becomes another defect under the same key
    with sqlite3.connect(store) as con:
        (data,) = con.execute("SELECT data FROM audit_findings WHERE key = ?", (held.key,)).fetchone()
        forged = json.loads(data) | {"fingerprint": "fp:another-predicate",
                                     "predicate": "month = 3", "title": "March rows"}
        con.execute("UPDATE audit_findings SET data = ? WHERE key = ?", (json.dumps(forged), held.key))

    model = ScriptedModel(_script())
    second = Auditor(config, model=model, store=store).run(filings_dir, run_dir=tmp_path / "b",
                                                           lineage="L")
    assert second.findings == ()  # not merged into the key's holder
    (collision,) = second.collisions
    assert collision.key == held.key and collision.status == "collision"
    assert collision.fingerprint == held.fingerprint
    reason = collision.dismissed_reason
    assert "key collision" in reason and "fp:another-predicate" in reason and "March rows" in reason
    assert collision.evidence.count == held.evidence.count  # its own evidence, kept
    # the holder is still measured on its own predicate (month = 3), not the colliding one
    (recheck,) = second.rechecks
    assert recheck.title == "March rows" and recheck.status == "unchanged"
    assert second.diff.new == ()
    # reported everywhere: the agent's next state, findings.json, report.html, text, the store
    state = unquoted(model.requests[1].messages[-1].text)
    assert any("key collision" in c for c in state["critiques"])
    shown = json.loads((tmp_path / "b" / "findings.json").read_text())
    assert [c["key"] for c in shown["collisions"]] == [held.key]
    assert "Key collisions (1)" in (tmp_path / "b" / "report.html").read_text()
    assert "KEY COLLISION: February rows" in second.text()
    with FindingsStore.open(store) as index:
        sources = {(o["run_id"], o["source"], o["status"]) for o in index.observations(held.key)}
    assert ("b", "collision", "collision") in sources
