"""Outliers that are defects, not tails: values isolated from every neighbour, and values
outside the physical domain their column's name declares.

Isolation is tested on each tail separately, scale-aware: the 80 most extreme values of a side,
as excesses over the median, on a log scale (a power-law tail becomes exponential there, and
a light tail becomes lighter, so heavy-tailed real data -- long delays, a 747's seats, stock
prices -- does not look isolated). Under an exponential tail the normalised spacings
`i * (y_i - y_(i+1))` of the top order statistics are independent with one scale; the values
above gap `r` (r <= 20) are isolated when that gap's normalised spacing exceeds `THRESHOLD` times
the mean of the spacings below it, and the excess jumps at least `MIN_RATIO`-fold across the gap.
A value whose negation sits inside the column's central range is said to look sign-flipped.
Columns that name things (ids, either end of a reference) are not tested (`skip`), and values
whose rows are every row of their category (`grouped`: the airports of one far island) are a
population of their own, which `discover` notes instead of reporting.
The zeros of a column with no negative value are not its lower tail: zero is what a count or an
amount of nothing is (an empty text has 0 characters), a state of its own, not a scale error.

Domains (latitude in [-90, 90], longitude in [-180, 180], percentages in [0, 100]) are read
from column names; a value outside is impossible when the column's 1-99 % range is inside (a
column mostly outside is in another unit or encoding, e.g. integer semicircles).
"""

from __future__ import annotations

import math
import re

from parquet_agent.audit.discover.base import NUMERIC, Candidate, Probe, Table, candidate, q
from parquet_agent.audit.discover.profile import ColumnProfile

TAIL = 80
MAX_BLOCK = 20  # at most this many values above one gap (and a third of the tail read)
THRESHOLD = 8.0
MIN_RATIO = 3.0
MIN_VALUES = 30
_CHUNK = 20
DOMAINS = ((re.compile(r"(^|[^a-z])(lat|latitude)$", re.IGNORECASE), -90.0, 90.0),
           (re.compile(r"(^|[^a-z])(lon|lng|long|longitude)$", re.IGNORECASE), -180.0, 180.0),
           (re.compile(r"(percent|pct)$", re.IGNORECASE), 0.0, 100.0))


