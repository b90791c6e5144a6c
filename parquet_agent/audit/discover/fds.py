"""Functional dependencies that almost hold (X -> Y: a code that maps to one name), and the rows
that break them.

X is a repeating identifier-like column (integer or short text, 2 or more rows per value on
average, at least `MIN_REPEATED` values that repeat); Y any other column that is neither
unique nor constant. One query per X counts, over a fixed-seed sample of a large table, the
X values with more than one Y; a dependency is a candidate when at most `MAX_BAD_GROUPS` of
the repeated X values break it (any share when X has at most `FEW_VALUES` repeated values). Its exact violations are then counted (g3: the rows to remove
for the dependency to hold, i.e. each X value's rows whose Y is not its most frequent Y) and it
is a candidate when they are at most `MAX_VIOLATIONS` of the rows. The finding's rows are
those: for each X value, the rows whose Y differs from its most frequent one (ties broken by
value). Reported only for a *label* dependency (Y has at least half as many values as X: a
code and its name); a *hierarchy* (state -> country, team -> league) is only noted, because
real hierarchies are broken legitimately (towns of one name in two countries, a team that
changed league), which the clean real tables measured showed. A violation that a period column
(a date, or a year/season number) explains, because (X, period) -> Y holds exactly, is a change
over time, only noted too (a team id reused for another franchise in another era).
"""

from __future__ import annotations

import re

from parquet_agent.audit.discover.base import Candidate, Probe, Table, candidate, q
from parquet_agent.audit.discover.profile import ColumnProfile

MIN_REPEATED = 10
MIN_GROUP = 2.0  # rows per X value, on average
MAX_BAD_GROUPS = 0.02
FEW_VALUES = 100
MAX_VIOLATIONS = 0.01
LABEL = 0.5  # Y's distinct values per X value for X -> Y to be a label, not a hierarchy
_CHUNK = 12  # count(DISTINCT) per group costs memory: few Y per query


def lhs_like(p: ColumnProfile) -> bool:
    return (p.kind in ("integer", "text") and (p.mean_length or 0) <= 40 and p.distinct >= 2
            and p.non_null >= MIN_GROUP * max(p.distinct, 1) and p.non_null >= 2 * MIN_REPEATED)


def rhs_like(p: ColumnProfile) -> bool:
    return (p.kind in ("integer", "text", "decimal", "date", "boolean") and p.distinct >= 2
            and p.distinct < 0.95 * p.non_null and (p.mean_length or 0) <= 200)


def candidates(probe: Probe, table: Table, profiles: dict[str, ColumnProfile]) -> list[tuple[str, str]]:
    """(X, Y) pairs that hold for all but a few repeated X values (on `table.source`)."""
    out = []
    rhs = [c for c, p in profiles.items() if rhs_like(p)]
    for x, px in profiles.items():
        if not lhs_like(px):
            continue
        ys = [y for y in rhs if y != x]
        for start in range(0, len(ys), _CHUNK):
            part = ys[start:start + _CHUNK]
            inner = ", ".join(f"count(DISTINCT {q(y)}) AS d{i}" for i, y in enumerate(part))
            outer = ", ".join(f"count(*) FILTER (WHERE n > 1 AND d{i} > 1) AS b{i}" for i in range(len(part)))
            row = probe.one(f"SELECT count(*) FILTER (WHERE n > 1) AS repeated, {outer} FROM "
                            f"(SELECT count(*) AS n, {inner} FROM {table.source} "
                            f"WHERE {q(x)} IS NOT NULL GROUP BY {q(x)})")
            repeated = int(row["repeated"])
            if repeated < MIN_REPEATED:
                break
            # few X values (codes) may all be broken by a few rows each: the exact count decides
            share = MAX_BAD_GROUPS if repeated > FEW_VALUES else 1.0
            out += [(x, y) for i, y in enumerate(part) if 0 < int(row[f"b{i}"]) <= share * repeated]
    return out


def _ranked(table: Table, x: str, y: str) -> str:
    cx, cy = q(x), q(y)
    return (f"SELECT {cx}, {cy}, count(*) AS c, row_number() OVER (PARTITION BY {cx} "
            f"ORDER BY count(*) DESC, {cy}) AS r FROM {table.view} "
            f"WHERE {cx} IS NOT NULL AND {cy} IS NOT NULL GROUP BY {cx}, {cy}")


def periods(profiles: dict[str, ColumnProfile]) -> list[str]:
    """Columns that name a period: dates, timestamps, and integers named year/season."""
    return [c for c, p in profiles.items() if p.kind in ("date", "timestamp") or (
        p.kind == "integer" and re.search(r"year|season|yr$", c, re.IGNORECASE))]


def _explained(probe: Probe, table: Table, x: str, y: str, period: str) -> bool:
    cx, cy, ct = q(x), q(y), q(period)
    row = probe.one(f"SELECT count(*) AS bad FROM (SELECT {cx}, {ct} FROM {table.view} WHERE "
                    f"{cx} IS NOT NULL AND {cy} IS NOT NULL AND {ct} IS NOT NULL "
                    f"GROUP BY {cx}, {ct} HAVING count(DISTINCT {cy}) > 1)")
    return int(row["bad"]) == 0


def violation(probe: Probe, table: Table, x: str, y: str,
              profiles: dict[str, ColumnProfile]) -> Candidate | None:
    row = probe.one(f"SELECT sum(c) AS rows, sum(c) FILTER (WHERE r > 1) AS bad, "
                    f"count(DISTINCT {q(x)}) FILTER (WHERE r > 1) AS groups FROM ({_ranked(table, x, y)})")
    rows, bad = int(row["rows"] or 0), int(row["bad"] or 0)
    if bad == 0 or bad > MAX_VIOLATIONS * rows:
        return None
    cx, cy = q(x), q(y)
    label = profiles[y].distinct >= LABEL * profiles[x].distinct
    over_time = next((t for t in periods(profiles) if t not in (x, y)
                      and _explained(probe, table, x, y, t)), None) if label else None
    return candidate(
        "fds.violations", "consistency", table, [x, y],
        f"{x} -> {y} broken in {table.view}",
        f"each {x} has one {y} in all but {bad} of {rows} rows: {row['groups']} {x} value(s) "
        f"map to more than one {y}; these rows differ from their {x}'s usual {y}"
        + ("" if label else f"; {y} groups {x} (a hierarchy, noted, not reported)")
        + (f"; within each {over_time} it holds: a change over time (noted, not reported)"
           if over_time else ""),
        f"({cx}, {cy}) IN (SELECT {cx}, {cy} FROM ({_ranked(table, x, y)}) WHERE r > 1)",
        report=label and over_time is None, note=table.sampled, support={"rows": rows, "violations": bad, "groups": row["groups"]})
