"""A measurement far outside the range its category holds: a longitude against its time zone, an
amount against its label (`sun` with rain in the gauge), where the data shows the rule.

A category column (text with 2..`MAX_GROUPS` values, or an integer with at most
`MAX_INTEGER_GROUPS`; ten rows or more a value) *sets* a
numeric column when the category's values sit in narrow, distinct bands of it: the quartiles
of each large group (`MIN_GROUP` rows or more) span at most `NARROW` of the column's central
90 % (5-95 %; row-weighted median over the groups), the groups' medians spread over at
least `APART` of it, and at most `SHARED` of the rows are in groups whose band meets another
group's (time zones are strips of longitude; altitudes by time zone are narrow but shared). Quartiles, not wider quantiles, so the rows that break the rule do not
widen their own group's band. A row of a large group whose value lies beyond its group's
quartiles widened by `PAD` times their distance (at least `MIN_PAD` of the column's central
90 %) on either side, and outside every other large group's widened band too (a 777's 400
seats are far from the two-engine band but in the four-engine one), breaks the rule; it is a candidate when such rows are at most
`MAX_BROKEN` of the rows, or `FEW` (a rule the data almost obeys). Read over a fixed-seed sample of a large table; identifiers (`skip`) are no
measurements.
"""

from __future__ import annotations

from parquet_agent.audit.discover.base import (NUMERIC, Candidate, Probe, Table, candidate, lit,
                                               number, q)
from parquet_agent.audit.discover.profile import ColumnProfile

MAX_GROUPS = 50
MAX_INTEGER_GROUPS = 12  # an integer category: a time zone's offset, a class
MIN_GROUP = 10
MIN_ROWS = 50
NARROW = 0.15
APART = 0.5
SHARED = 0.25  # at most this share of the rows may be in groups whose band meets another's
PAD = 3.0
MIN_PAD = 0.05
MAX_BROKEN = 0.01
FEW = 3  # rows that may break the rule in a small table
_CHUNK = 20


def _category(p: ColumnProfile) -> bool:
    # integers with more values are measurements themselves (two park factors, near equal,
    # would each "set" the other)
    limit = MAX_GROUPS if p.kind == "text" else MAX_INTEGER_GROUPS
    return (p.kind in ("text", "integer") and not p.free_text and 2 <= p.distinct <= limit
            and p.non_null >= MIN_ROWS and p.distinct * 10 <= p.non_null)


def find(probe: Probe, table: Table, profiles: dict[str, ColumnProfile],
         skip: set[str] | frozenset[str] = frozenset()) -> list[Candidate]:
    measures = [c for c, p in profiles.items() if p.kind in NUMERIC and p.finite >= MIN_ROWS
                and p.distinct >= 10 and c not in skip and p.quantiles_at(0.05, 0.95) is not None]
    out: list[Candidate] = []
    for g, pg in profiles.items():
        if not _category(pg) or g in skip:
            continue
        xs = [x for x in measures if x != g]
        for start in range(0, len(xs), _CHUNK):
            part = xs[start:start + _CHUNK]
            terms = ", ".join(f"approx_quantile(CAST({q(x)} AS DOUBLE), [0.25, 0.5, 0.75]) "
                              f"FILTER (WHERE isfinite(CAST({q(x)} AS DOUBLE))) AS x{i}"
                              for i, x in enumerate(part))
            rows = probe.rows(f"SELECT {q(g)} AS g, count(*) AS n, {terms} FROM {table.source} "
                              f"WHERE {q(g)} IS NOT NULL GROUP BY 1")
            for i, x in enumerate(part):
                bands = _bands(rows, f"x{i}")
                rule = _rule(bands, profiles[x])
                if rule is not None:
                    broken = _broken(probe, table, g, x, rule)
                    if broken is not None:
                        out.append(broken)
    return out


def _bands(rows: list[dict], key: str) -> list[tuple[object, int, float, float, float]]:
    """(group value, rows, q25, median, q75) of each large group."""
    out = []
    for r in rows:
        qs = [x for x in (number(v) for v in (r[key] or [])) if x is not None]
        if int(r["n"]) >= MIN_GROUP and len(qs) == 3:
            out.append((r["g"], int(r["n"]), qs[0], qs[1], qs[2]))
    return out


def _rule(bands: list, p: ColumnProfile) -> dict[object, tuple[float, float]] | None:
    """Each large group's allowed range when the groups set the column, else None."""
    at = p.quantiles_at(0.05, 0.95)
    if len(bands) < 2 or at is None or at[1] <= at[0]:
        return None
    width = at[1] - at[0]
    ordered = sorted(bands, key=lambda b: (b[4] - b[2]) / width)
    half, seen, typical = sum(b[1] for b in bands) / 2, 0, 0.0
    for b in ordered:  # the row-weighted median of the bands' relative widths
        seen += b[1]
        if seen >= half:
            typical = (b[4] - b[2]) / width
            break
    medians = [b[3] for b in bands]
    if typical > NARROW or max(medians) - min(medians) < APART * width:
        return None
    # the bands must lie apart, not merely be narrow: altitudes by time zone are narrow too,
    # but most zones share the same low band, and a mountain airport there is no defect
    shared = sum(b[1] for b in bands if any(o is not b and b[2] <= o[4] and o[2] <= b[4] for o in bands))
    if shared > SHARED * sum(b[1] for b in bands):
        return None
    out = {}
    for value, _, low, _, high in bands:
        pad = PAD * max(high - low, MIN_PAD * width)
        out[value] = (low - pad, high + pad)
    return out


def _broken(probe: Probe, table: Table, g: str, x: str, rule: dict) -> Candidate | None:
    value = f"CAST({q(x)} AS DOUBLE)"
    cases = " ".join(f"WHEN {lit(v)} THEN {value} < {lit(low)} OR {value} > {lit(high)}"
                     for v, (low, high) in sorted(rule.items(), key=lambda kv: str(kv[0])))
    # and in no other group's band either: a 777's 400 seats are far from the two-engine
    # planes' band but in the four-engine one's, a size of plane, not a defect
    nowhere = " AND ".join(f"{value} NOT BETWEEN {lit(low)} AND {lit(high)}"
                           for low, high in sorted(rule.values()))
    predicate = f"isfinite({value}) AND (CASE {q(g)} {cases} ELSE FALSE END) AND {nowhere}"
    row = probe.one(f"SELECT count(*) FILTER (WHERE {predicate}) AS bad, count({q(x)}) AS n FROM {table.view}")
    bad, n = int(row["bad"]), int(row["n"])
    if bad == 0 or bad > max(MAX_BROKEN * n, FEW):
        return None
    return candidate(
        "groups.range", "consistency", table, [g, x],
        f"{x} out of the range its {g} holds in {table.view}",
        f"each {g} holds {x} in a narrow band of its own (the quartiles of a {g} span at most "
        f"{NARROW:.0%} of the column's central 90 %, and the bands lie apart); {bad} of {n} rows lie far outside "
        f"their {g}'s band and every other's", predicate, note=table.sampled, support={"rows": n, "violations": bad})
