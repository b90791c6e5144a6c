"""Per-question scoping (FinanceBench single store / oracle): a question's tools see only its
filings, through every tool, and no table function reaches the other rows."""

from __future__ import annotations

import pytest

from parquet_agent.errors import UsageError
from parquet_agent.tools import Tools
from tests.harness_corpus import make_harness_corpus


@pytest.fixture(scope="module")
def tools(tmp_path_factory):
    corpus = make_harness_corpus(tmp_path_factory.mktemp("scope") / "corpus")
    with Tools.open(corpus, "sql+stream") as t:
        yield t


@pytest.fixture(scope="module")
def stems(tools):
    return [r[0] for r in tools.call("sql", query="SELECT file_stem FROM filings ORDER BY 1")
            .output["rows"]]


def test_sql_sees_only_the_scoped_rows(tools, stems):
    scoped = tools.scoped(stems[:2])
    out = scoped.call("sql", query="SELECT count(*), min(file_stem), max(file_stem) FROM filings")
    assert out.output["rows"] == [[2, stems[0], stems[1]]]
    assert tools.call("sql", query="SELECT count(*) FROM filings").output["rows"] == [[6]]


@pytest.mark.parametrize("query", [
    "SELECT count(*) FROM read_parquet('2025-01.parquet')",
    "SELECT count(*) FROM parquet_scan('/proc/self/fd/3')",
    "SELECT count(*) FROM glob('*')",
])
def test_no_table_function_reaches_the_other_rows(tools, stems, query):
    result = tools.scoped(stems[:1]).call("sql", query=query)
    assert not result.ok and result.error.kind in ("forbidden", "sql")


def test_other_file_stems_are_refused_by_every_tool(tools, stems):
    scoped = tools.scoped(stems[:2])
    for name, args in [("read_filing", {"file_stem": stems[4]}),
                       ("sql", {"query": "SELECT 1 FROM filing", "file_stem": stems[4]})]:
        result = scoped.call(name, **args)
        assert result.error.kind == "validation" and "outside this question's scope" in (
            result.error.message)
    assert scoped.call("read_filing", file_stem=stems[0], max_chars=5).output["text"] == "UNITE"


def test_header_search_and_description_are_scoped(tools, stems):
    everything = tools.call("search_headers", query="Northwind").output
    assert everything["total"] == 2  # one filing per month
    scoped = tools.scoped([stems[2]]).call("search_headers", query="Northwind").output
    assert scoped["total"] == 1 and [r["file_stem"] for r in scoped["results"]] == [stems[2]]
    scoped = tools.scoped(stems[:3])
    described = scoped.call("describe_corpus").output
    assert described["scope"] == {"file_stems": stems[:3], "count": 3}


def test_scoped_answers_never_come_from_the_unscoped_cache(tools, stems):
    query = "SELECT count(*) AS n FROM filings -- cache probe"
    assert tools.call("sql", query=query).output["rows"] == [[6]]
    scoped = tools.scoped(stems[:1]).call("sql", query=query)
    assert scoped.output["rows"] == [[1]] and not scoped.cache_hit


def test_an_empty_scope_is_a_usage_error(tools):
    with pytest.raises(UsageError):
        tools.scoped([])


def test_a_strategy_view_shares_the_sandbox_but_offers_its_own_tools(tools):
    view = tools.for_strategy("sql")
    assert [s.name for s in view.specs()] == ["describe_corpus", "sql"]
    assert view.call("read_filing", file_stem="x").error.kind == "unknown_tool"
    assert view.call("describe_corpus").output["tools"] == ["describe_corpus", "sql"]
    assert len(tools.call("describe_corpus").output["tools"]) == 4  # not the view's cached one
    assert view.sandbox is tools.sandbox  # one fork server, one data-worker gate
    view.close()  # a view does not own the sandbox
    assert tools.call("sql", query="SELECT 7").output["rows"] == [[7]]
