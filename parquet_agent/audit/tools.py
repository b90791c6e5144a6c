"""The audit's data tools, run in the same sandboxed workers as the experiments' tools.

    tools = AuditTools.open(dataset)
    tools.schema_sample(n=5)        # schema per file, row counts, a capped deterministic sample
    tools.run_query("SELECT ...")   # one read-only SELECT over `data` / `f_<stem>` (the SQL gate)
    tools.get_stats("char_count")   # nulls, distinct, min/max, quantiles, lengths, top values,
                                    # and a per-file breakdown
    tools.scalar("SELECT count(*) FROM data WHERE ...")   # evidence queries of the finding gate

Every call is one or more `sql` jobs in a fresh forked, hardened child of the fork server
(`tools.pool.WorkerPool`), over a locked DuckDB connection that reads exactly the snapshot's
files; the views are built by the server (`tools.sandbox.dataset_views`). Nothing here reads
data in this process. Failures are `ToolResult` values (`ok=False`, a kind from the closed set),
never exceptions.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

from parquet_agent.audit.dataset import Dataset
from parquet_agent.tools.pool import WorkerPool
from parquet_agent.tools.render import OutputLimits
from parquet_agent.tools.result import Timings, ToolError, ToolResult, error_result
from parquet_agent.tools.sandbox import NOBODY, SandboxLimits

MAX_SAMPLE = 20
SAMPLE_CELL_CHARS = 200
TOP_VALUES = 10
_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "FLOAT", "DOUBLE", "DECIMAL",
            "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT")


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class AuditTools:
    def __init__(self, dataset: Dataset, limits: SandboxLimits, output_limits: OutputLimits):
        self.dataset = dataset
        self.limits = limits
        paths = dataset.snapshot.paths(dataset.root)
        config = {
            "files": [{"name": f.name, "path": str(p)} for f, p in zip(dataset.snapshot.files, paths)],
            "index_path": None,
            "headers_path": None,
            "limits": limits.to_json(),
            "output": output_limits.__dict__,
            "drop_to": [NOBODY, NOBODY] if os.geteuid() == 0 else None,
            "views": dataset.views(),
        }
        self._pool = WorkerPool(config, data_workers=1, answer_timeout_s=limits.wall_seconds + 30.0)

    @classmethod
    def open(cls, dataset: Dataset, *, limits: SandboxLimits | None = None,
             output_limits: OutputLimits | None = None) -> AuditTools:
        return cls(dataset, limits or SandboxLimits(), output_limits or OutputLimits())

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> AuditTools:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the tools ----------------------------------------------------------------------------

    def run_query(self, sql: str) -> ToolResult:
        """One read-only SELECT through the SQL gate, in a sandboxed worker."""
        if not isinstance(sql, str) or not sql.strip():
            return error_result("run_query", {"sql": sql}, "validation", "sql must be a non-empty SELECT")
        started = time.perf_counter()
        answer = self._pool.run("sql", {"query": sql})
        data = answer.data
        timings = Timings(round(answer.queue_ms, 3), round(answer.run_ms, 3),
                          round((time.perf_counter() - started) * 1000, 3))
        common = dict(timings=timings, worker_id=data.get("worker_id"),
                      peak_rss_bytes=data.get("peak_rss_bytes"))
        if data.get("ok"):
            return ToolResult("run_query", {"sql": sql}, True, data.get("output"), None,
                              truncated=data.get("truncated"), **common)
        error = data.get("error") or {}
        return ToolResult("run_query", {"sql": sql}, False, None,
                          _tool_error(error.get("kind"), error.get("message")), **common)

    def scalar(self, sql: str) -> tuple[Any, ToolResult]:
        """The single value of a one-row, one-column SELECT (None when it failed)."""
        result = self.run_query(sql)
        if not result.ok:
            return None, result
        rows = result.output["rows"]
        if len(rows) != 1 or len(rows[0]) != 1:
            bad = dataclasses.replace(result, ok=False, output=None, error=ToolError(
                "validation", f"expected one row with one value, got {len(rows)} row(s)"))
            return None, bad
        return rows[0][0], result

    def schema_sample(self, n: int = 5) -> ToolResult:
        """The schema of every file, row counts, and a deterministic sample of `n` rows."""
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_SAMPLE:
            return error_result("schema_sample", {"n": n}, "validation",
                                f"n must be an integer from 1 to {MAX_SAMPLE}")
        cells = ", ".join(_sample_cell(name, kind) for name, kind in self.dataset.columns)
        sql = (f"SELECT _file, _row, {cells} FROM data "
               f"USING SAMPLE reservoir({n} ROWS) REPEATABLE (42) ORDER BY _file, _row")
        sample = self.run_query(sql)
        output = {**self.dataset.describe(), "file_schemas": self.dataset.file_schemas()}
        if sample.ok:
            output["sample"] = {"columns": sample.output["columns"], "rows": sample.output["rows"]}
        else:
            output["sample_error"] = sample.model_text()
        return dataclasses.replace(sample, name="schema_sample", arguments={"n": n}, ok=True,
                                   output=output, error=None)

    def get_stats(self, column: str) -> ToolResult:
        """Fixed aggregates of one column; the first failing query's error is the result."""
        args = {"column": column}
        if column not in self.dataset.column_names:
            return error_result("get_stats", args, "validation",
                                f"no column {column!r}; the columns are: "
                                + ", ".join(self.dataset.column_names))
        started = time.perf_counter()
        col = quote_ident(column)
        basic = self.run_query(
            f"SELECT count(*) AS rows, count({col}) AS non_null, "
            f"approx_count_distinct({col}) AS distinct_approx, any_value(typeof({col})) AS type "
            "FROM data")
        if not basic.ok:
            return dataclasses.replace(basic, name="get_stats", arguments=args)
        rows, non_null, distinct, kind = basic.output["rows"][0]
        output: dict[str, Any] = {"column": column, "type": kind, "rows": rows,
                                  "nulls": rows - non_null, "distinct_approx": distinct}
        parts = [("values", self.run_query(_value_stats(col, kind))),
                 ("top_values", self.run_query(
                     f"SELECT left(CAST({col} AS VARCHAR), 100) AS value, count(*) AS n FROM data "
                     f"GROUP BY 1 ORDER BY n DESC, value NULLS FIRST LIMIT {TOP_VALUES}")),
                 ("per_file", self.run_query(
                     f"SELECT _file, count(*) AS rows, count(*) - count({col}) AS nulls, "
                     f"{_file_measure(col, kind)} FROM data GROUP BY _file ORDER BY _file"))]
        for name, part in parts:
            if not part.ok:
                return dataclasses.replace(part, name="get_stats", arguments=args)
            records = [dict(zip(part.output["columns"], r)) for r in part.output["rows"]]
            output[name] = records[0] if name == "values" else records
        total = round((time.perf_counter() - started) * 1000, 3)
        return ToolResult("get_stats", args, True, output, None, Timings(0.0, total, total))


