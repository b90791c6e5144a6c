"""The audit journal's typed events (`journal/audit.jsonl` in the run folder).

Written with `store.journal.Journal` (one line per event, fdatasync before `append` returns; a
torn last line is skipped and kept aside) through the transcript's one codec, and read back
with `read_journal(path, family=AUDIT_EVENTS)`: the family makes each line its typed payload
below (without it, lines read as `UnknownEvent`). Order:

    audit_started    lineage, snapshot, dataset description, config, previous run id
    history_checked  every open finding of the previous run re-counted on this snapshot
    candidates_found the deterministic discovery's candidates, references, keys and notes
                     (`audit.discover`), what every auditor starts from
    contract_checked one check of the user's contract through the finding gate (before the
                     model's first step): violated (a finding), holds, dismissed, not_checked
    step_model       the model's reply for one step (reasoning, one action, confidence, usage,
                     cost, raw paths): written before the action runs, replayed on resume so no
                     inference call is paid twice
    evaluation       one evaluator's verdict at one gate (evaluator, input, verdict, critique,
                     raw paths)
    step_done        the action's outcome: tool output or error, and the finding committed,
                     updated or dismissed; the state is the fold of these
    audit_finished   status (complete | incomplete | failed) and why
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from parquet_agent.transcript import EventFamily


@dataclass(frozen=True)
class AuditStarted:
    EVENT: ClassVar[str] = "audit_started"
    run_id: str
    lineage: str
    snapshot: dict[str, Any]
    dataset: dict[str, Any]
    config: dict[str, Any]
    model: dict[str, Any]
    previous_run: str | None = None


@dataclass(frozen=True)
class HistoryChecked:
    EVENT: ClassVar[str] = "history_checked"
    previous_run: str | None
    rechecks: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class CandidatesFound:
    EVENT: ClassVar[str] = "candidates_found"
    discovery: dict[str, Any]


@dataclass(frozen=True)
class ContractChecked:
    """One check of the user's contract (`audit.contracts`), through the finding gate."""

    EVENT: ClassVar[str] = "contract_checked"
    check: str  # its id in the contract, e.g. "keys[0].duplicates"
    description: str
    status: str  # violated | holds | dismissed | not_checked
    reason: str | None = None
    finding: dict[str, Any] | None = None
    finding_action: str | None = None  # committed | updated | dismissed | collision


@dataclass(frozen=True)
class StepModel:
    EVENT: ClassVar[str] = "step_model"
    step: int
    reasoning: str | None
    tool: str | None
    arguments: dict[str, Any]
    confidence: float | None
    usage: dict[str, Any]
    cost_usd: float | None
    raw: list[str]
    problem: str | None = None  # the reply was not exactly one tool call


@dataclass(frozen=True)
class EvaluationEvent:
    EVENT: ClassVar[str] = "evaluation"
    evaluation: dict[str, Any]


@dataclass(frozen=True)
class StepDone:
    EVENT: ClassVar[str] = "step_done"
    step: int
    tool: str | None
    arguments: dict[str, Any]
    gate: str  # the action gate's verdict (FAIL: the tool did not run)
    ok: bool
    output: Any = None
    error: dict[str, Any] | None = None
    critique: str | None = None
    finding: dict[str, Any] | None = None
    finding_action: str | None = None  # committed | updated | dismissed | collision
    conclude: dict[str, Any] | None = None  # the run gate's outcome when the action concluded
    timings_ms: float | None = None


@dataclass(frozen=True)
class AuditFinished:
    EVENT: ClassVar[str] = "audit_finished"
    status: str  # complete | incomplete | failed
    reason: str
    unpriced_attempts: int = 0  # a failed model call's attempts whose cost is unknown


@dataclass(frozen=True)
class AuditResumed:
    """A resume going on past a `failed` finish (the model server died; steps not yet answered
    are asked again, answered ones never)."""
    EVENT: ClassVar[str] = "audit_resumed"
    after: str  # the failed finish's reason


AUDIT_EVENTS = EventFamily.of("audit", AuditStarted, HistoryChecked, CandidatesFound,
                              ContractChecked, StepModel,
                              EvaluationEvent, StepDone, AuditFinished, AuditResumed)
