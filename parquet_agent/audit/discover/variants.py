"""Respelled categories: rarer spellings of a frequent value (`HTML ` for `html`, `New york`
for `New York`, `U.S.` for `US`).

A rare value is no defect by itself (a small country, a new airline, a rare aircraft type are
valid), so frequency alone never reports: only a value that *respells* a more frequent value
of its column does. Two values respell each other when they are equal after lower-casing and
dropping whitespace and punctuation, or, for values holding digits (codes, versions, where
`1.0` is not `10`), after lower-casing and collapsing whitespace only. Read on repeated short
text columns (at least `MIN_REPEAT` rows per value on average, so names and addresses are
left out), over a fixed-seed sample of a large table; the finding's rows are every row of a
rarer spelling, counted by the gate over the whole view.
"""

from __future__ import annotations

from parquet_agent.audit.discover.base import Candidate, Probe, Table, candidate, q
from parquet_agent.audit.discover.profile import ColumnProfile

MIN_REPEAT = 10  # rows per distinct value, on average
MAX_DISTINCT = 100_000
MAX_LENGTH = 40  # mean characters: longer text is prose, not a category
SHOWN = 3


def spelling_key(column: str) -> str:
    """SQL for the value of `column` that respellings share."""
    c = q(column)
    return (f"CASE WHEN regexp_matches({c}, '[0-9]') "
            f"THEN lower(regexp_replace(trim({c}), '\\s+', ' ', 'g')) "
            f"ELSE regexp_replace(lower({c}), '[\\s[:punct:]]', '', 'g') END")


def _spellings(column: str, source: str) -> str:
    """Each non-null value with its rows, its key, and its key's most frequent value."""
    return (f"SELECT v, n, first_value(v) OVER w AS usual, max(n) OVER w AS best FROM "
            f"(SELECT {q(column)} AS v, count(*) AS n, {spelling_key(column)} AS k FROM {source} "
            f"WHERE {q(column)} IS NOT NULL GROUP BY ALL) WHERE k <> '' "
            f"WINDOW w AS (PARTITION BY k ORDER BY n DESC, v)")


def find(probe: Probe, table: Table, profiles: dict[str, ColumnProfile]) -> list[Candidate]:
    out: list[Candidate] = []
    for column, p in profiles.items():
        if not (p.kind == "text" and 1 < p.distinct <= MAX_DISTINCT
                and p.distinct * MIN_REPEAT <= p.non_null and (p.mean_length or 0) <= MAX_LENGTH):
            continue
        rows = probe.rows(f"SELECT v, n, usual, best FROM ({_spellings(column, table.source)}) "
                          f"WHERE n < best ORDER BY n DESC, v LIMIT 50")
        if not rows:
            continue
        shown = "; ".join(f"{r['v']!r} ({r['n']} rows) for {r['usual']!r} ({r['best']})"
                          for r in rows[:SHOWN])
        out.append(candidate(
            "variants.respellings", "validity", table, [column],
            f"{column} respells a frequent value in {table.view}",
            f"{len(rows)}{'+' if len(rows) == 50 else ''} value(s) of {column} differ from a more "
            f"frequent value only in case, spacing or punctuation: {shown}",
            f"{q(column)} IN (SELECT v FROM ({_spellings(column, table.view)}) WHERE n < best)",
            note=table.sampled, support={"values": len(rows)}))
    return out
