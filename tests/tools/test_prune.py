"""What `prune.required_text` reads from DuckDB's real parse trees: which conditions on
parsed_md it uses, and every shape where using one would change a result (so it must not)."""

from __future__ import annotations

import json

import duckdb
import pytest

from parquet_agent.corpus.skipindex import AllOf, AnyOf, Literal
from parquet_agent.tools.prune import like_parts, regex_runs, required_text


@pytest.fixture(scope="module")
def con():
    return duckdb.connect()


def need(con, sql: str):
    (text,) = con.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()
    return required_text(json.loads(text))


@pytest.mark.parametrize("sql, expected", [
    ("SELECT * FROM filings WHERE contains(parsed_md, 'Going Concern')", Literal("Going Concern")),
    ("SELECT count(*) FROM filings f WHERE contains(f.parsed_md, 'ab') AND year = 2025", Literal("ab")),
    ("SELECT 1 FROM filings WHERE parsed_md ILIKE '%going_concern%'",
     AllOf((Literal("going", True), Literal("concern", True)))),
    ("SELECT 1 FROM filings WHERE parsed_md LIKE '%100$%%' ESCAPE '$'", Literal("100%")),
    ("SELECT 1 FROM filings WHERE parsed_md LIKE '%a\\%b%'", AllOf((Literal("a\\"), Literal("b")))),
    ("SELECT 1 FROM filings WHERE starts_with(parsed_md, 'ACCESSION')", Literal("ACCESSION")),
    ("SELECT 1 FROM filings WHERE contains(lower(parsed_md), 'net loss')", Literal("net loss", True)),
    ("SELECT 1 FROM filings WHERE contains(lower(substr(parsed_md, 1, 3000)), 'acme')", Literal("acme", True)),
    ("SELECT 1 FROM filings WHERE left(trim(parsed_md), 50) LIKE '%Form 10-K%'", Literal("Form 10-K")),
    ("SELECT 1 FROM filings WHERE regexp_matches(parsed_md, 'substantial\\s+doubt')",
     AllOf((Literal("substantial"), Literal("doubt")))),
    ("SELECT 1 FROM filings WHERE regexp_matches(parsed_md, 'Acme Corp', 'i')", Literal("Acme Corp", True)),
    ("SELECT 1 FROM filings WHERE regexp_matches(parsed_md, 'a.b', 'l')", Literal("a.b")),
    ("SELECT 1 FROM filings WHERE contains(parsed_md, 'x1') OR parsed_md ILIKE '%y2%'",
     AnyOf((Literal("x1"), Literal("y2", True)))),
    ("SELECT 1 FROM filings WHERE (contains(parsed_md, 'x1') OR contains(parsed_md, 'x2')) AND char_count > 5",
     AnyOf((Literal("x1"), Literal("x2")))),
    ("SELECT month, count(*) FROM filings WHERE contains(parsed_md, 'q') GROUP BY month "
     "HAVING count(*) > 1 ORDER BY 2 DESC LIMIT 3", Literal("q")),
])
def test_conditions_it_uses(con, sql, expected):
    assert need(con, sql) == expected


@pytest.mark.parametrize("sql", [
    "SELECT count(*) FROM filings",
    "SELECT * FROM filings WHERE NOT contains(parsed_md, 'x')",
    "SELECT * FROM filings WHERE parsed_md NOT LIKE '%x%'",
    "SELECT * FROM filings WHERE contains(parsed_md, 'x') OR year = 2025",  # OR with an unprunable branch
    "SELECT * FROM filings WHERE contains(file_stem, 'x')",
    "SELECT * FROM filings WHERE contains(upper(parsed_md), 'X')",
    "SELECT * FROM filings WHERE contains(replace(parsed_md, 'a', 'b'), 'xbx')",
    "SELECT * FROM filings WHERE contains(substr('abc', 1, 2), 'ab')",
    "SELECT * FROM filings WHERE contains(parsed_md, 'x') = false",
    "SELECT * FROM filings WHERE coalesce(contains(parsed_md, 'x'), true)",
    "SELECT * FROM filings WHERE parsed_md LIKE '%'",
    "SELECT * FROM filings WHERE contains(parsed_md, '')",
    # filings read twice: restricting it would change the other read
    "SELECT a.file_stem FROM filings a JOIN filings b USING (md5) WHERE contains(a.parsed_md, 'x')",
    "SELECT (SELECT count(*) FROM filings) AS n, file_stem FROM filings WHERE contains(parsed_md, 'x')",
    "SELECT * FROM filings WHERE contains(parsed_md, 'x') UNION ALL SELECT * FROM filings",
    # filings in a join, a sample, or shadowed by a CTE of that name
    "SELECT * FROM filings, range(3) WHERE contains(parsed_md, 'x')",
    "SELECT * FROM main.filings WHERE contains(parsed_md, 'x')",
    "SELECT * FROM filings TABLESAMPLE 10 ROWS WHERE contains(parsed_md, 'x')",
    "WITH filings AS (SELECT 'x' AS parsed_md) SELECT * FROM filings WHERE contains(parsed_md, 'x')",
    # the condition is not on the rows read from filings
    "SELECT * FROM (SELECT * FROM filings) t WHERE contains(parsed_md, 'x')",
    "SELECT * FROM filings WHERE file_stem IN (SELECT 'a' WHERE contains('abc', 'x'))",
    # regular expressions we do not read
    "SELECT * FROM filings WHERE regexp_matches(parsed_md, 'abc|def')",
    "SELECT * FROM filings WHERE regexp_matches(parsed_md, '(?i)abc')",
    "SELECT * FROM filings WHERE regexp_matches(parsed_md, '\\x41BC')",
    "SELECT * FROM filings WHERE regexp_matches(parsed_md, 'abc', 'q')",
    "SELECT * FROM filings WHERE regexp_full_match(parsed_md, 'abc')",
    "SELECT * FROM filings WHERE parsed_md LIKE 'x$' ESCAPE '$'",  # malformed: DuckDB decides
    "not sql at all",
])
def test_shapes_it_leaves_alone(con, sql):
    assert need(con, sql) is None


def test_like_parts():
    assert like_parts("%a_b%c%", None) == ["a", "b", "c"]
    assert like_parts("50\\%_off", "\\") == ["50%", "off"]
    assert like_parts("a\\", "\\") is None
    assert like_parts("%%__", None) == []


def test_regex_runs():
    assert regex_runs("net (loss)") is None
    assert regex_runs("colou?r") == ["colo", "r"]
    assert regex_runs("ab+c") == ["ab", "c"]
    assert regex_runs("x{2}yz") == ["yz"]
    assert regex_runs("[a-z]{2,}Corp\\.") == ["Corp."]
    assert regex_runs("a[]b]c") == ["a", "c"]
    assert regex_runs("\\d+ million") == [" million"]
    assert regex_runs("[[:alpha:]]x") is None
