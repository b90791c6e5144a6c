"""The audit's data tools, run in the same sandboxed workers as the experiments' tools.

    tools = AuditTools.open(dataset)
    tools.schema_sample(n=5)                # every table: schema per file, rows, a small sample
    tools.schema_sample(n=5, table="planes")  # one table
    tools.run_query("SELECT ...")           # one read-only SELECT over any table views (SQL gate)
    tools.get_stats("flights.dep_delay")    # one column, by its ref (`Dataset.resolve`): nulls,
                                            # distinct, min/max, quantiles, lengths, top values,
                                            # per file; nested columns by their leaves
    tools.scalar("SELECT count(*) FROM flights WHERE ...")   # evidence queries of the gates

Every call is one or more `sql` jobs in a fresh forked, hardened child of the fork server
(`tools.pool.WorkerPool`), over a locked DuckDB connection that reads exactly the snapshot's
files; the views are built by the server (`tools.sandbox.dataset_views`). Nothing here reads
data in this process (the Arrow schema of a nested column is read from its file's footer).
`get_stats` stays inside the worker's memory on any size (`audit.profile`: streaming and
sketched statistics above a million rows, said in its output). Failures are `ToolResult` values
(`ok=False`, a kind from the closed set), never exceptions.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

import pyarrow.parquet as pq

from parquet_agent.audit import profile
from parquet_agent.audit.dataset import Column, Dataset, Table
from parquet_agent.tools.pool import WorkerPool
from parquet_agent.tools.render import OutputLimits
from parquet_agent.tools.result import Timings, ToolError, ToolResult, error_result
from parquet_agent.tools.sandbox import NOBODY, SandboxLimits

MAX_SAMPLE = 20
SAMPLE_CELL_CHARS = 200
TOP_VALUES = profile.TOP_VALUES
quote_ident = profile.q
is_numeric = profile.is_numeric


class AuditTools:
    def __init__(self, dataset: Dataset, limits: SandboxLimits, output_limits: OutputLimits):
        self.dataset = dataset
        self.limits = limits
        config = {
            "files": [{"name": f.name, "path": str(dataset.path_of(f.name))}
                      for f in dataset.snapshot.files],
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
        common: dict[str, Any] = dict(timings=timings, worker_id=data.get("worker_id"),
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

    def schema_sample(self, n: int = 5, table: str | None = None) -> ToolResult:
        """The dataset's tables and files, and a deterministic sample of `n` rows of every
        table (or of `table` only)."""
        args: dict[str, Any] = {"n": n} | ({"table": table} if table is not None else {})
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_SAMPLE:
            return error_result("schema_sample", args, "validation",
                                f"n must be an integer from 1 to {MAX_SAMPLE}")
        if table is not None and table not in self.dataset.table_names:
            return error_result("schema_sample", args, "validation",
                                f"no table {table!r}; the tables are "
                                + ", ".join(self.dataset.table_names))
        output = {**self.dataset.describe(), "file_schemas": self.dataset.file_schemas()}
        samples: dict[str, Any] = {}
        last = None
        for t in self.dataset.tables:
            if table is not None and t.name != table:
                continue
            last = self.run_query(_sample_sql(t, n))
            samples[t.name] = ({"columns": last.output["columns"], "rows": last.output["rows"]}
                               if last.ok else {"error": last.model_text()})
        if self.dataset.single:
            only = next(iter(samples.values()))
            output["sample" if "error" not in only else "sample_error"] = only.get("error", only)
        else:
            output["samples"] = samples
        assert last is not None
        return dataclasses.replace(last, name="schema_sample", arguments=args, ok=True,
                                   output=output, error=None)

    def get_stats(self, column: str) -> ToolResult:
        """Fixed aggregates of one column (`column` is its ref: `table.column` when the dataset
        has several tables); the first failing query's error is the result."""
        args = {"column": column}
        found = self.dataset.resolve(column) if isinstance(column, str) else None
        if found is None:
            return error_result("get_stats", args, "validation",
                                f"no column {column!r}; the columns are: "
                                + ", ".join(self.dataset.column_names))
        table, col = found
        started = time.perf_counter()
        view, name = table.name, quote_ident(col.name)
        budget = profile.Budget.of(self.limits.memory_limit)
        exact_values = table.rows <= budget.exact_rows
        basic = self.run_query(profile.basic_sql(view, name, col.type, exact_values))
        if not basic.ok:
            return dataclasses.replace(basic, name="get_stats", arguments=args)
        values = profile.record(basic.output["columns"], basic.output["rows"][0])
        output: dict[str, Any] = {
            "column": column, "type": col.type, "rows": values.pop("rows"),
            "nulls": 0, "distinct_approx": values.pop("distinct_approx")}
        output["nulls"] = output["rows"] - values.pop("non_null")
        if not self.dataset.single:
            output["table"] = table.name
        non_finite = {k: values.pop(k) for k in ("nan", "pos_inf", "neg_inf") if k in values}
        output["values"] = values
        if any(non_finite.values()):
            output["non_finite"] = non_finite
        exact_top = (output["distinct_approx"] or 0) <= budget.exact_distinct
        parts = [("per_file", profile.per_file_sql(view, name, col.type))]
        if profile.near_unique(output["distinct_approx"] or 0, output["rows"] - output["nulls"],
                               budget):
            output["top_values"] = []
            output["top_values_skipped"] = "near-unique: nearly every value occurs once"
        else:
            parts.insert(0, ("top_values", profile.top_sql(view, name, exact_top)))
        for key, sql in parts:
            part = self.run_query(sql)
            if not part.ok:
                return dataclasses.replace(part, name="get_stats", arguments=args)
            output[key] = [profile.record(part.output["columns"], r) for r in part.output["rows"]]
        approximate = profile.approximate_parts(col.type, exact_values,
                                                exact_top or "top_values_skipped" in output,
                                                col.nested)
        if col.nested:
            problem = self._leaves(table, col, output)
            if problem is not None:
                return dataclasses.replace(problem, name="get_stats", arguments=args)
        if approximate:
            output["approximate"] = approximate
        total = round((time.perf_counter() - started) * 1000, 3)
        return ToolResult("get_stats", args, True, output, None, Timings(0.0, total, total))

    def _leaves(self, table: Table, col: Column, output: dict[str, Any]) -> ToolResult | None:
        """Profile the leaves of a nested column into `output` (the failing query, if any)."""
        kind = _arrow_type(self.dataset, table, col)
        found, skipped = profile.leaves(kind) if kind is not None else (
            [], [f"{col.name}: its Arrow type could not be read"])
        output["leaves"] = []
        for path, steps, leaf_type in found:
            result = self.run_query(profile.leaf_sql(table.name, quote_ident(col.name), steps,
                                                     leaf_type))
            if not result.ok:
                return result
            leaf = profile.record(result.output["columns"], result.output["rows"][0])
            output["leaves"].append({"path": col.name + path, "type": leaf_type, **leaf})
        if skipped:
            output["skipped"] = [col.name + s for s in skipped]
        return None


def _arrow_type(dataset: Dataset, table: Table, col: Column):
    for name in table.files:
        schema = pq.read_schema(dataset.path_of(name))
        if col.stored in schema.names:
            return schema.field(col.stored).type
    return None


def _sample_sql(table: Table, n: int) -> str:
    cells = ", ".join(_sample_cell(c) for c in table.columns)
    return (f"SELECT _file, _row, {cells} FROM {table.name} "
            f"USING SAMPLE reservoir({n} ROWS) REPEATABLE (42) ORDER BY _file, _row")


def _sample_cell(column: Column) -> str:
    col = quote_ident(column.name)
    if profile.is_text(column.type):
        return f"left({col}, {SAMPLE_CELL_CHARS}) AS {col}"
    return col


def _tool_error(kind: Any, message: Any) -> ToolError:
    try:
        return ToolError(str(kind), str(message or "the worker gave no answer"))
    except ValueError:
        return ToolError("worker_crashed", f"{kind}: {message}")
