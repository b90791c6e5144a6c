"""One pass of column statistics per table: what every discovery rule starts from.

`profile(probe, table) -> {column: ColumnProfile}`: non-null count, approximate distinct count
(HyperLogLog), for text the lengths and the share of values with whitespace (free text, not a
code), for numbers the finite count, min, max and approximate quantiles (t-digest). Streaming
aggregates only, so a table of any length fits the 128 MiB worker; NaN and ±inf are left out
of the numeric statistics (counted as `non_finite`).
"""

from __future__ import annotations

from dataclasses import dataclass

from parquet_agent.audit.discover.base import NUMERIC, Probe, Table, lit, number, q

QUANTILES = (0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99)
_CHUNK = 150  # columns per query (the output holds at most 200 rows)


@dataclass(frozen=True)
class ColumnProfile:
    column: str
    kind: str
    rows: int
    non_null: int
    distinct: int  # approximate
    min_length: float | None = None
    max_length: float | None = None
    mean_length: float | None = None
    spaced: int = 0  # text values with whitespace inside
    finite: int = 0
    low: float | None = None
    high: float | None = None
    quantiles: tuple[float, ...] = ()  # at QUANTILES, finite values only

    @property
    def distinct_share(self) -> float:
        return self.distinct / self.non_null if self.non_null else 0.0

    def quantile(self, p: float) -> float | None:
        if not self.quantiles:
            return None
        return self.quantiles[QUANTILES.index(p)]

    def quantiles_at(self, *ps: float) -> tuple[float, ...] | None:
        """The quantiles at `ps` (each one of QUANTILES), or None: a column has all or none."""
        if not self.quantiles:
            return None
        return tuple(self.quantiles[QUANTILES.index(p)] for p in ps)

    @property
    def free_text(self) -> bool:
        """Names, addresses, sentences: words, not codes."""
        return self.kind == "text" and self.non_null > 0 and (
            self.spaced > 0.1 * self.non_null or (self.mean_length or 0) > 40)


def _branch(name: str, kind: str) -> str:
    c = q(name)
    head = f"SELECT {lit(name)} AS col, count({c}) AS nn, approx_count_distinct({c}) AS d"
    empty = "NULL::DOUBLE AS minl, NULL::DOUBLE AS maxl, NULL::DOUBLE AS meanl, 0::BIGINT AS spaced"
    no_numbers = "0::BIGINT AS finite, NULL::DOUBLE AS lo, NULL::DOUBLE AS hi, NULL::DOUBLE[] AS qs"
    if kind == "text":
        text = (f"min(length({c}))::DOUBLE AS minl, max(length({c}))::DOUBLE AS maxl, "
                f"avg(length({c}))::DOUBLE AS meanl, "
                f"count(*) FILTER (regexp_matches(trim({c}), '\\s'))::BIGINT AS spaced")
        return f"{head}, {text}, {no_numbers}"
    if kind in NUMERIC:
        x = f"CAST({c} AS DOUBLE)"
        keep = f"FILTER (WHERE isfinite({x}))"
        nums = (f"count({x}) {keep} AS finite, min({x}) {keep} AS lo, max({x}) {keep} AS hi, "
                f"approx_quantile({x}, [{', '.join(map(str, QUANTILES))}]) {keep} AS qs")
        return f"{head}, {empty}, {nums}"
    return f"{head}, {empty}, {no_numbers}"


def profile(probe: Probe, table: Table) -> dict[str, ColumnProfile]:
    out: dict[str, ColumnProfile] = {}
    columns = list(table.columns)
    for start in range(0, len(columns), _CHUNK):
        part = columns[start:start + _CHUNK]
        sql = " UNION ALL ".join(f"({_branch(n, k)} FROM {table.view})" for n, k in part)
        kinds = dict(part)
        for row in probe.rows(sql):
            name = row["col"]
            qs = tuple(x for x in (number(v) for v in row["qs"] or ()) if x is not None)
            out[name] = ColumnProfile(
                name, kinds[name], table.rows, int(row["nn"]), int(row["d"] or 0),
                number(row["minl"]), number(row["maxl"]), number(row["meanl"]),
                int(row["spaced"] or 0), int(row["finite"] or 0), number(row["lo"]),
                number(row["hi"]), qs if len(qs) == len(QUANTILES) else ())
    return out