def _tool_error(kind: Any, message: Any) -> ToolError:
    try:
        return ToolError(str(kind), str(message or "the worker gave no answer"))
    except ValueError:
        return ToolError("worker_crashed", f"{kind}: {message}")


def is_numeric(kind: str) -> bool:
    return kind.upper().startswith(_NUMERIC)


def _sample_cell(name: str, kind: str) -> str:
    col = quote_ident(name)
    if kind in ("string", "large_string"):
        return f"left({col}, {SAMPLE_CELL_CHARS}) AS {col}"
    return col


def _value_stats(col: str, kind: str) -> str:
    if is_numeric(kind):
        return (f"SELECT min({col}) AS min, max({col}) AS max, avg({col}) AS mean, "
                f"quantile_cont({col}, [0.01, 0.25, 0.5, 0.75, 0.99]) AS quantiles FROM data")
    if kind == "VARCHAR":
        return (f"SELECT min(length({col})) AS min_length, avg(length({col})) AS mean_length, "
                f"max(length({col})) AS max_length, count(*) FILTER ({col} = '') AS empty, "
                f"left(min({col}), 100) AS min, left(max({col}), 100) AS max, "
                f"quantile_disc(length({col}), [0.01, 0.5, 0.99]) AS length_quantiles FROM data")
    return (f"SELECT left(CAST(min({col}) AS VARCHAR), 100) AS min, "
            f"left(CAST(max({col}) AS VARCHAR), 100) AS max FROM data")


def _file_measure(col: str, kind: str) -> str:
    if is_numeric(kind):
        return f"min({col}) AS min, max({col}) AS max, avg({col}) AS mean"
    if kind == "VARCHAR":
        return f"avg(length({col})) AS mean_length, approx_count_distinct({col}) AS distinct_approx"
    return f"approx_count_distinct({col}) AS distinct_approx"
