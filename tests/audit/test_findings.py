"""Finding keys from DuckDB's parse tree, and the severity rule."""

from __future__ import annotations

from parquet_agent.audit.finding import Proposal, finding_key, fingerprint, wilson
from parquet_agent.audit.taxonomy import derived_severity, settle_severity


def test_fingerprint_ignores_spelling_but_not_meaning():
    a = fingerprint("SELECT count(*) FROM data WHERE (char_count <> length(parsed_md))")
    b = fingerprint("select   COUNT(*)\nfrom data\nwhere char_count<>length(parsed_md)")
    c = fingerprint("SELECT count(*) FROM data WHERE char_count > length(parsed_md)")
    assert a == b != c
    # two different format defects in one column get two keys (field+category would merge them)
    k1 = finding_key("filings", "validity", ("accession",), fingerprint(
        "SELECT count(*) FROM data WHERE NOT regexp_full_match(accession, '[0-9]+')"))
    k2 = finding_key("filings", "validity", ("accession",), fingerprint(
        "SELECT count(*) FROM data WHERE length(accession) > 10"))
    assert k1 != k2 and k1.startswith("F-")
    assert finding_key("filings", "validity", ("b", "a"), a) == finding_key("filings", "validity", ("a", "b"), a)
    assert finding_key("other", "validity", ("a",), a) != finding_key("filings", "validity", ("a",), a)


def test_severity_is_derived_and_may_only_be_lowered():
    assert derived_severity("consistency", 0.01) == "high"
    assert derived_severity("consistency", 0.10) == "critical"
    assert derived_severity("consistency", 0.0005) == "medium"
    assert settle_severity("high", "low", "documented") == ("low", None)
    severity, problem = settle_severity("medium", "critical", "very bad")
    assert severity == "medium" and "never raised" in problem
    severity, problem = settle_severity("high", "low", None)
    assert severity == "high" and "severity_reason" in problem


def test_proposals_are_checked():
    assert Proposal.from_arguments({"category": "nonsense", "columns": ["a"], "title": "t",
                                    "rationale": "r", "predicate": "a IS NULL"})[1].startswith("category")
    assert "predicate" in Proposal.from_arguments({"category": "range", "columns": ["a"],
                                                   "title": "t", "rationale": "r"})[1]
    proposal, problem = Proposal.from_arguments({"category": "range", "columns": ["b", "a"],
                                                 "title": "t", "rationale": "r",
                                                 "predicate": "a > 1", "confidence": 0.5})
    assert problem is None and proposal.columns == ("a", "b")
    low, high = wilson(10, 100)
    assert low < 0.1 < high
