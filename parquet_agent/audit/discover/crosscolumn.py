"""Cross-column consistency: a column that equals an arithmetic of two others in almost every
row (and the rows where it does not), and two columns whose values were swapped.

Arithmetic: for numeric columns a, b, c of one table, `c = a + b` and `c = a - b` are counted on
a fixed-seed sample (at most `SAMPLE` rows, every candidate in a few batched queries). Integer
columns that read as clock times (HHMM: 0..2400, minutes < 60) also enter as minutes since
midnight, so a delay equal to a difference of clock times is found. A relation is a candidate
when it holds in at least `HOLDS` of the sampled rows with all three values, a and b are each
non-zero in at least half of them (else `c = a` is the simpler truth) and c is not simply
equal to a or b. The finding's rows are those where it fails; when most of them are off by the
same amount (1,440 minutes: a day), the title says so.

Swaps: two numeric columns whose central ranges (5-95 %) lie apart, by at least half the
narrower one's width (a latitude and a longitude), and rows where each value sits in the
other's central range and far outside its own (beyond its central range widened by its width
on each side). (Adjacent ranges were measured to give false alarms on clean real
tables: a legitimately extreme pair of values.)
"""

from __future__ import annotations

from parquet_agent.audit.discover.base import NUMERIC, Candidate, Probe, Table, candidate, lit, q
from parquet_agent.audit.discover.profile import ColumnProfile

SAMPLE = 20_000
HOLDS = 0.99
MIN_ROWS = 50
_CHUNK = 24  # four counts per relation: under the output's 100 columns


def _clock(p: ColumnProfile) -> bool:
    return (p.kind == "integer" and p.low is not None and p.high is not None
            and p.low >= 0 and p.high <= 2400 and p.distinct >= 60)


def _terms(profiles: dict[str, ColumnProfile], clocks: set[str]) -> dict[str, str]:
    """Column expression by name: plain numbers, and HHMM clocks as minutes."""
    out = {c: f"CAST({q(c)} AS DOUBLE)" for c, p in profiles.items()
           if p.kind in NUMERIC and p.finite >= MIN_ROWS and p.distinct >= 3}
    for c in clocks:
        out[f"minutes({c})"] = f"(({q(c)} // 100) * 60 + {q(c)} % 100)::DOUBLE"
    return out


def _clocks(probe: Probe, table: Table, profiles: dict[str, ColumnProfile]) -> set[str]:
    cols = [c for c, p in profiles.items() if _clock(p)]
    if not cols:
        return set()
    row = probe.one("SELECT " + ", ".join(
        f"count(*) FILTER (WHERE {q(c)} % 100 >= 60) AS c{i}" for i, c in enumerate(cols))
        + f" FROM {table.view}")
    return {c for i, c in enumerate(cols) if int(row[f"c{i}"]) == 0}


def _relations(terms: dict[str, str]) -> list[tuple[str, str, str, str]]:
    """(c, op, a, b): c = a + b (a < b by name) and c = a - b, over distinct source columns."""
    names = sorted(terms)
    base = {n: n[8:-1] if n.startswith("minutes(") else n for n in names}
    out = []
    for c in sorted(names, key=lambda n: n.startswith("minutes(")):  # plain results first
        for a in names:
            for b in names:
                if len({base[c], base[a], base[b]}) < 3:
                    continue
                if a < b:
                    out.append((c, "+", a, b))
                out.append((c, "-", a, b))
    return out


def arithmetic(probe: Probe, table: Table, profiles: dict[str, ColumnProfile]) -> list[Candidate]:
    terms = _terms(profiles, _clocks(probe, table, profiles))
    relations = _relations(terms)
    sample = (f"(SELECT * FROM {table.view} USING SAMPLE reservoir({SAMPLE} ROWS) REPEATABLE (7))"
              if table.rows > SAMPLE else table.view)
    out = []
    for start in range(0, len(relations), _CHUNK):
        part = relations[start:start + _CHUNK]
        cols = []
        for i, (c, op, a, b) in enumerate(part):
            x, y, z = terms[a], terms[b], terms[c]
            present = f"{x} IS NOT NULL AND {y} IS NOT NULL AND {z} IS NOT NULL"
            cols.append(f"count(*) FILTER (WHERE {present}) AS n{i}, "
                        f"count(*) FILTER (WHERE {_holds(z, op, x, y)}) AS h{i}, "
                        f"count(*) FILTER (WHERE {present} AND {x} <> 0 AND {y} <> 0) AS nz{i}, "
                        f"count(*) FILTER (WHERE {z} = {x} OR {z} = {y}) AS eq{i}")
        row = probe.one(f"SELECT {', '.join(cols)} FROM {sample}")
        for i, rel in enumerate(part):
            n, h, nz, eq = (int(row[f"{k}{i}"]) for k in ("n", "h", "nz", "eq"))
            if n >= MIN_ROWS and HOLDS * n <= h < n and nz >= 0.5 * n and eq < 0.5 * n:
                out.append(rel)
    found: dict[frozenset, Candidate] = {}
    for rel in out:
        # c = a - b, a = c + b and b = a - c are one relation: the first form found is kept
        key = frozenset(t[8:-1] if t.startswith("minutes(") else t for t in (rel[0], rel[2], rel[3]))
        if key not in found and (broken := _violations(probe, table, terms, rel)) is not None:
            found[key] = broken
    return list(found.values())


