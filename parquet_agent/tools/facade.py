"""`Tools`: the agent's only way into the corpus.

    tools = Tools.open("data/sample", strategy="sql+stream")
    tools.call("search_headers", query="Northwind")      # -> ToolResult, never raises for bad input
    tools.call_raw(name, arguments)                      # untrusted: any JSON value, any name

`open` takes the corpus snapshot (or uses the one given), finds the sidecar index under
`_index/` (refusing a stale one), and starts the sandbox (`shared_sandbox.SharedSandbox`: the
fork server, result cache and data-worker gate). A `Tools` is a frozen view of one strategy's
tools over that sandbox (`for_strategy` gives another view of the same one) and is safe to share
between threads: identical successful calls are served from the shared cache, and at most
`data_workers` data calls run in workers at once. `describe_corpus` is answered from the
snapshot in this process: it reads no data.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from parquet_agent.corpus.schema import COLUMN_MEANINGS
from parquet_agent.corpus.snapshot import CorpusSnapshot
from parquet_agent.errors import UsageError
from parquet_agent.models.protocol import ToolSpec
from parquet_agent.tools.cache import CachedOutput, cache_key
from parquet_agent.tools.gate import MAX_QUERY_CHARS
from parquet_agent.tools.render import OutputLimits
from parquet_agent.tools.result import Timings, ToolError, ToolResult, error_result
from parquet_agent.tools.sandbox import Capabilities, SandboxLimits
from parquet_agent.tools.shared_sandbox import SharedSandbox
from parquet_agent.tools.specs import (
    ALL_TOOLS,
    MAX_ARGUMENT_CHARS,
    STRATEGIES,
    TOOL_VERSION,
    ArgumentCheck,
    tool_spec,
)
from parquet_agent.tools.worker import SCAN_ADVICE


@dataclass(frozen=True)
class ToolOffer:
    """What one strategy offers: its tool names, their argument checks and their specs."""

    strategy: str
    names: tuple[str, ...]
    checks: Mapping[str, ArgumentCheck]  # read-only
    specs: tuple[ToolSpec, ...]

    @classmethod
    def of(cls, strategy: str) -> ToolOffer:
        if strategy not in STRATEGIES:
            raise UsageError(f"unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}")
        names = tuple(STRATEGIES[strategy])
        return cls(strategy, names,
                   MappingProxyType({name: ArgumentCheck(ALL_TOOLS[name]) for name in names}),
                   tuple(tool_spec(ALL_TOOLS[name]) for name in names))


@dataclass(frozen=True, eq=False)
class Tools:
    """A frozen view: one strategy's tools over a `SharedSandbox`. The `Tools` that `open`
    returns owns its sandbox (closing it stops the server); `for_strategy` views do not."""

    sandbox: SharedSandbox
    offer: ToolOffer
    owns_sandbox: bool = field(default=False, repr=False)

    @classmethod
    def open(
        cls,
        corpus_dir: str | Path,
        strategy: str = "sql+stream",
        *,
        cache: str = "on",
        data_workers: int = 1,
        snapshot: CorpusSnapshot | None = None,
        limits: SandboxLimits | None = None,
        output_limits: OutputLimits | None = None,
        skip_index: bool = True,
        allow_unprotected: bool = False,
        capabilities: Capabilities | None = None,
    ) -> Tools:
        """Tools over the corpus folder; raises UsageError/CorpusError for an unusable folder and
        SandboxUnavailable where the kernel cannot protect the corpus (see `allow_unprotected`).

        `skip_index=False` runs every whole-corpus query as a scan even where the data-skipping
        index exists (an experiment's `[limits] skip_index = false`). `capabilities` (default:
        `Capabilities.detect()`) is what the sandbox may rely on here."""
        offer = ToolOffer.of(strategy)
        corpus_dir = Path(corpus_dir).resolve()
        snapshot = snapshot or CorpusSnapshot.take(corpus_dir)
        sandbox = SharedSandbox(snapshot, corpus_dir, cache=cache, data_workers=data_workers,
                                limits=limits or SandboxLimits(),
                                output_limits=output_limits or OutputLimits(),
                                load_headers="search_headers" in offer.names, skip_index=skip_index,
                                allow_unprotected=allow_unprotected,
                                capabilities=capabilities or Capabilities.detect())
        return cls(sandbox, offer, owns_sandbox=True)

    # -- public surface -----------------------------------------------------------------------

    def specs(self) -> tuple[ToolSpec, ...]:
        """The tool specs this strategy offers a model (name, description, JSON schema)."""
        return self.offer.specs

    # the sandbox's facts, as before the view existed
    strategy = property(lambda self: self.offer.strategy,
                        doc="The strategy whose tools this view offers (`sql`, `sql+stream`).")
    snapshot = property(lambda self: self.sandbox.snapshot,
                        doc="The corpus snapshot (files, sizes, hashes) the tools read.")
    limits = property(lambda self: self.sandbox.limits,
                      doc="Per-call sandbox limits: CPU seconds, wall seconds, memory.")
    output_limits = property(lambda self: self.sandbox.output_limits,
                             doc="Bounds on every answer: rows, cell, total and column sizes.")
    cache = property(lambda self: self.sandbox.cache,
                     doc="The result cache policy (`on` / `off`).")
    index_status = property(lambda self: self.sandbox.index_status,
                            doc="Whether the header/offset index is present and current.")
    skip_status = property(lambda self: self.sandbox.skip_status,
                           doc="Whether the data-skipping index is used, and why not if not.")
    sandbox_mode = property(lambda self: self.sandbox.mode,
                            doc="How the tools are isolated here (and UNPROTECTED if not).")

    def call(self, name: str, **arguments: Any) -> ToolResult:
        """Call one tool by name, e.g. `call("sql", query="SELECT ...")`; a failure is a
        `ToolResult` with `ok` False and its error, never an exception."""
        return self.call_raw(name, arguments)

    def for_strategy(self, strategy: str) -> Tools:
        """A new frozen view offering `strategy`'s tools over the same sandbox (fork server,
        cache and data-worker gate).

        An experiment opens one `Tools` and takes a view per strategy, so one fork server serves
        every case and "one data tool at a time" holds across strategies. Closing a view does
        nothing; close the `Tools` it came from."""
        return Tools(self.sandbox, ToolOffer.of(strategy))

    def scoped(self, file_stems: Iterable[str]) -> ScopedTools:
        """A view of these tools that sees only `file_stems` (one question's filings), sharing
        this instance's workers and cache. See `ScopedTools`."""
        return ScopedTools(self, tuple(sorted(set(file_stems))))

    def call_raw(self, name: object, arguments: object, *,
                 scope: tuple[str, ...] | None = None) -> ToolResult:
        """Run one untrusted call; every problem becomes an error value, never an exception.

        With `scope` (sorted file_stems), the call sees only those filings (see `ScopedTools`)."""
        started = time.perf_counter()
        result = self._call(name, arguments, started, scope)
        if result.timings.total_ms == 0.0:  # refused before any work: record how long that took
            elapsed = round((time.perf_counter() - started) * 1000, 3)
            result = dataclasses.replace(result, timings=Timings(0.0, 0.0, elapsed))
        return result

    def _call(self, name: object, arguments: object, started: float,
              scope: tuple[str, ...] | None = None) -> ToolResult:
        if not isinstance(name, str) or name not in self.offer.checks:
            offered = ", ".join(self.offer.names)
            shown = name if isinstance(name, str) else repr(name)
            return error_result(
                shown[:200], arguments, "unknown_tool",
                f"no tool named {shown[:200]!r} in strategy {self.strategy!r}; the tools are: {offered}",
            )
        if isinstance(arguments, (bytes, bytearray)):
            try:
                arguments = arguments.decode("utf-8")
            except UnicodeDecodeError:
                return error_result(name, arguments, "validation", "arguments are not valid UTF-8 JSON")
        if isinstance(arguments, str):  # raw argument text (OpenAI sends JSON text)
            text = arguments
            if len(text) > MAX_ARGUMENT_CHARS:  # refused before json.loads reads it
                return error_result(name, text[:2000], "validation", _TOO_LONG)
            try:
                arguments = json.loads(text) if text.strip() else {}
            except ValueError as exc:
                return error_result(name, text[:2000], "validation", f"arguments are not valid JSON: {exc}")
            except RecursionError:
                return error_result(name, text[:2000], "validation", _TOO_DEEP)
        if arguments is None:
            arguments = {}
        if nesting_exceeds(arguments, MAX_ARGUMENT_DEPTH):  # before anything recurses into it
            return error_result(name, "<arguments not shown: nested too deeply>", "validation", _TOO_DEEP)
        args = self.offer.checks[name].check(arguments)
        if isinstance(args, str):  # what is wrong with them
            return error_result(name, arguments, "validation", args)
        if scope is not None:
            stem = args.get("file_stem")
            if stem is not None and stem not in scope:
                return error_result(name, args, "validation", _outside_scope(stem, scope))
        # describe_corpus lists the strategy's tools: its answer differs per strategy view
        key_args = {**args, "_strategy": self.strategy} if name == "describe_corpus" else args
        key = cache_key(name, key_args, self.snapshot.snapshot_id, TOOL_VERSION,
                        list(scope) if scope is not None else None)
        hit = self.cache.get(key)
        if hit is not None:
            total = (time.perf_counter() - started) * 1000
            return ToolResult(
                name, args, True, json.loads(hit.output), None,
                Timings(0.0, 0.0, total), cache_hit=True, truncated=hit.truncated,
            )
        if name == "describe_corpus":
            result = self._describe(args, started, scope)
        else:
            # the worker needs the scope only where it chooses rows: header search, and SQL over
            # `filings` (a file_stem was already checked against it above)
            needs_scope = name == "search_headers" or (name == "sql" and not args.get("file_stem"))
            job_args = {**args, "scope": list(scope)} if scope is not None and needs_scope else args
            result = self._run_in_worker(name, job_args, started)
            if job_args is not args:
                result = dataclasses.replace(result, arguments=args)
        if result.ok:
            self.cache.put(key, CachedOutput(json.dumps(result.output, ensure_ascii=False), result.truncated))
        return result

    def sandbox_info(self) -> dict[str, Any]:
        """What the sandbox is, for run manifests."""
        return self.sandbox.info()

    def close(self) -> None:
        """Stop the sandbox this `Tools` owns; a `for_strategy` view closes nothing."""
        if self.owns_sandbox:
            self.sandbox.close()

    def __enter__(self) -> Tools:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ----------------------------------------------------------------------------

    def _run_in_worker(self, name: str, args: dict, started: float) -> ToolResult:
        answer = self.sandbox.run(name, args)
        data = answer.data
        timings = Timings(
            round(answer.queue_ms, 3), round(answer.run_ms, 3), round((time.perf_counter() - started) * 1000, 3)
        )
        worker_id, peak_rss_bytes = data.get("worker_id"), data.get("peak_rss_bytes")
        if data.get("ok"):
            result = ToolResult(name, args, True, data.get("output"), None, timings,
                                worker_id=worker_id, peak_rss_bytes=peak_rss_bytes,
                                truncated=data.get("truncated"), skip_index=data.get("skip_index"))
            if len(result.model_text()) <= self.output_limits.hard_limit_chars():
                return result
            data = {"error": {"kind": "too_large", "message": (
                f"the output would be over {self.output_limits.hard_limit_chars()} characters; "
                "ask for fewer rows, columns or characters")}}
        error = data.get("error") or {}
        kind = error.get("kind", "worker_crashed")
        message = error.get("message", "the worker gave no answer")
        try:
            err = ToolError(kind, message)
        except ValueError:
            err = ToolError("worker_crashed", f"{kind}: {message}")
        return ToolResult(name, args, False, None, err, timings, worker_id=worker_id,
                          peak_rss_bytes=peak_rss_bytes)

    def _describe(self, args: dict, started: float, scope: tuple[str, ...] | None) -> ToolResult:
        files = [
            {"file": f.name, "rows": f.rows, "size_bytes": f.size, "row_groups": f.row_groups}
            for f in self.snapshot.files
        ]
        schema = [{"column": c, "type": t} for c, t in self.snapshot.files[0].schema]
        output = {
            "view": "filings",
            "files": files,
            "total_rows": self.snapshot.rows,
            "total_size_bytes": self.snapshot.size,
            "schema": schema,
            "column_meanings": dict(COLUMN_MEANINGS),
            "notes": [
                "A row is a filing record, not a unique document: duplicates exist (same md5).",
                "Company names, form types, dates and tables are only inside parsed_md.",
                SCAN_ADVICE,
            ],
            "tools": list(self.offer.names),
            "limits": {
                "per_call": f"{self.limits.cpu_seconds:g} CPU seconds, {self.limits.wall_seconds:g} s "
                f"wall clock, {self.limits.memory_limit} DuckDB memory, no spill to disk",
                "sql_output": f"at most {self.output_limits.max_rows} rows, "
                f"{self.output_limits.max_cell_chars} characters per cell, "
                f"{self.output_limits.max_total_chars} characters in all",
            },
        }
        if scope is not None:
            stems = list(scope)
            output["scope"] = {"file_stems": stems[:50], "count": len(stems)}
            output["notes"].insert(0, (
                f"This question is scoped to {len(stems)} filing(s): the view `filings` holds "
                "only those rows (the file counts above are the whole corpus), search_headers "
                "finds only them, and other file_stems are refused."))
        if "read_filing" in self.offer.names:
            output["notes"].append(
                "sql(query, file_stem=X) runs over a one-row view `filing`; read_filing returns "
                "[start, end) character offsets into parsed_md."
            )
        total = (time.perf_counter() - started) * 1000
        return ToolResult("describe_corpus", args, True, output, None, Timings(0.0, 0.0, total))


MAX_ARGUMENT_DEPTH = 32  # tool arguments are flat: a few strings and numbers
_TOO_DEEP = (f"arguments are nested more than {MAX_ARGUMENT_DEPTH} levels deep; tool arguments "
             "are a flat JSON object of strings and numbers")
_TOO_LONG = (f"the arguments are over {MAX_ARGUMENT_CHARS:,} characters of JSON; a query is at "
             f"most {MAX_QUERY_CHARS:,} characters")


def nesting_exceeds(value: object, limit: int) -> bool:
    """Whether containers nest deeper than `limit` (iterative: no recursion on hostile input)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list, tuple)):
            if depth >= limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def _outside_scope(stem: str, scope: tuple[str, ...]) -> str:
    shown = ", ".join(scope[:5]) + (", ..." if len(scope) > 5 else "")
    return (f"file_stem {stem!r} is outside this question's scope; the filings you may use "
            f"are: {shown}")


class ScopedTools:
    """One question's view of a `Tools`: the same specs and workers, but only `scope`'s rows.

    `filings` holds only the scoped rows (read by pyarrow and registered in a connection that
    can read no file, so no table function can reach the rest), `search_headers` finds only
    them, `read_filing` and `sql(file_stem=...)` refuse any other file_stem, `describe_corpus`
    says so, and the cache keeps scoped answers apart.
    """

    MAX_SCOPE = 500  # rows materialised per scoped SQL call

    def __init__(self, tools: Tools, scope: tuple[str, ...]):  # sorted, unique
        if not scope:
            raise UsageError("a scope needs at least one file_stem")
        if len(scope) > self.MAX_SCOPE:
            raise UsageError(f"a scope of {len(scope)} filings is over the limit of "
                             f"{self.MAX_SCOPE}; scope to fewer filings or use the whole corpus")
        self.tools = tools
        self.scope = scope
        self.strategy = tools.strategy

    def specs(self) -> tuple[ToolSpec, ...]:
        return self.tools.specs()

    def call(self, name: str, **arguments: Any) -> ToolResult:
        return self.call_raw(name, arguments)

    def call_raw(self, name: object, arguments: object) -> ToolResult:
        return self.tools.call_raw(name, arguments, scope=self.scope)
