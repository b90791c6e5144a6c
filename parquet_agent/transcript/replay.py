"""What the agent needs from a journal, what a resume gives back, and the one tally of tools.

    journal: JournalWriter        # append(payload) / append_many([...]); the store implements it
    replay = CaseReplay.from_events(case_id, events)   # saved turns and tool results
    counts = tally(turns, tool_events, attempt_count)  # the DESIGN.md tool-count fields

`tally` is the only place the tool counts are computed: the agent calls it on its own case as it
runs (the figures it records in `case_finished`), and the fold calls it on the journal of a case
that never finished.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Protocol, Sequence

from parquet_agent.transcript.codec import Event
from parquet_agent.transcript.events import (
    CaseFinished,
    CaseStarted,
    Judgment,
    ModelTurn,
    ToolCallEvent,
)

TOOL_COUNT_FIELDS = ("requested_by_model", "processed", "budgeted_attempts", "dispatched",
                     "cache_hits", "source_worker_runs", "errors", "budget_rejected",
                     "model_rounds", "api_attempt_count")


class JournalWriter(Protocol):
    """Where the agent (and the runner) write a case's events; `store.Run.journal` gives one.
    Each call is durable before it returns; `append_many` is one durable write."""

    def append(self, payload: Any) -> Event: ...

    def append_many(self, payloads: Sequence[Any]) -> list[Event]: ...


@dataclass(frozen=True)
class ToolCounts:
    """The tool-count fields of DESIGN.md, named as written there."""

    requested_by_model: int = 0
    processed: int = 0
    budgeted_attempts: int = 0
    dispatched: int = 0
    cache_hits: int = 0
    source_worker_runs: int = 0
    errors: int = 0
    budget_rejected: int = 0
    model_rounds: int = 0
    api_attempt_count: int = 0  # answer attempts in the agent; the runner adds the judge's

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def tally(turns: Iterable[ModelTurn], tools: Iterable[ToolCallEvent],
          attempt_count: int) -> ToolCounts:
    """Tool counts of successful `turns` and the tool responses produced for them."""
    turns, tools = list(turns), list(tools)
    dispatched = [t for t in tools if t.dispatched]
    failed = [t for t in tools if not t.ok]
    hits = sum(bool(t.cache_hit) for t in dispatched)
    return ToolCounts(
        requested_by_model=sum(len(t.reply.tool_calls) for t in turns),
        processed=len(tools),
        budgeted_attempts=sum(bool(t.budgeted) for t in tools),
        dispatched=len(dispatched), cache_hits=hits, source_worker_runs=len(dispatched) - hits,
        errors=len(failed), budget_rejected=sum(t.error_kind == "budget" for t in failed),
        model_rounds=len(turns), api_attempt_count=attempt_count)


@dataclass(frozen=True)
class CaseReplay:
    """What a case has already done, in order: enough to resume it without new model calls."""

    case_id: str
    started: CaseStarted | None
    turns: tuple[ModelTurn, ...]  # successful answer turns, by turn number (last one wins)
    # by (turn, call_id): providers may reuse a call id on a later turn (Gemini without ids,
    # scripted models), and a resume must give each turn back its own results
    tool_results: dict[tuple[int, str], ToolCallEvent]
    judgment: Judgment | None  # the latest
    finished: CaseFinished | None
    sessions: int  # how many times the case was started
    # paid responses a stopped session left on disk unjournaled, by (label, request body
    # sha256): `store.unclaimed.RecordedExchange`s, filled in by `store.Run.replay`
    unclaimed: dict[tuple[str, str], Any] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.finished is not None

    @classmethod
    def from_events(cls, case_id: str, events: Iterable[Event]) -> CaseReplay:
        started, finished, judgment, sessions = None, None, None, 0
        turns: dict[int, ModelTurn] = {}
        tools: dict[tuple[int, str], ToolCallEvent] = {}
        for event in events:
            p = event.payload
            if isinstance(p, CaseStarted):
                started, sessions = started or p, sessions + 1
            elif isinstance(p, ModelTurn):
                turns[p.turn] = p
            elif isinstance(p, ToolCallEvent):
                tools[(p.turn, p.call_id)] = p
            elif isinstance(p, Judgment):
                judgment = p
            elif isinstance(p, CaseFinished):
                finished = p
        ordered = tuple(turns[n] for n in sorted(turns))
        return cls(case_id, started, ordered, tools, judgment, finished, sessions)
