"""Locating benchmark evidence in parsed_md on normalized text (no FinanceBench data needed)."""

from __future__ import annotations

from parquet_agent.bench.evidence import MIN_PARTIAL, locate, normalize, normalize_with_map

DOC = (
    "ACCESSION NUMBER:\t\t0000000001-19-000001\n\n<!-- page 1 -->\nCover page text.\n"
    "<!-- page 2 -->\nConsolidated Statement of Cash Flows\nPurchases of property, plant and "
    "equipment (PP&E)\n(1,577) (1,373)\nNet cash used in investing  activities (222)\n"
    "<!-- page 3 -->\nNotes to the statements. Revenue grew 4% in 2018.\n"
)


def _page(n: int) -> tuple[int, int]:
    start = DOC.index(f"<!-- page {n} -->")
    start = DOC.index("\n", start) + 1
    nxt = DOC.find("<!-- page", start)
    return start, nxt if nxt >= 0 else len(DOC)


def test_exact_match_ignores_whitespace_case_and_punctuation():
    evidence = "purchases of property, plant and\nequipment (PP & E)\n(1,577)\n(1,373)"
    loc = locate(evidence, DOC, _page(2))
    assert (loc.match, loc.coverage, loc.verified) == ("exact", 1.0, True)
    quote = DOC[loc.start : loc.end]
    assert quote.startswith("Purchases of property") and quote.endswith("(1,373")
    assert normalize(quote) == normalize(evidence)


def test_wrong_page_is_found_elsewhere_in_the_document():
    loc = locate("Revenue grew 4% in 2018", DOC, _page(2))
    assert loc.match == "exact_elsewhere" and DOC[loc.start : loc.end] == "Revenue grew 4% in 2018"


def test_partial_match_reports_its_coverage_and_a_miss_falls_back_to_the_page():
    tail = " and then some text that this document never had at all"
    evidence = "Consolidated Statement of Cash Flows Purchases of property" + tail
    loc = locate(evidence, DOC, _page(2))
    assert loc.match == "prefix" and loc.verified
    assert 0 < loc.coverage < 1
    assert len(normalize(DOC[loc.start : loc.end])) >= MIN_PARTIAL
    miss = locate("Completely unrelated words about nothing in this filing", DOC, _page(3))
    assert (miss.match, (miss.start, miss.end)) == ("page", _page(3))
    assert locate("", DOC, _page(1)).match == "missing"
    assert locate("not here either, nowhere at all", DOC, None).match == "missing"


def test_normalized_map_points_back_at_source_characters():
    norm, where = normalize_with_map("A-b  C\nİx", offset=10)
    assert norm == "abci̇x"
    assert [where[0], where[1], where[2]] == [10, 12, 15]
    assert len(where) == len(norm)
