"""The SQL of `get_stats`: a column's profile, bounded in memory on any type and any size.

Each builder returns one SELECT over a table's view; `AuditTools.get_stats` runs them in the
sandbox (one thread, 128 MiB, no spill). What keeps them inside that:

- numbers are profiled as DOUBLE (a DECIMAL(38,0) or HUGEINT too: JSON-able, never text) over
  their finite values only; NaN, +inf and -inf are counted apart (`non_finite`);
- quantiles are exact (`quantile_cont`, which holds every value) up to `Budget.exact_rows`
  rows (a million under 128 MiB: the limits scale with the worker's memory) and from a
  100,000-value reservoir sample above (`reservoir_quantile`: 2.1 s on 20 million doubles where
  the t-digest `approx_quantile` took 9.2 s; deterministic on the worker's one thread); the
  output says which parts were approximate;
- the top values are an exact GROUP BY up to `Budget.exact_distinct` distinct values (100,000
  under 128 MiB: a hash table of 2 million distinct doubles broke 128 MiB); above, `approx_top_k`
  over the raw values chooses the candidates (bounded memory) and one more scan counts them
  exactly; a near-unique column (90 % of its values distinct) has no top values to show and
  skips that scan, saying so;
- distinct counts are HyperLogLog (`approx_count_distinct`) everywhere, as before;
- a nested column (list, struct, map) is profiled as a whole (nulls, list lengths, empties) and
  by its leaves: each leaf path (`tags[]`, `address.city`, `attrs{keys}`) gets counts, distinct,
  min/max and, for numbers, mean and quantiles, up to `MAX_LEAVES` leaves of depth at most
  `MAX_DEPTH`; any other leaf is named in `skipped` with why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

TOP_VALUES = 10
RESERVOIR = 100_000  # values kept by reservoir_quantile above the exact limit
NEAR_UNIQUE = 0.9  # distinct share of the non-null values above which top values say nothing
MAX_LEAVES = 12
MAX_DEPTH = 4
QUANTILES = "[0.01, 0.25, 0.5, 0.75, 0.99]"
_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "FLOAT", "DOUBLE", "DECIMAL",
            "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT", "REAL", "NUMERIC")

Step = tuple[str, str]  # ("list", "") | ("field", name) | ("keys", "") | ("values", "")
_UNITS = {"b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "kib": 1024, "mib": 1024**2,
          "gib": 1024**3}


@dataclass(frozen=True)
class Budget:
    """Up to where a profile is exact, from the worker's DuckDB memory limit."""

    memory_bytes: int = 128 * 1024**2

    @classmethod
    def of(cls, memory_limit: str) -> Budget:
        match = re.fullmatch(r"\s*([0-9.]+)\s*([a-zA-Z]*)\s*", memory_limit)
        unit = _UNITS.get((match[2] if match else "").lower() or "b") if match else None
        if match is None or unit is None:
            return cls()
        return cls(int(float(match[1]) * unit))

    @property
    def exact_rows(self) -> int:  # 1,048,576 under 128 MiB: quantile_cont keeps every value
        return self.memory_bytes // 128

    @property
    def exact_distinct(self) -> int:  # 100,000 under 128 MiB: the GROUP BY's hash table
        return self.memory_bytes // 1342


