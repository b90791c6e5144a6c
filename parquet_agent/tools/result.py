"""What a tool call returns: a frozen `ToolResult`, never an exception.

A tool failure is a value with a kind from the closed set `ERROR_KINDS`; the agent shows it to
the model and the case record keeps it. `model_text()` is the exact string the model receives:
it depends only on `ok`, `output` and `error`, never on timings, worker or cache, so a cache hit
looks identical to the model.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

# The closed set of tool error kinds (inspect_ai style: anything else escaping is a bug).
ERROR_KINDS: frozenset[str] = frozenset(
    {
        "sql",  # DuckDB refused the query: syntax, unknown column, type error, ...
        "forbidden",  # not one read-only SELECT, or a file outside the snapshot
        "timeout",  # the call ran past its wall-clock limit
        "memory",  # the call ran out of its memory limit
        "cpu",  # the call used up its CPU-seconds budget
        "worker_crashed",  # the worker process died without an answer
        "validation",  # arguments of the wrong shape, type, size or encoding
        "not_found",  # a file_stem (or the header index) that does not exist
        "unknown_tool",  # a tool name this strategy does not offer
        "budget",  # the agent's tool budget is spent (raised by the agent, not here)
        "too_large",  # a result that cannot be bounded to the output limits
    }
)


@dataclass(frozen=True)
class ToolError:
    kind: str
    message: str

    def __post_init__(self) -> None:
        if self.kind not in ERROR_KINDS:
            raise ValueError(f"unknown tool error kind {self.kind!r}; expected one of {sorted(ERROR_KINDS)}")


@dataclass(frozen=True)
class Timings:
    queue_ms: float = 0.0  # waiting for a data-worker slot
    run_ms: float = 0.0  # inside the worker (fork, connect, lock, run, answer)
    total_ms: float = 0.0  # from call to result, as the caller saw it


@dataclass(frozen=True)
class ToolResult:
    name: str
    arguments: dict[str, Any]  # as validated (defaults filled in); the raw input when invalid
    ok: bool
    output: Any = None  # JSON-able; None on error
    error: ToolError | None = None
    timings: Timings = field(default_factory=Timings)
    worker_id: str | None = None  # None when no worker ran (cache hit, validation, describe)
    peak_rss_bytes: int | None = None
    cache_hit: bool = False
    truncated: dict[str, Any] | None = None  # what the output limits cut, when they cut
    # whole-corpus sql: whether the data-skipping index pruned it, pages read/skipped (never
    # part of model_text: the model sees the same result either way)
    skip_index: dict[str, Any] | None = None

    def to_frame(self):
        """An `sql` result as a pandas DataFrame (see `tools.frame.sql_frame`)."""
        from parquet_agent.tools.frame import sql_frame

        return sql_frame(self)

    def model_text(self) -> str:
        """The exact text the model receives (deterministic for the same ok/output/error)."""
        if self.ok:
            return json.dumps(self.output, ensure_ascii=False, separators=(",", ":"))
        assert self.error is not None
        return json.dumps(
            {"error": {"kind": self.error.kind, "message": self.error.message}},
            ensure_ascii=False,
            separators=(",", ":"),
        )

    def to_json(self) -> dict[str, Any]:
        """Every field as plain JSON-able data (what records and the CLI print)."""
        data = asdict(self)
        data["error"] = asdict(self.error) if self.error else None
        return data


def error_result(name: Any, arguments: Any, kind: str, message: str, **extra: Any) -> ToolResult:
    """A failed ToolResult whose every string is valid UTF-8, even when the input was not.

    Untrusted names and arguments can hold lone surrogates (from JSON `\\ud800` escapes) that
    cannot be encoded for a provider request, a record file or a terminal: they are kept,
    backslash-escaped, so the record shows what was sent.
    """
    return ToolResult(
        name=_safe_text(name if isinstance(name, str) else repr(name)),
        arguments=_jsonable_arguments(arguments),
        ok=False,
        error=ToolError(kind, _safe_text(message)),
        **extra,
    )


def _safe_text(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _safe(value: Any) -> Any:
    if isinstance(value, str):
        return _safe_text(value)
    if isinstance(value, dict):
        return {_safe_text(str(k)): _safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_safe(v) for v in value]
    return value


def _jsonable_arguments(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, dict):
        try:
            json.dumps(arguments)
            return _safe(arguments)
        except (TypeError, ValueError):
            pass
    return {"_raw": _safe_text(repr(arguments)[:2000])}


# The action gate's record (`tools.action_gate`) lives here, beside the other tool records,
# because the transcript decodes it and must not load DuckDB (the exporter reads journals).
@dataclass(frozen=True)
class GateEvaluation:
    """One evaluation of one tool call, as the case journal records it (`gate_evaluation`)."""

    EVENT: ClassVar[str] = "gate_evaluation"

    gate: str  # "action"
    evaluator: str  # "rules"
    tool: str
    arguments: dict[str, Any]
    verdict: str  # PASS | WARN | FAIL
    critique: str
    narrowed: bool  # the rows were narrowed before the query (file_stem or scope)
