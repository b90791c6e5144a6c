"""Nothing in our own processes parses an unbounded query (issue 24, item 7), through real
DuckDB and real workers: a query over the size limit is a `validation` error before DuckDB or
json.loads sees it (the gate, the action gate's rules, raw argument text), and a query too deep
to read over the data-skipping index is the gate's `sql` error, not a crashed worker."""

from __future__ import annotations

import json

import duckdb
import pytest

from parquet_agent.corpus.index import build_index
from parquet_agent.corpus.skipindex import build_skip_index
from parquet_agent.tools import Tools
from parquet_agent.tools.action_gate import ActionGate
from parquet_agent.tools.gate import (
    MAX_PARSE_CHARS,
    MAX_QUERY_CHARS,
    GateRejection,
    parse_select,
)
from parquet_agent.tools.specs import MAX_ARGUMENT_CHARS
from tests.tools.conftest import write_files


def in_list(chars: int) -> str:
    """A valid SELECT with an IN list of about `chars` characters (what the red team sent)."""
    values = ",".join(f"{i:07d}" for i in range(chars // 8 + 1))
    return f"SELECT count(*) FROM filings WHERE year IN ({values})"


@pytest.fixture(scope="module")
def skip_corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("caps") / "corpus"
    write_files(folder)
    build_index(folder)
    build_skip_index(folder)
    return folder


def test_the_gate_refuses_an_oversize_query_as_validation():
    con = duckdb.connect()
    query = in_list(MAX_PARSE_CHARS + 100)
    assert len(query) > MAX_PARSE_CHARS
    with pytest.raises(GateRejection) as err:
        parse_select(con, query)
    assert err.value.kind == "validation" and f"{MAX_PARSE_CHARS:,}" in err.value.message
    parse_select(con, in_list(MAX_QUERY_CHARS - 200))  # a long query within the limit parses


def test_the_action_gate_checks_the_size_before_it_parses(skip_corpus):
    seen = []
    query = in_list(MAX_QUERY_CHARS + 100)
    with Tools.open(skip_corpus, strategy="sql", cache="off") as tools:
        result = ActionGate(tools, seen.append).call_raw("sql", {"query": query})
    assert result.error.kind == "validation"
    assert [e.verdict for e in seen] == ["FAIL"]
    assert f"{MAX_QUERY_CHARS:,}" in seen[0].critique and "too long" in seen[0].critique


def test_oversize_argument_text_is_refused_unread(skip_corpus):
    text = json.dumps({"query": "SELECT 1 -- " + "x" * MAX_ARGUMENT_CHARS})
    with Tools.open(skip_corpus, strategy="sql", cache="off") as tools:
        result = tools.call_raw("sql", text)
        assert result.error.kind == "validation"
        assert f"{MAX_ARGUMENT_CHARS:,} characters of JSON" in result.error.message
        assert len(json.dumps(result.arguments)) < 4000  # the record keeps a cut, not 160 KB


def test_a_query_too_deep_to_prune_is_the_gates_sql_error_not_a_crash(skip_corpus):
    deep = ("SELECT count(*) FROM filings WHERE contains(parsed_md, 'Revenue') AND 1 = "
            + "(SELECT " * 300 + "1" + ")" * 300)
    with Tools.open(skip_corpus, strategy="sql", cache="off") as tools:
        assert tools.skip_status == "ok"
        pruned = tools.call("sql", query="SELECT count(*) FROM filings WHERE "
                                         "contains(parsed_md, 'Revenue')")
        assert pruned.ok and pruned.skip_index["used"]
        result = tools.call("sql", query=deep)
        assert result.error.kind == "sql", result.error
        assert "nests too deeply" in result.error.message
        assert tools.call("sql", query="SELECT 1").ok  # the next call works
