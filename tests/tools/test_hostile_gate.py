"""Hostile SQL against the allow-list gate, through real workers and real DuckDB (issue 14).

Every attack here got past the earlier deny-list gate or came back as the wrong error kind:
SQL smuggled through `json_execute_serialized_sql`, settings and host paths read through
`pg_catalog`, catalogs and `duckdb_*()`, file readers, deep nesting that crashed the worker, a
statement type the DuckDB binding cannot name, a value that overflows on fetch. Each must be a
tool error of the right kind that names what was refused, never touch a file, and leave the
next call working. `ATTACK_CLASSES` counts them by class for the issue's note.
"""

from __future__ import annotations

import duckdb
import pytest

from parquet_agent.tools.gate import GateRejection, allowed_functions, parse_select
from tests.tools.test_hostile import guard, healthy  # noqa: F401  (fixtures)

SMUGGLE = "json_execute_serialized_sql(json_serialize_sql('{inner}'))"

# name -> (sql, error kind, a word the message must contain)
GATE_ATTACKS = {
    # SQL text executed or parsed at run time
    "serialized current_setting": (
        "SELECT * FROM " + SMUGGLE.format(inner="SELECT current_setting(''allowed_paths'')"),
        "sql", "json_execute_serialized_sql"),
    "serialized duckdb_settings": (
        "SELECT * FROM " + SMUGGLE.format(inner="SELECT * FROM duckdb_settings()"),
        "sql", "json_execute_serialized_sql"),
    "serialized query()": (
        "SELECT * FROM " + SMUGGLE.format(inner="SELECT * FROM query(''SELECT 1'')"),
        "sql", "json_execute_serialized_sql"),
    "serialized cte copy": (
        "SELECT * FROM " + SMUGGLE.format(
            inner="WITH x AS (COPY (SELECT 1) TO ''/proc/self/fd/3'' (FORMAT parquet, "
                  "USE_TMP_FILE false)) SELECT 1"),
        "sql", "json_execute_serialized_sql"),
    "json_serialize_sql alone": ("SELECT json_serialize_sql('SELECT 1')", "sql", "json_serialize_sql"),
    "json_deserialize_sql": ("SELECT json_deserialize_sql('{}')", "sql", "json_deserialize_sql"),
    "json_serialize_plan": ("SELECT json_serialize_plan('SELECT 1')", "sql", "json_serialize_plan"),
    "query_table": ("SELECT * FROM query_table('filings')", "sql", "query_table"),
    "query in subquery": ("SELECT (SELECT count(*) FROM query('SELECT 1'))", "sql", "query"),
    "query in lambda": ("SELECT list_transform([1], lambda x: (SELECT 1 FROM query('SELECT 1')))", "sql", "query"),
    # settings, catalogs, variables
    "pg_settings": ("SELECT setting FROM pg_settings WHERE name = 'allowed_paths'", "sql", "pg_settings"),
    "pg_catalog.pg_settings": ("SELECT * FROM pg_catalog.pg_settings", "sql", "pg_catalog.pg_settings"),
    "pg_catalog.pg_class": ("SELECT * FROM pg_catalog.pg_class", "sql", "pg_class"),
    "information_schema.tables": ("SELECT * FROM information_schema.tables", "sql", "information_schema"),
    "information_schema.columns": ("SELECT * FROM information_schema.columns", "sql", "information_schema"),
    "duckdb_tables view": ("SELECT * FROM duckdb_tables", "sql", "duckdb_tables"),
    "duckdb_views()": ("SELECT sql FROM duckdb_views()", "sql", "duckdb_views"),
    "duckdb_databases()": ("SELECT path FROM duckdb_databases()", "sql", "duckdb_databases"),
    "duckdb_extensions()": ("SELECT * FROM duckdb_extensions()", "sql", "duckdb_extensions"),
    "duckdb_secrets()": ("SELECT * FROM duckdb_secrets()", "sql", "duckdb_secrets"),
    "current_setting in where": ("SELECT 1 WHERE current_setting('home_directory') <> ''", "sql", "current_setting"),
    "current_setting qualified": ("SELECT main.current_setting('threads')", "sql", "current_setting"),
    "pg_catalog function": ("SELECT pg_catalog.pg_get_viewdef('filings')", "sql", "pg_get_viewdef"),
    "getvariable": ("SELECT getvariable('x')", "sql", "getvariable"),
    "current_database": ("SELECT current_database()", "sql", "current_database"),
    "has_table_privilege": ("SELECT has_table_privilege('filings', 'select')", "sql", "has_table_privilege"),
    "show tables": ("SHOW TABLES", "sql", "SHOW"),
    "show all tables": ("SHOW ALL TABLES", "sql", "SHOW"),
    "main.filings": ("SELECT count(*) FROM main.filings", "sql", "main.filings"),
    "memory catalog": ("SELECT count(*) FROM memory.main.filings", "sql", "memory.main.filings"),
    "cte name out of scope": (
        "SELECT * FROM (WITH pg_settings AS (SELECT 1) SELECT 1) s, pg_settings", "sql", "pg_settings"),
    "cte sees a later cte": (
        "WITH a AS (SELECT * FROM pg_settings), pg_settings AS (SELECT 1) SELECT * FROM a",
        "sql", "pg_settings"),
    # files, side effects
    "read_parquet": ("SELECT count(*) FROM read_parquet('/proc/self/fd/3')", "sql", "read_parquet"),
    "read_text": ("SELECT * FROM read_text('/etc/passwd')", "sql", "read_text"),
    "read_csv in subquery": ("SELECT (SELECT count(*) FROM read_csv('/etc/passwd'))", "sql", "read_csv"),
    "parquet_metadata": ("SELECT * FROM parquet_metadata('/proc/self/fd/3')", "sql", "parquet_metadata"),
    "glob": ("SELECT * FROM glob('/*')", "sql", "glob"),
    "replacement scan": ("SELECT * FROM '/etc/passwd'", "sql", "file path"),
    "write_log": ("SELECT write_log('x')", "sql", "write_log"),
    "sleep": ("SELECT pg_sleep(100)", "sql", "pg_sleep"),
    "checkpoint()": ("SELECT * FROM checkpoint()", "sql", "checkpoint"),
    "nextval": ("SELECT nextval('s')", "sql", "nextval"),
    "parameter": ("SELECT $1", "sql", "PARAMETER"),
    # statements the binding cannot name, nesting that overflowed the worker
    "update extensions": ("UPDATE EXTENSIONS", "sql", "not available"),
    "400 nested calls": ("SELECT " + "abs(" * 400 + "1" + ")" * 400, "sql", "nests too deeply"),
    "700 nested CASE": ("SELECT " + "CASE WHEN true THEN " * 700 + "1" + " END" * 700, "sql", "nests too deeply"),
    "600 nested subqueries": ("SELECT " + "(SELECT " * 600 + "1" + ")" * 600, "sql", "depth"),
    "1500-way join": ("SELECT 1 FROM filings" + ", filings" * 1499, "sql", "nests too deeply"),
    # values Python cannot hold, on fetch
    "interval overflow on fetch": ("SELECT INTERVAL 100000000 YEARS AS x", "sql", "VARCHAR"),
}

