"""Order dependencies that almost hold (a <= b for almost every row: min <= max, start <= end,
departure <= arrival), and the rows that break them.

Pairs of numeric (or of temporal) columns on a comparable scale (their 5-95 % ranges overlap)
are counted in one query per table (on a fixed-seed sample of a large table): rows with both
values, rows with a < b, rows with a > b. `a <= b` is a candidate when a < b in at least half of
the rows and a > b in at most `MAX_VIOLATIONS` of them (and at least one). Reported when the
names pair up as bounds (min/max, low/high, start/end, dep/arr, birth/death, ...); otherwise
only noted: two unrelated measurements can be ordered by accident.
"""

from __future__ import annotations

import re

from parquet_agent.audit.discover.base import NUMERIC, Candidate, Probe, Table, candidate, q
from parquet_agent.audit.discover.profile import ColumnProfile

MIN_ROWS = 50
MAX_VIOLATIONS = 0.005
_CHUNK = 30
_BOUNDS = (("min", "max"), ("low", "high"), ("lo", "hi"), ("start", "end"), ("begin", "end"),
           ("open", "close"), ("first", "last"), ("from", "to"), ("dep", "arr"),
           ("departure", "arrival"), ("birth", "death"), ("created", "updated"),
           ("start", "stop"), ("earliest", "latest"), ("lower", "upper"), ("sched", "actual"))


def bounds_named(a: str, b: str) -> bool:
    """Whether `a` and `b` are the lower and upper bound of one quantity by name: `b` is `a`
    with its lower-bound word made the upper one (min_temp/max_temp, TMIN/TMAX, dep_time/
    arr_time, birthYear/deathYear)."""
    na, nb = _norm(a), _norm(b)
    return any(low in na and na.replace(low, high, 1) == nb for low, high in _BOUNDS)


def _norm(name: str) -> str:
    return re.sub(r"[^0-9a-z]", "", name.lower())


def _family(kind: str) -> str:
    return "number" if kind in NUMERIC else kind


def _comparable(a: ColumnProfile, b: ColumnProfile) -> bool:
    if _family(a.kind) != _family(b.kind) or a.non_null < MIN_ROWS or b.non_null < MIN_ROWS:
        return False
    if a.kind in ("date", "timestamp"):
        return True
    qa, qb = a.quantiles_at(0.05, 0.95), b.quantiles_at(0.05, 0.95)
    if qa is None or qb is None:
        return False
    (la, ha), (lb, hb) = qa, qb
    return la <= hb and lb <= ha


def candidates(probe: Probe, table: Table,
               profiles: dict[str, ColumnProfile]) -> tuple[list[Candidate], int]:
    """(the named orders' violations, how many value-only orders were left unreported)"""
    cols = [c for c, p in profiles.items() if _family(p.kind) in ("number", "date", "timestamp")]
    pairs = [(a, b) for i, a in enumerate(cols) for b in cols[i + 1:]
             if _comparable(profiles[a], profiles[b])]
    out: list[Candidate] = []
    unnamed = 0
    for start in range(0, len(pairs), _CHUNK):
        part = pairs[start:start + _CHUNK]
        terms = ", ".join(
            f"count(*) FILTER (WHERE {q(a)} IS NOT NULL AND {q(b)} IS NOT NULL) AS n{i}, "
            f"count(*) FILTER (WHERE {q(a)} < {q(b)}) AS lt{i}, "
            f"count(*) FILTER (WHERE {q(a)} > {q(b)}) AS gt{i}" for i, (a, b) in enumerate(part))
        row = probe.one(f"SELECT {terms} FROM {table.source}")
        for i, (a, b) in enumerate(part):
            n, lt, gt = int(row[f"n{i}"]), int(row[f"lt{i}"]), int(row[f"gt{i}"])
            if n < MIN_ROWS:
                continue
            if lt < gt:
                a, b, lt, gt = b, a, gt, lt
            if lt >= 0.5 * n and 0 < gt <= MAX_VIOLATIONS * n:
                if bounds_named(a, b):
                    out.append(_finding(table, a, b, n, gt))
                else:
                    unnamed += 1
    return out, unnamed


def _finding(table: Table, a: str, b: str, n: int, bad: int) -> Candidate:
    return candidate(
        "order.violations", "consistency", table, [a, b], f"{a} > {b} in {table.view}",
        f"{a} <= {b} in all but {bad} of {n} rows with both; their names make them the bounds "
        "of one quantity", f"{q(a)} > {q(b)}", note=table.sampled,
        support={"rows": n, "violations": bad})
