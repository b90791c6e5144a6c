"""Time series: a time column (a date or timestamp, or year/month/day/hour parts) with the
grouping column that makes it a key, its regular step, the instants missing from the grid and
the instants given twice.

The series key is the time alone or (group, time) with the fewest group values that makes it
unique in at least `NEAR_UNIQUE` of the rows (a sensor, a station, an airport). Its step is the
most common difference between consecutive instants of a group; the series is regular when at
least `REGULAR` of the differences are that step (a fixed number of seconds, or a calendar
month or year). Only then are its holes reported (a grid point between a group's first and last
instant with no row: a count over the generated grid, not a set of rows) and its repeated
instants (rows whose (group, time) occurs twice: a daylight-saving hour written twice).
Irregular series (trading days, event logs) get no grid and no finding.
"""

from __future__ import annotations

from dataclasses import dataclass

from parquet_agent.audit.discover.base import Candidate, Probe, Table, candidate, q
from parquet_agent.audit.discover.profile import ColumnProfile

NEAR_UNIQUE = 0.98
REGULAR = 0.9
MIN_STEPS = 20
MAX_MISSING = 0.2  # a grid missing more than this is not a regular series with holes
MAX_GRID = 5_000_000
MAX_GROUPS = 500
_PARTS = (("year",), ("month",), ("day",), ("hour",))


@dataclass(frozen=True)
class Axis:
    expr: str  # a TIMESTAMP expression over the table's columns
    columns: tuple[str, ...]
    label: str


def axes(probe: Probe, table: Table, profiles: dict[str, ColumnProfile]) -> list[Axis]:
    """The table's time axes: its timestamp/date columns and the text columns whose values all
    read as timestamps, else its year/month/day/hour parts."""
    out = [Axis(f"CAST({q(c)} AS TIMESTAMP)", (c,), c) for c, p in profiles.items()
           if p.kind in ("date", "timestamp") and p.distinct >= MIN_STEPS]
    texts = [c for c, p in profiles.items() if p.kind == "text" and p.distinct >= MIN_STEPS
             and (p.min_length or 0) >= 8 and (p.max_length or 99) <= 32]
    if texts:
        row = probe.one("SELECT " + ", ".join(
            f"count({q(c)}) = count(TRY_CAST({q(c)} AS TIMESTAMP)) AS t{i}"
            for i, c in enumerate(texts)) + f" FROM {table.source}")
        out += [Axis(f"TRY_CAST({q(c)} AS TIMESTAMP)", (c,), c)
                for i, c in enumerate(texts) if row[f"t{i}"]]
    if out:
        return out
    parts = {}
    for name, p in profiles.items():
        if p.kind == "integer" and name.lower() in ("year", "month", "day", "hour"):
            parts[name.lower()] = name
    if "year" in parts and "month" in parts:
        day, hour = parts.get("day"), parts.get("hour")
        expr = (f"make_timestamp({q(parts['year'])}, {q(parts['month'])}, "
                f"{q(day) if day else '1'}, {q(hour) if hour else '0'}, 0, 0)")
        cols = tuple(parts[k] for k in ("year", "month", "day", "hour") if k in parts)
        return [Axis(expr, cols, "/".join(cols))]
    return []


def _groups(profiles: dict[str, ColumnProfile], axis: Axis) -> list[str]:
    return sorted((c for c, p in profiles.items() if c not in axis.columns
                   and p.kind in ("text", "integer") and not p.free_text
                   and 2 <= p.distinct <= MAX_GROUPS),
                  key=lambda c: (profiles[c].distinct, c))


def series_key(probe: Probe, table: Table, axis: Axis,
               profiles: dict[str, ColumnProfile]) -> tuple[str | None, int, int] | None:
    """(group column or None, rows, distinct keys) of the first near-unique key."""
    for group in [None, *_groups(profiles, axis)][:12]:
        key = axis.expr if group is None else f"{q(group)}, {axis.expr}"
        row = probe.one(f"SELECT count(*) AS n, count(DISTINCT ({key})) AS d FROM {table.source} "
                        f"WHERE {_present(axis, group)}")
        n, d = int(row["n"]), int(row["d"])
        if n >= MIN_STEPS and d >= NEAR_UNIQUE * n:
            return group, n, d
    return None


def _present(axis: Axis, group: str | None) -> str:
    cols = [*axis.columns, *([group] if group else [])]
    return " AND ".join(f"{q(c)} IS NOT NULL" for c in cols)


def _keys_sql(table: Table, axis: Axis, group: str | None) -> str:
    g = f"{q(group)} AS g" if group else "NULL AS g"
    return f"SELECT DISTINCT {g}, {axis.expr} AS t FROM {table.view} WHERE {_present(axis, group)}"