def _holds(z: str, op: str, x: str, y: str) -> str:
    return f"abs({z} - ({x} {op} {y})) <= 1e-6 * (1 + abs({z}))"


def _violations(probe: Probe, table: Table, terms: dict[str, str],
                rel: tuple[str, str, str, str]) -> Candidate | None:
    c, op, a, b = rel
    x, y, z = terms[a], terms[b], terms[c]
    present = f"{x} IS NOT NULL AND {y} IS NOT NULL AND {z} IS NOT NULL"
    broken = f"{present} AND NOT ({_holds(z, op, x, y)})"
    rows = probe.rows(f"SELECT round({z} - ({x} {op} {y}), 6) AS off, count(*) AS n FROM {table.view} "
                      f"WHERE {broken} GROUP BY 1 ORDER BY n DESC, off LIMIT 3")
    total = probe.one(f"SELECT count(*) AS n, count(*) FILTER (WHERE {broken}) AS bad FROM {table.view} WHERE {present}")
    n, bad = int(total["n"]), int(total["bad"])
    if bad == 0 or bad > (1 - HOLDS) * n:
        return None
    off = rows[0] if rows else None
    common = off if off is not None and int(off["n"]) >= 0.5 * bad else None
    source = sorted({t[8:-1] if t.startswith("minutes(") else t for t in (a, b, c)})
    title = f"{c} <> {a} {op} {b} in {table.view}" + (
        f" (off by exactly {float(common['off']):g} in {common['n']} rows)" if common else "")
    return candidate(
        "crosscolumn.arithmetic", "consistency", table, source, title,
        f"{c} = {a} {op} {b} in all but {bad} of {n} rows with all three"
        + ("; minutes(x) reads an HHMM clock time as minutes since midnight" if "minutes(" in a + b + c else ""),
        broken, support={"rows": n, "violations": bad, "common_offset": off and off["off"]})


def _apart(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether two 1-99 % ranges are separated by at least half the narrower one's width."""
    gap = max(b[0] - a[1], a[0] - b[1])
    return gap > 0 and gap >= 0.5 * min(a[1] - a[0], b[1] - b[0])


def _range(p: ColumnProfile) -> tuple[float, float] | None:
    """The 5-95 % range of a numeric column with enough finite values, else None."""
    if not (p.kind in NUMERIC and p.quantiles and p.finite >= MIN_ROWS):
        return None
    low, high = p.quantile(0.05), p.quantile(0.95)
    return (low, high) if low is not None and high is not None else None


def swaps(probe: Probe, table: Table, profiles: dict[str, ColumnProfile]) -> list[Candidate]:
    # a column without both quantiles pairs with nothing (as _apart refused it)
    ranges = {c: r for c, p in profiles.items() if (r := _range(p)) is not None}
    pairs = [(a, b) for a in sorted(ranges) for b in sorted(ranges) if a < b and _apart(ranges[a], ranges[b])]
    if not pairs:
        return []

    def inside(col: str, other: str) -> str:
        low, high = ranges[other]
        pad = 0.1 * (high - low)
        return f"CAST({q(col)} AS DOUBLE) BETWEEN {lit(low - pad)} AND {lit(high + pad)}"

    def far(col: str) -> str:
        low, high = ranges[col]
        w = high - low
        return f"CAST({q(col)} AS DOUBLE) NOT BETWEEN {lit(low - w)} AND {lit(high + w)}"

    preds = [f"({inside(a, b)}) AND ({inside(b, a)}) AND ({far(a)}) AND ({far(b)})"
             for a, b in pairs[:60]]
    row = probe.one("SELECT " + ", ".join(f"count(*) FILTER (WHERE {p}) AS s{i}"
                                          for i, p in enumerate(preds)) + f" FROM {table.view}")
    out = []
    for i, (a, b) in enumerate(pairs[:60]):
        n = int(row[f"s{i}"])
        if 0 < n <= 0.01 * table.rows:
            out.append(candidate(
                "crosscolumn.swaps", "consistency", table, [a, b], f"{a} and {b} swapped in {table.view}",
                f"{a} and {b} never share a range (5-95 %: {ranges[a][0]:g}..{ranges[a][1]:g} vs "
                f"{ranges[b][0]:g}..{ranges[b][1]:g}); in {n} row(s) each holds a value of the other's range, far from its own",
                preds[i], support={"rows": n}))
    return out
