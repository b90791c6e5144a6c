"""Near-keys and their duplicates (unique column combinations that almost hold).

A column is a key candidate when nearly every non-null value is distinct (HyperLogLog says at
least 90 %), it is an identifier-like kind (integer or a text code, never a float, a date or
free text: names, cities and addresses repeat legitimately) and it has at least 20 values. The
exact duplicate count is then taken per hash partition (at most `PARTITION_ROWS` rows each, so
the 128 MiB worker holds the hash table). A near-key (at most 1 % of its values, or one, are extra copies) is
*reported* only with evidence that it is meant to be a key: its name says so (`id`, `code`,
`key`, `no`, ...), another table refers to it, or it is a fixed-width code; otherwise the
duplicates are only noted.

Rows repeated in full (every column equal, nulls included: a row loaded twice) are counted the
same way, over a hash of the whole row. They are reported when the table has an identifier to
repeat (a key-named column or a text code with at least `IDENTIFYING` of its values distinct: a
player, not a postal code): a table of categories and a few measured quantities (iris' five
columns of one-decimal lengths, a store's line items) repeats rows by coincidence, so there
they are only noted.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from parquet_agent.audit.discover.base import Candidate, Probe, Table, candidate, q
from parquet_agent.audit.discover.profile import ColumnProfile

MIN_VALUES = 20
APPROX_UNIQUE = 0.9  # HyperLogLog's distinct share that makes a column worth an exact count
NEAR_KEY = 0.01  # at most this share of the non-null values may be extra copies (or one)
PARTITION_ROWS = 2_000_000
IDENTIFYING = 0.2  # distinct share of an identifier of individual rows' entities (not a category)
_KEY_NAME = re.compile(r"(^|[_\s.-])(id|key|code|no|nr|num|number|uuid|guid|ref|sku)$|[a-z](ID|Id|Key|Code|No|Num)$",
                       re.IGNORECASE)


def key_named(column: str) -> bool:
    return column.lower() == "id" or bool(_KEY_NAME.search(column))


def fixed_width_code(p: ColumnProfile) -> bool:
    return (p.kind == "text" and p.spaced == 0 and p.min_length is not None
            and p.max_length is not None and p.max_length - p.min_length <= 2
            and p.max_length <= 24)


def key_candidate(p: ColumnProfile) -> bool:
    return (p.kind in ("integer", "text") and not p.free_text and p.non_null >= MIN_VALUES
            and p.distinct >= APPROX_UNIQUE * p.non_null)


@dataclass(frozen=True)
class KeyCount:
    column: str
    non_null: int
    distinct: int
    duplicated_rows: int  # rows whose value occurs more than once

    @property
    def unique(self) -> bool:
        return self.duplicated_rows == 0


def count_keys(probe: Probe, table: Table, columns: list[str]) -> dict[str, KeyCount]:
    """Exact distinct and duplicated-row counts of `columns`, per hash partition."""
    out: dict[str, KeyCount] = {}
    parts = max(1, math.ceil(table.rows / PARTITION_ROWS))
    for column in columns:
        c = q(column)
        nn = distinct = duplicated = 0
        for i in range(parts):
            where = f"{c} IS NOT NULL" + (f" AND hash({c}) % {parts} = {i}" if parts > 1 else "")
            row = probe.one(f"SELECT coalesce(sum(n), 0) AS nn, count(*) AS d, "
                            f"coalesce(sum(n) FILTER (WHERE n > 1), 0) AS dup FROM "
                            f"(SELECT count(*) AS n FROM {table.view} WHERE {where} GROUP BY {c})")
            nn, distinct, duplicated = nn + int(row["nn"]), distinct + int(row["d"]), duplicated + int(row["dup"])
        out[column] = KeyCount(column, nn, distinct, duplicated)
    return out


def duplicates(table: Table, count: KeyCount, profile: ColumnProfile,
               referenced: bool, documented: bool = False) -> Candidate | None:
    """The finding for a near-key's duplicated values (None for a key or a non-key); a key
    the dataset documents is one however many of its values repeat."""
    repeated = count.non_null - count.distinct
    if count.unique or (repeated > max(1.0, NEAR_KEY * count.non_null) and not documented):
        return None
    c = q(count.column)
    evidence = ("the dataset documents it as unique" if documented else
                "another table refers to it" if referenced else
                "its name marks an identifier" if key_named(count.column) else
                "it is a fixed-width code" if fixed_width_code(profile) else None)
    rationale = (f"{count.column} is a key for all but {count.duplicated_rows} of its "
                 f"{count.non_null} values ({count.distinct} distinct; {repeated} extra copies)"
                 + (f"; {evidence}" if evidence else "; nothing but its near-uniqueness marks it as a key"))
    return candidate("keys.duplicates", "uniqueness", table, [count.column],
                     f"{count.column} is duplicated in {table.view}", rationale,
                     f"{c} IN (SELECT {c} FROM {table.view} GROUP BY {c} HAVING count(*) > 1)",
                     report=evidence is not None,
                     support={"non_null": count.non_null, "distinct": count.distinct,
                              "duplicated_rows": count.duplicated_rows})


def repeated_rows(probe: Probe, table: Table, profiles: dict[str, ColumnProfile]) -> Candidate | None:
    """The finding for rows that repeat another row in every column, or None."""
    columns = [c for c, _ in table.columns]
    if len(columns) < 2 or table.rows < MIN_VALUES:
        return None
    row_hash = f"hash({', '.join(q(c) for c in columns)})"
    parts = max(1, math.ceil(table.rows / PARTITION_ROWS))
    repeated = extra = 0
    for i in range(parts):
        where = f" WHERE {row_hash} % {parts} = {i}" if parts > 1 else ""
        row = probe.one(f"SELECT coalesce(sum(n) FILTER (WHERE n > 1), 0) AS dup, "
                        f"coalesce(sum(n - 1), 0) AS extra FROM "
                        f"(SELECT count(*) AS n FROM {table.view}{where} GROUP BY {row_hash})")
        repeated, extra = repeated + int(row["dup"]), extra + int(row["extra"])
    if extra == 0:
        return None
    named = [c for c in columns if profiles[c].distinct_share >= IDENTIFYING and (
        key_named(c) or (profiles[c].kind == "text" and not profiles[c].free_text))]
    evidence = (f"the repeated rows carry their identifiers too ({', '.join(named[:3])})" if named
                else "the table has no identifier: a few measured values repeat by coincidence")
    return candidate(
        "keys.repeated_rows", "uniqueness", table, columns,
        f"rows repeated in full in {table.view}",
        f"{repeated} rows are equal to another row in all {len(columns)} columns ({extra} extra "
        f"copies); {evidence}",
        f"{row_hash} IN (SELECT {row_hash} FROM {table.view} GROUP BY 1 HAVING count(*) > 1)",
        report=bool(named), support={"rows": repeated, "extra": extra})
