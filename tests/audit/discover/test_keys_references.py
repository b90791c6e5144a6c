"""Near-keys and references across tables: found on damaged copies, silent on clean ones."""

from __future__ import annotations

from parquet_agent.audit import Auditor
from tests.audit.discover.conftest import reported, run_discovery


def test_clean_tables_give_no_candidates_and_find_the_references(shop):
    found = run_discovery(shop("clean"))
    assert reported(found) == []
    refs = {(r.source, r.column, r.target, r.key, r.containment) for r in found.references}
    assert ("orders", "customer_id", "customers", "customer_id", 1.0) in refs
    assert ("orders", "sku", "products", "sku", 1.0) in refs
    assert "customer_id" in found.keys["customers"]
    # free text that repeats (names, towns) is never taken for a key
    assert not any("name" in c.arguments["columns"] for c in found.candidates)


def test_orphans_and_duplicate_keys_are_reported_with_exact_predicates(shop):
    found = run_discovery(shop("dirty", dup_customer=True, orphans=4))
    by_rule = {c.rule: c for c in reported(found)}
    orphan = by_rule["references.orphans"]
    assert orphan.arguments["view"] == "orders"
    assert orphan.arguments["category"] == "referential"
    assert orphan.support["distinct"] - orphan.support["containment"] * orphan.support["distinct"] >= 4
    dup = by_rule["keys.duplicates"]
    assert dup.arguments["view"] == "customers" and dup.arguments["columns"] == ["customer_id"]
    assert "another table refers to it" in dup.arguments["rationale"]


def test_the_gate_commits_discovered_findings_with_its_own_counts(shop, tmp_path):
    report = Auditor(store=tmp_path / "f.sqlite").run(
        shop("audited", dup_customer=True, orphans=4), run_dir=tmp_path / "run", lineage="shop")
    by_category = {(f.category, f.view): f for f in report.findings}
    orphan = by_category[("referential", "orders")]
    # 4 orphan orders, plus the orders of the customer id the duplicate replaced
    assert orphan.evidence.count >= 4 and orphan.evidence.denominator == 400
    assert all(e["customer_id"][0] in "XC" for e in orphan.evidence.examples)
    dup = by_category[("uniqueness", "customers")]
    assert dup.evidence.count == 2 and dup.evidence.denominator == 120
