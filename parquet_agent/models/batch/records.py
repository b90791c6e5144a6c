"""What crosses the batch seam: the items sent, a batch's status, each item's result, and the
ledger that makes a resume pick up a batch already paid for.

`BatchLedger` is where `run_batch` writes each batch it created (before it polls) and each
batch it saw end: `FileLedger(path)` keeps them as durable JSON lines; a run keeps its own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from parquet_agent.files import DurableAppender
from parquet_agent.models.http_model import CallOutcome
from parquet_agent.models.protocol import ModelRequest

SCHEMA_VERSION = 1
BatchState = Literal["running", "ended", "expired", "cancelled", "failed"]


@dataclass(frozen=True)
class BatchItem:
    """One request of a batch; `custom_id` is the id on the wire (`r00001`: every provider
    accepts it), `key` the caller's name for it (a case's judge label)."""

    custom_id: str
    key: str
    request: ModelRequest


@dataclass(frozen=True)
class BatchStatus:
    state: BatchState
    detail: str  # what the provider said: its status and request counts
    handle: dict[str, Any] = field(default_factory=dict)  # what fetching results needs
    response_path: str | None = None  # the raw record of this status


@dataclass(frozen=True)
class ItemResult:
    """One request's result: a parsed reply, or why there is none (errored, expired,
    cancelled, malformed). `response_path`: the raw result file it came from."""

    custom_id: str
    outcome: CallOutcome | None
    error: str | None
    http_status: int | None
    response_path: str | None


class BatchLedger(Protocol):
    def records(self) -> list[dict[str, Any]]: ...
    def append(self, record: dict[str, Any]) -> None: ...


class FileLedger:
    """Batch records as JSON lines in one file, each durable before `append` returns."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def records(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_bytes().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:  # a torn last line from a kill: that record never happened
                continue
        return out

    def append(self, record: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        appender = DurableAppender(self.path)
        try:
            line = {"schema_version": SCHEMA_VERSION, **record}
            appender.append(json.dumps(line, sort_keys=True).encode() + b"\n")
        finally:
            appender.close()
