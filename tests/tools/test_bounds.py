"""Every output bounded and every bad input an error value of its kind (issue 14), through real
workers: column names count against the output cap, the result cache is bounded by bytes,
deeply nested arguments are a `validation` error, and the text tools treat Unicode digits and
case-folding letters as the text they are."""

from __future__ import annotations

import json

from parquet_agent.tools.cache import CachedOutput, ResultCache
from tests.tools.conftest import stem
from tests.tools.test_hostile import guard, healthy  # noqa: F401  (fixtures)


def test_column_names_count_against_the_output_cap(tools, guard):  # noqa: F811
    long_name = "x" * 6000
    query = "SELECT " + ", ".join(["*"] * 2000) + f' FROM (SELECT 1 AS "{long_name}") LIMIT 0'
    result = tools.call("sql", query=query)
    assert result.ok, result.error
    assert len(result.model_text()) < 40_000, len(result.model_text())
    assert result.truncated["columns_cut"] == 1900 and result.truncated["column_names_cut"] == 2000
    assert all(len(c) <= 121 for c in result.output["columns"])
    healthy(tools)


def test_one_wide_row_is_cut_at_the_total(tools, guard):  # noqa: F811
    cells = ", ".join(f"repeat('y', 1999) AS c{i}" for i in range(99))
    result = tools.call("sql", query=f"SELECT {cells}")
    assert result.ok, result.error
    assert len(result.model_text()) < 40_000
    assert result.truncated["stopped_at_total_chars"] == 30_000
    assert result.output["rows"][0][-1] == "…[cut: output budget]"


def test_result_cache_is_bounded_by_bytes():
    cache = ResultCache(max_entries=1000, max_bytes=10_000)
    for i in range(40):
        cache.put(f"k{i}", CachedOutput(json.dumps("z" * 2_000), None))
    stats = cache.stats()
    assert stats["bytes"] <= 10_000 and stats["entries"] == stats["bytes"] // 2_006
    assert cache.get("k39") is not None and cache.get("k0") is None  # oldest went first
    cache.put("huge", CachedOutput(json.dumps("z" * 5_000), None))  # over a quarter: not kept
    assert cache.get("huge") is None and cache.stats()["bytes"] <= 10_000


def test_tools_cache_stays_within_its_bytes(corpus_dir):
    from parquet_agent.tools import Tools

    with Tools.open(corpus_dir, "sql") as tools:
        limit = tools.cache.stats()["max_bytes"]
        assert 0 < limit <= 256 << 20
        for i in range(30):  # distinct ~30 KB answers
            result = tools.call("sql", query=f"SELECT parsed_md, {i} AS i FROM filings")
            assert result.ok
        assert 0 < tools.cache.stats()["bytes"] <= limit


def _nested(depth: int) -> str:
    return '{"query": ' + "[" * depth + '"x"' + "]" * depth + "}"


def test_deeply_nested_argument_json_is_a_validation_error(tools):
    # 50,000 levels: deep enough for a RecursionError, short enough to be read (test_parse_caps)
    for arguments in (_nested(50_000), json.loads(_nested(900))):
        result = tools.call_raw("sql", arguments)
        assert not result.ok and result.error.kind == "validation", result.error
        assert "nested" in result.error.message
        json.dumps(result.to_json())  # the record of it is writable


def test_unicode_digit_in_header_search_is_only_text(tools):
    for query in ("²", "¹²³", "٣٤"):
        result = tools.call("search_headers", query=query)
        assert result.ok, (query, result.error)  # it was worker_crashed (int("²") failed)


def test_case_folding_pattern_matches_only_what_it_says(tools):
    result = tools.call("read_filing", file_stem=stem(1), pattern="İ")
    assert result.ok, result.error
    assert result.output["matches_total"] == 0  # it used to match every "i"
    result = tools.call("read_filing", file_stem=stem(1), pattern="REVENUE")
    assert result.ok and result.output["matches_total"] > 0  # ordinary case folding still works