def q(name: str) -> str:
    """A quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def is_numeric(kind: str) -> bool:
    return kind.upper().startswith(_NUMERIC) and not kind.endswith("]")


def is_text(kind: str) -> bool:
    return kind.upper() in ("VARCHAR", "STRING", "TEXT")


def basic_sql(view: str, col: str, kind: str, exact: bool) -> str:
    """Rows, nulls, distinct and the value statistics of the column's type, in one scan
    (`exact`: exact quantiles, else from a reservoir sample)."""
    head = (f"count(*) AS rows, count({col}) AS non_null, "
            f"approx_count_distinct({col}) AS distinct_approx")

    def quantiles(expr: str, at: str, exact_fn: str) -> str:
        return (f"{exact_fn}({expr}, {at})" if exact
                else f"reservoir_quantile({expr}, {at}, {RESERVOIR})")

    if is_numeric(kind):
        finite = "FILTER (isfinite(v))"
        return (f"SELECT {head}, min(v) {finite} AS min, max(v) {finite} AS max, "
                f"avg(v) {finite} AS mean, {quantiles('v', QUANTILES, 'quantile_cont')} "
                f"{finite} AS quantiles, "
                "count(*) FILTER (isnan(v)) AS nan, "
                "count(*) FILTER (v = 'inf'::DOUBLE) AS pos_inf, "
                "count(*) FILTER (v = '-inf'::DOUBLE) AS neg_inf "
                f"FROM (SELECT {col}, CAST({col} AS DOUBLE) AS v FROM {view})")
    if is_text(kind):
        return (f"SELECT {head}, min(length({col})) AS min_length, "
                f"avg(length({col})) AS mean_length, max(length({col})) AS max_length, "
                f"count(*) FILTER ({col} = '') AS empty, left(min({col}), 100) AS min, "
                f"left(max({col}), 100) AS max, "
                f"{quantiles(f'length({col})', '[0.01, 0.5, 0.99]', 'quantile_disc')} "
                f"AS length_quantiles FROM {view}")
    if kind.endswith("]") or kind.upper().startswith("MAP"):
        size = f"cardinality({col})" if kind.upper().startswith("MAP") else f"len({col})"
        return (f"SELECT {head}, min({size}) AS min_length, avg({size}) AS mean_length, "
                f"max({size}) AS max_length, count(*) FILTER ({size} = 0) AS empty "
                f"FROM {view}")
    if kind.upper().startswith(("STRUCT", "UNION")):
        return f"SELECT {head} FROM {view}"
    return (f"SELECT {head}, left(CAST(min({col}) AS VARCHAR), 100) AS min, "
            f"left(CAST(max({col}) AS VARCHAR), 100) AS max FROM {view}")


def top_sql(view: str, col: str, exact: bool) -> str:
    """The most frequent values (cut to 100 characters) with their exact counts (`exact`:
    chosen by an exact GROUP BY, else by `approx_top_k`)."""
    value = f"left(CAST({col} AS VARCHAR), 100)"
    order = f"ORDER BY n DESC, value NULLS FIRST LIMIT {TOP_VALUES}"
    if exact:
        return f"SELECT {value} AS value, count(*) AS n FROM {view} GROUP BY 1 {order}"
    # candidates from the raw values (casting 20 million doubles to text took 24 s)
    return (f"WITH top AS (SELECT unnest(approx_top_k({col}, {TOP_VALUES})) AS v FROM {view}) "
            f"SELECT {value} AS value, count(*) AS n FROM {view} "
            f"WHERE {col} IN (SELECT v FROM top) GROUP BY 1 {order}")


def near_unique(distinct: int, non_null: int, budget: Budget) -> bool:
    """Too many values, nearly all distinct, for top values to show anything."""
    return distinct > budget.exact_distinct and distinct >= NEAR_UNIQUE * non_null


def per_file_sql(view: str, col: str, kind: str) -> str:
    if is_numeric(kind):
        finite = f"CASE WHEN isfinite(CAST({col} AS DOUBLE)) THEN CAST({col} AS DOUBLE) END"
        measure = f"min({finite}) AS min, max({finite}) AS max, avg({finite}) AS mean"
    elif is_text(kind):
        measure = f"avg(length({col})) AS mean_length, approx_count_distinct({col}) AS distinct_approx"
    else:
        measure = f"approx_count_distinct({col}) AS distinct_approx"
    return (f"SELECT _file, count(*) AS rows, count(*) - count({col}) AS nulls, {measure} "
            f"FROM {view} GROUP BY _file ORDER BY _file")


def approximate_parts(kind: str, exact_values: bool, exact_top: bool,
                      nested: bool = False) -> list[str]:
    """What `basic_sql`, `top_sql` and `leaf_sql` computed approximately for this column
    (besides the distinct counts, approximate everywhere)."""
    parts = []
    sample = f"reservoir_quantile over a {RESERVOIR:,}-value sample"
    if not exact_values and is_numeric(kind):
        parts.append(f"quantiles ({sample})")
    elif not exact_values and is_text(kind):
        parts.append(f"length_quantiles ({sample})")
    if not exact_top:
        parts.append("top_values (candidates by approx_top_k, counts exact)")
    if nested:
        parts.append(f"leaves' quantiles ({sample})")
    return parts


# -- nested columns ---------------------------------------------------------------------------


def leaves(kind: pa.DataType) -> tuple[list[tuple[str, tuple[Step, ...], str]], list[str]]:
    """((path, steps, leaf Arrow type), ...) of a nested type's leaves, and the skipped paths
    with why. Paths: `[]` an element of a list, `.name` a struct field, `{keys}`/`{values}`."""
    found: list[tuple[str, tuple[Step, ...], str]] = []
    skipped: list[str] = []
    stack: list[tuple[str, tuple[Step, ...], pa.DataType]] = [("", (), kind)]
    while stack:
        path, steps, t = stack.pop(0)
        children = _children(path, steps, t)
        if children is None:
            if len(found) < MAX_LEAVES:
                found.append((path, steps, str(t)))
            else:
                skipped.append(f"{path}: more than {MAX_LEAVES} leaves (profile it with run_query)")
        elif len(steps) >= MAX_DEPTH:
            skipped.append(f"{path}: nested deeper than {MAX_DEPTH} levels")
        elif not children:
            skipped.append(f"{path or '(column)'}: {t} has no leaf the profile reads")
        else:
            stack.extend(children)
    return found, skipped


def _children(path: str, steps: tuple[Step, ...], t: pa.DataType) -> list | None:
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return [(path + "[]", steps + (("list", ""),), t.value_type)]
    if pa.types.is_map(t):
        return [(path + "{keys}", steps + (("keys", ""),), t.key_type),
                (path + "{values}", steps + (("values", ""),), t.item_type)]
    if pa.types.is_struct(t):
        return [(f"{path}.{t.field(i).name}", steps + (("field", t.field(i).name),), t.field(i).type)
                for i in range(t.num_fields)]
    if pa.types.is_union(t):
        return []
    return None


def leaf_sql(view: str, col: str, steps: tuple[Step, ...], arrow_type: str) -> str:
    """Counts, distinct and range of one leaf's values (numbers: mean and quantiles too)."""
    inner = f"SELECT {col} AS v FROM {view}"
    for step, name in steps:
        if step == "field":
            inner = f"SELECT struct_extract(v, {_lit(name)}) AS v FROM ({inner})"
        else:
            source = {"list": "v", "keys": "map_keys(v)", "values": "map_values(v)"}[step]
            inner = f"SELECT unnest({source}) AS v FROM ({inner})"
    head = "count(*) AS values, count(v) AS non_null, approx_count_distinct(v) AS distinct_approx"
    if arrow_type.startswith(("int", "uint", "float", "double", "halffloat", "decimal")):
        finite = "FILTER (isfinite(CAST(v AS DOUBLE)))"
        return (f"SELECT {head}, min(CAST(v AS DOUBLE)) {finite} AS min, "
                f"max(CAST(v AS DOUBLE)) {finite} AS max, avg(CAST(v AS DOUBLE)) {finite} AS mean, "
                f"reservoir_quantile(CAST(v AS DOUBLE), {QUANTILES}, {RESERVOIR}) {finite} "
                "AS quantiles "
                f"FROM ({inner})")
    return (f"SELECT {head}, left(CAST(min(v) AS VARCHAR), 100) AS min, "
            f"left(CAST(max(v) AS VARCHAR), 100) AS max FROM ({inner})")


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def record(columns: list[str], row: list[Any]) -> dict[str, Any]:
    return dict(zip(columns, row))