ATTACK_CLASSES = {
    "runs or parses SQL text": 10,
    "settings, catalogs, variables": 22,
    "files and side effects": 11,
    "unnamed statement type, deep nesting": 5,
    "value overflow on fetch": 1,
}


def test_attack_classes_add_up():
    assert sum(ATTACK_CLASSES.values()) == len(GATE_ATTACKS)


@pytest.mark.parametrize("sql,kind,needle", GATE_ATTACKS.values(), ids=GATE_ATTACKS.keys())
def test_gate_attack_is_an_error_of_its_kind(tools, guard, sql, kind, needle):  # noqa: F811
    result = tools.call("sql", query=sql)
    assert not result.ok, result.output
    assert result.error.kind == kind, result.error
    assert needle.lower() in result.error.message.lower(), result.error.message
    assert str(guard) not in result.model_text()
    healthy(tools)


ORDINARY = [
    "SELECT month, count(*) AS n, avg(char_count) FROM filings GROUP BY ALL ORDER BY 1",
    "SELECT file_stem FROM filings WHERE contains(parsed_md, 'revenue') AND year = 2025 LIMIT 3",
    "SELECT regexp_extract(parsed_md, 'revenue was (\\d+)', 1) AS r FROM filings LIMIT 2",
    "WITH t AS (SELECT accession, count(*) AS n FROM filings GROUP BY 1) SELECT max(n) FROM t",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT sum(n) FROM r",
    "SELECT file_stem, row_number() OVER (PARTITION BY month ORDER BY char_count DESC) AS k "
    "FROM filings QUALIFY k = 1",
    "SELECT * FROM filings PIVOT (count(*) FOR month IN (1, 2)) LIMIT 1",
    "SELECT unnest([1, 2]) AS u, list_transform([1, 2], lambda x: x * 2) AS l",
    "SELECT * FROM range(3) r, generate_series(1, 2) g",
    "SELECT CAST(char_count AS DECIMAL(12, 2)), strftime(DATE '2025-01-02', '%Y'), "
    "CASE WHEN has_ocr THEN 'y' ELSE 'n' END, char_count BETWEEN 1 AND 10 FROM filings LIMIT 1",
    "SELECT COLUMNS('file_.*') FROM filings LIMIT 1",
    "SELECT count(*) FROM (SELECT * FROM filings UNION ALL SELECT * FROM filings)",
    "SELECT s FROM (VALUES ('a'), ('b')) t(s) WHERE s ILIKE 'A' OR s LIKE 'b%' OR s SIMILAR TO 'c'",
    "DESCRIBE SELECT file_stem FROM filings",
    "SUMMARIZE SELECT char_count FROM filings",
    "SELECT a.file_stem FROM filings a JOIN filings b USING (file_stem) ORDER BY 1 LIMIT 1",
    "SELECT struct_pack(a := 1).a, {'k': 2}.k, [1, 2, 3][2], map([1], ['x'])[1]",
    "SELECT json_extract('{\"a\": 1}', '$.a'), md5('x'), hash(1), typeof(1), now() IS NOT NULL",
]


