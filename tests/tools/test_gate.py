"""The SQL gate against DuckDB's own parser (no worker: these are the parse decisions alone)."""

from __future__ import annotations

import duckdb
import pytest

from parquet_agent.tools.gate import GateRejection, parse_select


@pytest.fixture(scope="module")
def con():
    c = duckdb.connect()
    yield c
    c.close()


ALLOWED = [
    "SELECT 1",
    "select 1 -- ; DROP TABLE filings",
    "SELECT ';' AS semicolon",
    "WITH t AS (SELECT 1 AS a) SELECT a FROM t",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT * FROM r",
    "SELECT 1 UNION SELECT 2",
    "FROM range(3)",
    "DESCRIBE SELECT 1",
]


@pytest.mark.parametrize("sql", ALLOWED)
def test_one_read_only_select_passes(con, sql):
    statement = parse_select(con, sql)
    assert statement.type == duckdb.StatementType.SELECT


REFUSED = {
    "two statements": ("SELECT 1; SELECT 2", "forbidden", "exactly one statement"),
    "second statement after a comment": ("SELECT 1 /* x */; DELETE FROM t", "forbidden", "exactly one"),
    "copy": ("COPY (SELECT 1) TO 'x.csv'", "forbidden", "COPY statement"),
    "export": ("EXPORT DATABASE 'x'", "forbidden", "EXPORT"),
    "attach": ("ATTACH ':memory:' AS m", "forbidden", "ATTACH"),
    "install": ("INSTALL httpfs", "forbidden", "LOAD"),
    "load": ("LOAD httpfs", "forbidden", "LOAD"),
    "set": ("SET threads = 8", "forbidden", "SET"),
    "reset": ("RESET memory_limit", "forbidden", "SET"),
    "pragma": ("PRAGMA memory_limit='8GB'", "forbidden", "SET"),
    "create": ("CREATE TABLE t AS SELECT 1", "forbidden", "CREATE"),
    "create macro": ("CREATE MACRO m() AS 1", "forbidden", "CREATE"),
    "insert": ("INSERT INTO t VALUES (1)", "forbidden", "INSERT"),
    "update": ("UPDATE t SET a = 1", "forbidden", "UPDATE"),
    "delete": ("DELETE FROM t", "forbidden", "DELETE"),
    "drop": ("DROP VIEW filings", "forbidden", "DROP"),
    "cte insert": ("WITH x AS (INSERT INTO t VALUES (1) RETURNING *) SELECT * FROM x", "forbidden", "INSERT"),
    "cte delete": ("WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x", "forbidden", "DELETE"),
    "cte update": ("WITH x AS (UPDATE t SET a = 2 RETURNING *) SELECT * FROM x", "forbidden", "UPDATE"),
    "cte copy": ("WITH x AS (COPY (SELECT 1) TO 'f.parquet' (USE_TMP_FILE false)) SELECT 1", "forbidden", "COPY"),
    "nested cte copy": (
        "SELECT * FROM (WITH x AS (COPY (SELECT 1) TO 'f.csv') SELECT 1) s", "forbidden", "COPY"),
    "explain analyze": ("EXPLAIN ANALYZE SELECT 1", "forbidden", "EXPLAIN"),
    "pivot": ("PIVOT filings ON month USING count(*)", "forbidden", "MULTI"),
    "call": ("CALL pragma_version()", "forbidden", "CALL"),
    "checkpoint": ("CHECKPOINT", "forbidden", "CALL"),
    "query()": ("SELECT * FROM query('SELECT 1')", "sql", "query()"),
    "query_table()": ("SELECT * FROM query_table('filings')", "sql", "query_table()"),
    "current_setting": ("SELECT current_setting('allowed_paths')", "sql", "current_setting()"),
    "duckdb_settings": ("SELECT * FROM duckdb_settings()", "sql", "duckdb_settings()"),
    "syntax error": ("SELEC 1", "sql", "parse"),
    "empty": ("   ", "validation", "got 0"),
    "only a comment": ("-- nothing", "validation", "got 0"),
}


@pytest.mark.parametrize("sql,kind,needle", REFUSED.values(), ids=REFUSED.keys())
def test_everything_else_is_refused_with_a_clear_message(con, sql, kind, needle):
    with pytest.raises(GateRejection) as caught:
        parse_select(con, sql)
    assert caught.value.kind == kind
    assert needle.lower() in caught.value.message.lower()


def test_deeply_nested_query_does_not_overflow(con):
    sql = "SELECT " + "(" * 300 + "1" + ")" * 300
    try:
        parse_select(con, sql)
    except GateRejection as exc:  # DuckDB may refuse the depth itself; it must not crash us
        assert exc.kind in {"sql", "forbidden"}