def isolated(values: list[float], median: float, floor: float = 0.0) -> tuple[int, float] | None:
    """(how many of the top `values` are isolated, a threshold between them and the rest), or
    None. `values` are one tail's most extreme values, most extreme first; only excesses over
    the median above `floor` (the quartile's) are the tail (near the median, log-excesses
    spread without meaning)."""
    excess = [v - median for v in values if v - median > max(floor, 0.0)]
    if len(excess) < 10:
        return None
    logs = [math.log(e) for e in excess]
    spacings = [(i + 1) * (logs[i] - logs[i + 1]) for i in range(len(logs) - 1)]
    for r in range(min(MAX_BLOCK, len(spacings) // 3), 0, -1):
        below = spacings[r:]
        scale = sum(below) / len(below)
        if scale <= 0:
            continue
        if spacings[r - 1] > THRESHOLD * scale and excess[r - 1] >= MIN_RATIO * excess[r]:
            cut = median + math.sqrt(excess[r - 1] * excess[r])
            return r, cut
    return None


def domain(column: str) -> tuple[float, float] | None:
    for pattern, low, high in DOMAINS:
        if pattern.search(column):
            return low, high
    return None


def find(probe: Probe, table: Table, profiles: dict[str, ColumnProfile],
         skip: set[str] | frozenset[str] = frozenset()) -> list[Candidate]:
    cols = [c for c, p in profiles.items() if p.kind in NUMERIC and p.finite >= MIN_VALUES
            and len(p.quantiles) and p.distinct >= 10 and c not in skip]
    def terms(i: int, c: str) -> str:
        x = f"CAST({q(c)} AS DOUBLE)"
        return (f"max({x}, {TAIL}) FILTER (WHERE isfinite({x})) AS hi{i}, "
                f"min({x}, {TAIL}) FILTER (WHERE isfinite({x}){_no_zero(profiles[c], x)}) AS lo{i}")

    out: list[Candidate] = []
    for c, get in probe.per_column(cols, terms, table.view, _CHUNK):
        out += _column(table, c, profiles[c], get("hi") or [], get("lo") or [])
    return out


def grouped(probe: Probe, table: Table, found: Candidate,
            profiles: dict[str, ColumnProfile]) -> str | None:
    """The category column (text, 2..30 values, ten rows or more a value) in which the rows of
    `found` are every row of their values, if any."""
    where = found.arguments["predicate"]
    for column, p in profiles.items():
        if not (p.kind == "text" and 1 < p.distinct <= 30 and p.distinct * 10 <= p.non_null):
            continue
        c = q(column)
        row = probe.one(f"SELECT count(*) FILTER (WHERE {c} IS NULL) AS unnamed, "
                        f"(SELECT count(*) FROM {table.view} WHERE {c} IN (SELECT {c} FROM "
                        f"{table.view} WHERE {where}) AND NOT coalesce(({where}), FALSE)) AS others "
                        f"FROM {table.view} WHERE {where}")
        if int(row["unnamed"]) == 0 and int(row["others"]) == 0:
            return column
    return None


def _no_zero(p: ColumnProfile, x: str) -> str:
    """The zeros left out of the lower tail of a column with no negative value."""
    return f" AND {x} <> 0" if p.low is not None and p.low >= 0 else ""


def _column(table: Table, column: str, p: ColumnProfile, high: list, low: list) -> list[Candidate]:
    out: list[Candidate] = []
    at = p.quantiles_at(0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99)
    bounds = domain(column)
    inside = bounds is not None and at is not None and bounds[0] <= at[0] and at[6] <= bounds[1]
    # a column mostly outside its domain is another unit or encoding, not a few bad rows
    if bounds is not None and inside and p.low is not None and p.high is not None and (
            p.low < bounds[0] or p.high > bounds[1]):
        out.append(candidate(
            "outliers.domain", "range", table, [column],
            f"{column} outside [{bounds[0]:g}, {bounds[1]:g}] in {table.view}",
            f"{column} is named as a quantity whose values lie in [{bounds[0]:g}, {bounds[1]:g}]",
            f"{q(column)} < {bounds[0]} OR {q(column)} > {bounds[1]}"))
    if at is None:  # no quantiles, so no median
        return out
    _, low_5, low_25, median, high_75, high_95, _ = at
    central = (low_5, high_95)
    for side, values in (("above", [float(v) for v in high]), ("below", [-float(v) for v in low])):
        quartile = high_75 if side == "above" else -low_25
        centre = median if side == "above" else -median
        hit = isolated(values, centre, (quartile or centre) - centre)
        if hit is None:
            continue
        r, cut = hit
        cut = cut if side == "above" else -cut
        flipped = all(central[0] <= -v <= central[1] for v in (values[:r] if side == "above" else [-v for v in values[:r]]))
        shown = ", ".join(f"{(v if side == 'above' else -v):g}" for v in values[:r])
        nearest = values[r] if side == "above" else -values[r]
        op = ">" if side == "above" else "<"
        out.append(candidate(
            "outliers.isolated", "range", table, [column],
            f"{column} isolated {side} its other values in {table.view}"
            + (" (sign flipped?)" if flipped else ""),
            f"{shown}: {r} value(s) {side} a gap in the tail, the nearest other value is {nearest:g} "
            f"and the median {median:g} (a jump no neighbour in the tail comes near, on a log scale)"
            + ("; their negations lie in the column's central 90 %" if flipped else ""),
            f"{q(column)} {op} {cut!r}", support={"values": r, "cut": cut}))
    return out