@pytest.mark.parametrize("sql", ORDINARY)
def test_ordinary_agent_sql_passes_the_gate(tools, sql):
    result = tools.call("sql", query=sql)
    assert result.ok, (sql, result.error)


def test_every_allowed_function_exists_and_no_dangerous_one_is_allowed():
    con = duckdb.connect()
    known = {r[0].lower() for r in con.execute("SELECT function_name FROM duckdb_functions()").fetchall()}
    allowed = allowed_functions()
    assert allowed <= known, sorted(allowed - known)  # a typo or a DuckDB change shows here
    assert len(allowed) > 500  # ordinary functions are not starved
    dangerous = {n for n in known if n.startswith(("duckdb_", "pg_", "pragma_", "read_", "json_execute",
                                                     "json_serialize", "json_deserialize", "parquet_"))}
    dangerous |= {"query", "query_table", "current_setting", "getvariable", "glob", "write_log",
                  "getenv", "sniff_csv", "checkpoint", "force_checkpoint", "enable_logging"} & known
    assert not allowed & dangerous, sorted(allowed & dangerous)


def test_a_function_not_on_the_list_is_refused_by_name():
    # what a DuckDB upgrade might add: a function the gate has never heard of is refused
    con = duckdb.connect()
    con.execute("CREATE MACRO brand_new_function(x) AS x + 1")
    with pytest.raises(GateRejection) as caught:
        parse_select(con, "SELECT brand_new_function(1)")
    assert caught.value.kind == "sql" and "brand_new_function()" in caught.value.message
