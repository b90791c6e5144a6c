"""Near-keys and references across tables: found on damaged copies, silent on clean ones."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

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


def test_a_documented_key_is_checked_however_many_of_its_values_repeat(tmp_path):
    """The filings corpus documents file_stem as unique: 4 % of its values copied from other
    filings (beyond the 1 % a near-key allows) is still reported; the clean copy reports none."""
    from tests.audit.conftest import write_filings

    clean = run_discovery(write_filings(tmp_path / "clean"))
    assert reported(clean, "keys.duplicates") == []
    damaged = write_filings(tmp_path / "damaged")
    path = damaged / "2025-01.parquet"
    table = pq.read_table(path).to_pylist()
    for row, source in zip(table[:5], table[5:10]):  # 5 of 120 rows take another's file_stem
        row["file_stem"] = source["file_stem"]
    pq.write_table(pa.Table.from_pylist(table), path)
    (dup,) = reported(run_discovery(damaged), "keys.duplicates")
    assert dup.arguments["columns"] == ["file_stem"]
    assert "documents it as unique" in dup.arguments["rationale"]


def test_a_reference_over_a_column_pair_finds_the_pairs_its_target_lacks(tmp_path):
    """All-star rows name a team in a year; teams are identified by (teamID, yearID), neither
    alone. 'MLN' (never a teamID) and 'MIL' in years before it became one are orphans; the
    salaries of the same teams and years are not."""
    from tests.audit.discover.conftest import reported, run_discovery, write_tables

    teams = [{"yearID": y, "teamID": t, "lgID": "AL" if t < "M" else "NL", "W": (y * 7 + len(t)) % 100}
             for y in range(1950, 2000) for t in ["BOS", "CHA", "DET", "ML4", "NYA"]
             + (["MIL"] if y >= 1998 else [])]
    allstar = [{"playerID": f"p{i:04d}", "yearID": 1950 + i % 50, "teamID": ["BOS", "CHA", "DET", "NYA"][i // 50 % 4],
                "GP": 1} for i in range(600)]
    allstar += [{"playerID": f"m{i:03d}", "yearID": 1953 + i % 10, "teamID": "MLN", "GP": 1} for i in range(20)]
    allstar += [{"playerID": f"w{i:03d}", "yearID": 1970 + i % 5, "teamID": "MIL", "GP": 1} for i in range(10)]
    salaries = [{"yearID": 1985 + i % 15, "teamID": ["BOS", "ML4", "NYA"][i % 3], "playerID": f"s{i:04d}",
                 "salary": 100_000 + i} for i in range(300)]
    found = run_discovery(write_tables(tmp_path / "baseball", {"teams": teams, "allstar": allstar,
                                                              "salaries": salaries}))
    hits = reported(found, "references.composite_orphans")
    assert [(c.arguments["view"], c.arguments["columns"]) for c in hits] == [
        ("allstar", ["teamID", "yearID"])], [c.title for c in reported(found)]
    assert "15 combination(s) are absent" in hits[0].title  # MLN in 10 years, MIL in 5
    pairs = {(r.source, r.target, r.keys) for r in found.composite_references}
    assert ("salaries", "teams", ("yearID", "teamID")) in pairs
