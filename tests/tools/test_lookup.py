"""The server-built lookup structures, in process (the worker tests cover them end to end)."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

from parquet_agent.tools.gate import GateRejection, parse_select
from parquet_agent.tools.lookup import HeaderSearch, RowIndex


def headers(rows: list[tuple]) -> pa.Table:
    names = ["file_stem", "company", "form_type", "period", "filing_date", "cik", "file", "company_norm", "cik_int"]
    return pa.table({n: [r[i] for r in rows] for i, n in enumerate(names)})


ROWS = [
    ("s3", "Apple Inc.", "10-K", "2024-09-28", "2024-11-01", "320193", "a.parquet", "apple", 320193),
    ("s1", "Applied Materials Inc", "10-Q", "2025-01-26", "2025-02-20", "6951", "a.parquet", "applied materials", 6951),
    ("s2", "Procter & Gamble Co", "8-K", None, "2025-03-03", "80424", "b.parquet", "procter and gamble", 80424),
    ("s4", None, None, None, None, None, "b.parquet", None, None),
]


@pytest.fixture(scope="module")
def search():
    return HeaderSearch(headers(ROWS))


@pytest.mark.parametrize(
    "query,stems",
    [
        ("apple", ["s3"]),
        ("APPL", ["s1", "s3"]),  # word prefix, results in file_stem order
        ("Apple Inc.", ["s3"]),  # legal suffixes carry no weight
        ("Procter & Gamble", ["s2"]),
        ("procter gamble", ["s2"]),
        ("10-k", ["s3"]),
        ("0000320193", ["s3"]),  # CIK with padding
        ("6951 10-Q", ["s1"]),
        ("2025", ["s1", "s2"]),
        ("2025-03", ["s2"]),
        ("s4", ["s4"]),
        ("materials apple", []),
        ("zzz", []),
        ("' OR 1=1 --", []),
    ],
)
def test_every_word_must_match_some_field(search, query, stems):
    total, rows = search.search(query, 1, 10)
    assert [r["file_stem"] for r in rows] == stems and total == len(stems)


def test_pages_and_information_free_queries(search):
    total, rows = search.search("Inc.", 2, 3)  # no information: every row, paginated
    assert total == 4 and [r["file_stem"] for r in rows] == ["s4"]
    assert search.search("apple", 5, 10) == (1, [])


def test_row_index_locates_first_of_duplicates():
    index = RowIndex(pa.table({"file_stem": ["b", "a", "b"], "file": ["f2", "f1", "f1"],
                               "row_group": [3, 0, 1], "row_in_group": [4, 0, 2],
                               "md_page_offset": [None, 4, 900], "md_page_bytes": [None, 800, 70],
                               "md_row_in_page": [None, 0, 1]}))
    assert index.locate("a") == ("f1", 0, 0, (4, 800, 0))
    assert index.locate("b") in {("f1", 1, 2, (900, 70, 1)), ("f2", 3, 4, None)}
    assert index.locate("c") is None and index.locate("") is None


def test_pivot_hint():
    con = duckdb.connect()
    con.execute("CREATE TABLE filings AS SELECT 1 AS month")
    with pytest.raises(GateRejection, match="explicit values"):
        parse_select(con, "SELECT * FROM (PIVOT filings ON month USING count(*))")