def step(probe: Probe, table: Table, axis: Axis, group: str | None) -> str | None:
    """The series' regular step as an INTERVAL literal, or None when it is irregular."""
    rows = probe.rows(
        f"SELECT s, count(*) AS n FROM (SELECT epoch(t - lag(t) OVER (PARTITION BY g ORDER BY t)) "
        f"AS s FROM ({_keys_sql(table, axis, group)})) WHERE s IS NOT NULL GROUP BY s ORDER BY n DESC, s LIMIT 40")
    total = sum(int(r["n"]) for r in rows)
    if total < MIN_STEPS or not rows:
        return None
    top, n = float(rows[0]["s"]), int(rows[0]["n"])
    if top > 0 and n >= REGULAR * total:
        return f"INTERVAL '{int(top)} seconds'" if top == int(top) else None
    day = 86400.0
    for unit, low, high in (("1 month", 28, 31), ("1 year", 365, 366)):
        within = sum(int(r["n"]) for r in rows if low * day <= float(r["s"]) <= high * day)
        if within >= REGULAR * total:
            return f"INTERVAL '{unit}'"
    return None


def _grid(table: Table, axis: Axis, group: str | None, interval: str) -> str:
    g = f"{q(group)}" if group else "NULL"
    return (f"grid AS (SELECT g, unnest(generate_series(lo, hi, {interval})) AS t FROM "
            f"(SELECT {g} AS g, min({axis.expr}) AS lo, max({axis.expr}) AS hi FROM {table.view} "
            f"WHERE {_present(axis, group)} GROUP BY 1)), have AS ({_keys_sql(table, axis, group)})")


def gaps(probe: Probe, table: Table, axis: Axis, group: str | None,
         interval: str) -> Candidate | None:
    with_ = f"WITH {_grid(table, axis, group, interval)}"
    missing_rows = ("FROM grid LEFT JOIN have ON grid.t = have.t AND grid.g IS NOT DISTINCT FROM have.g "
                    "WHERE have.t IS NULL")
    count_sql = f"{with_} SELECT count(*) {missing_rows}"
    denominator_sql = f"{with_} SELECT count(*) FROM grid"
    row = probe.one(f"{with_} SELECT (SELECT count(*) FROM grid) AS grid, (SELECT count(*) {missing_rows}) AS missing")
    grid, missing = int(row["grid"]), int(row["missing"])
    if missing == 0 or missing > MAX_MISSING * grid:
        return None
    shown = f"{'grid.g AS ' + q(group) + ', ' if group else ''}grid.t AS missing_instant"
    per = f" per {group}" if group else ""
    args = {"category": "coverage", "columns": sorted({*axis.columns, *([group] if group else [])}),
            "title": f"{axis.label}{per} has {missing} missing step(s) in {table.view}",
            "rationale": f"{axis.label} is a regular series{per} with step {interval.split(chr(39))[1]}; "
                         f"{missing} of the {grid} instants between each series' first and last are absent",
            "count_sql": count_sql, "denominator_sql": denominator_sql,
            "examples_sql": f"{with_} SELECT {shown} {missing_rows} ORDER BY grid.t, 1 LIMIT 5",
            "view": table.view}
    return Candidate("timeseries.gaps", args, True, {"grid": grid, "missing": missing})


def repeats(table: Table, axis: Axis, group: str | None, rows: int, keys: int) -> Candidate | None:
    if keys == rows:
        return None
    key = f"{q(group)}, {axis.expr}" if group else axis.expr
    per = f" per {group}" if group else ""
    return candidate(
        "timeseries.repeats", "uniqueness", table, [*axis.columns, *([group] if group else [])],
        f"{axis.label}{per} repeated in {table.view}",
        f"({group + ', ' if group else ''}{axis.label}) identifies a row of a regular series in all "
        f"but {rows - keys} of {rows} rows: an instant given twice",
        f"({key}) IN (SELECT {key} FROM {table.view} WHERE {_present(axis, group)} "
        f"GROUP BY ALL HAVING count(*) > 1)",
        support={"rows": rows, "keys": keys})


def find(probe: Probe, table: Table, profiles: dict[str, ColumnProfile]) -> list[Candidate]:
    out: list[Candidate] = []
    for axis in axes(probe, table, profiles):
        key = series_key(probe, table, axis, profiles)
        if key is None:
            continue
        group, rows, keys = key
        interval = step(probe, table, axis, group)
        if interval is None:
            continue
        if table.sampled:  # a repeated instant is one row: count the whole table
            key_sql = axis.expr if group is None else f"{q(group)}, {axis.expr}"
            row = probe.one(f"SELECT count(*) AS n, count(DISTINCT ({key_sql})) AS d "
                            f"FROM {table.view} WHERE {_present(axis, group)}")
            rows, keys = int(row["n"]), int(row["d"])
        out += [c for c in (gaps(probe, table, axis, group, interval),
                            repeats(table, axis, group, rows, keys)) if c is not None]
    return out
