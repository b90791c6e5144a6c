"""The audit's state: the fold of its journal, and the compact summary the model sees.

`AuditState.fold(events)` rebuilds everything from `audit.jsonl` read with its event family
(used live and on resume, so both take one path); `feed(payload)` folds in one event,
dispatching on the payload's type (`audit.events`), never on its name; `apply(step_done)`
advances it by one step. `summary()` is what the model
gets each step instead of a growing transcript: schema, profiles so far, the last queries,
findings committed and dismissed, history, pending critiques and the budget left.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from parquet_agent.audit.events import (
    AuditFinished,
    AuditResumed,
    AuditStarted,
    CandidatesFound,
    ContractChecked,
    EvaluationEvent,
    HistoryChecked,
    StepDone,
    StepModel,
)
from parquet_agent.audit.finding import Finding
from parquet_agent.audit.rules import call_signature
from parquet_agent.transcript import Event, plain

SHOWN_QUERIES = 8
SHOWN_QUERY_CHARS = 1500



def reported_candidates(discovery: dict[str, Any] | None, filings: bool) -> list[dict[str, Any]]:
    """The write_finding arguments of the candidates discovery reports (for the filings corpus
    not those over md5/parsed_md alone: equal texts under two file_stems are documented)."""
    return [c["arguments"] for c in (discovery or {}).get("candidates", []) if c["report"]
            and not (filings and set(c["arguments"]["columns"]) <= {"md5", "parsed_md"})]

@dataclass
class AuditState:
    """Mutable on purpose: only `fold`/`apply` change it, one step at a time."""

    started: AuditStarted | None = None
    history: HistoryChecked | None = None
    discovery: dict[str, Any] | None = None  # audit.discover's candidates (CandidatesFound)
    contract: list[dict[str, Any]] = field(default_factory=list)  # ContractChecked, in order
    schema: dict[str, Any] | None = None
    profiles: dict[str, Any] = field(default_factory=dict)
    profile_errors: dict[str, str] = field(default_factory=dict)  # column -> why get_stats failed
    queries: list[dict[str, Any]] = field(default_factory=list)
    findings: dict[str, Finding] = field(default_factory=dict)
    dismissed: list[dict[str, Any]] = field(default_factory=list)
    collisions: list[dict[str, Any]] = field(default_factory=list)  # same key, other fingerprint
    calls: list[str] = field(default_factory=list)
    tried: set[str] = field(default_factory=set)
    skipped: dict[str, str] = field(default_factory=dict)
    evaluations: list[dict[str, Any]] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)  # step_model + step_done, merged
    pending: StepModel | None = None  # a model step whose step is not done (resume)
    tool_calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True
    judge_tokens: int = 0  # gate evaluators' (LLM judges') tokens and cost
    judge_cost_usd: float = 0.0
    concluded: dict[str, Any] | None = None
    finished: AuditFinished | None = None

    @classmethod
    def fold(cls, events: tuple[Event, ...]) -> AuditState:
        state = cls()
        for event in events:
            state.feed(event.payload)
        return state

    def feed(self, payload: Any) -> None:
        """Fold one journal event in (the live loop feeds each event it writes). A payload of
        another type (an `UnknownEvent`: a kind this version does not know) changes nothing.
        A `failed` finish is not final: a resume goes on past it (`resumed`)."""
        if isinstance(payload, AuditStarted):
            self.started = payload
        elif isinstance(payload, HistoryChecked):
            self.history = payload
        elif isinstance(payload, CandidatesFound):
            self.discovery = payload.discovery
        elif isinstance(payload, ContractChecked):
            self._contract(payload)
        elif isinstance(payload, StepModel):
            self.model_step(payload)
        elif isinstance(payload, EvaluationEvent):
            self.evaluations.append(payload.evaluation)
            self.judged(payload.evaluation.get("usage"))
        elif isinstance(payload, StepDone):
            self.apply(payload)
        elif isinstance(payload, AuditFinished):
            self.finished = payload
            if getattr(payload, "unpriced_attempts", 0):
                self.cost_known = False
        elif isinstance(payload, AuditResumed):
            self.finished = None

    @property
    def next_step(self) -> int:
        return len(self.steps) + 1

    @property
    def rechecks(self) -> list[dict[str, Any]]:
        """The previous run's open findings, re-counted on this snapshot (none before)."""
        return self.history.rechecks if self.history is not None else []

    def judged(self, usage: dict[str, Any] | None) -> None:
        """A gate evaluator's tokens and cost, counted in the audit's totals (not its budget)."""
        if not usage:
            return
        self.judge_tokens += (usage.get("input_tokens") or 0) + (usage.get("output_tokens") or 0)
        if usage.get("cost_usd") is None:
            self.cost_known = False
        else:
            self.judge_cost_usd += usage["cost_usd"]

    def model_step(self, step: StepModel) -> None:
        self.pending = step
        usage = step.usage or {}
        self.tokens += (usage.get("input_tokens") or 0) + (usage.get("output_tokens") or 0)
        if step.cost_usd is None:
            self.cost_known = False
        else:
            self.cost_usd += step.cost_usd

    def apply(self, done: StepDone) -> None:
        """Advance by one finished step."""
        model = self.pending
        self.pending = None
        self.steps.append({**{k: getattr(model, k, None) for k in (
            "reasoning", "confidence", "usage", "cost_usd", "raw")}, **plain(done)})
        if done.gate == "FAIL" or done.tool is None:
            return
        tool, args = done.tool, done.arguments
        self.calls.append(call_signature(tool, args))
        if tool in ("schema_sample", "run_query", "get_stats"):
            self.tool_calls += 1
        if tool == "schema_sample" and done.ok:
            self.schema = done.output
        elif tool == "get_stats" and done.ok:
            self.profiles[args["column"]] = done.output
            self.profile_errors.pop(args["column"], None)
        elif tool == "get_stats":
            error = done.error or {}
            self.profile_errors[args["column"]] = f"{error.get('kind')}: {error.get('message')}"
        elif tool == "run_query":
            self.queries.append({"step": done.step, "sql": args.get("sql"), "ok": done.ok,
                                 "output": done.output, "error": done.error})
        elif tool == "write_finding":
            self._finding(done)
        elif tool == "conclude":
            self.skipped.update(args.get("skipped") or {})
            self.concluded = done.conclude

    def _finding(self, done: StepDone) -> None:
        self.tried.add(done.arguments.get("category", "?"))
        finding = done.finding
        if finding is None:
            return
        if done.finding_action in ("committed", "updated"):
            self.findings[finding["key"]] = Finding.from_json(finding)
        elif done.finding_action == "collision":
            self.collisions.append(finding)
        else:
            self.dismissed.append(finding)

    def _contract(self, checked: ContractChecked) -> None:
        finding = checked.finding
        self.contract.append({"check": checked.check, "description": checked.description,
                              "status": checked.status, "reason": checked.reason,
                              "key": finding.get("key") if finding else None,
                              "count": (finding or {}).get("evidence", {}).get("count")})
        if finding is not None and checked.finding_action in ("committed", "updated"):
            self.findings[finding["key"]] = Finding.from_json(finding)
        elif finding is not None and checked.finding_action == "collision":
            self.collisions.append(finding)

    def held_fingerprint(self, key: str) -> tuple[str, str] | None:
        """(fingerprint, holder) of the finding that already has `key`: one committed in this
        run, or an open finding of the previous run (its re-check); None when the key is free."""
        if key in self.findings:
            return self.findings[key].fingerprint, f"finding {key} of this run"
        for r in self.rechecks:
            if r["key"] == key and r.get("fingerprint"):  # older journals did not keep it
                return r["fingerprint"], f"the previous run's finding {r['title']!r}"
        return None

    def budget_left(self, config) -> dict[str, float | None]:
        return {
            "steps": config.max_steps - len(self.steps),
            "tool_calls": config.max_tool_calls - self.tool_calls,
            "tokens": None if config.max_tokens is None else config.max_tokens - self.tokens,
            "cost_usd": None if config.max_cost_usd is None else round(
                config.max_cost_usd - self.cost_usd, 6),
        }

    def summary(self, config) -> dict[str, Any]:
        """The compact state the model sees this step."""
        critiques = [f"step {s['step']}: {s['critique']}" for s in self.steps[-2:]
                     if s.get("critique")]
        return {
            "dataset": self.started.dataset if self.started is not None else None,
            "schema_sample": self.schema,
            "profiles": self.profiles,
            "profiled": sorted(self.profiles),
            "profile_errors": self.profile_errors,
            "queries": [_shown_query(q) for q in self.queries[-SHOWN_QUERIES:]],
            "findings": [_shown_finding(f) for f in self.findings.values()],
            "dismissed": [{"title": d.get("title"), "category": d.get("category"),
                           "columns": d.get("columns"), "reason": d.get("dismissed_reason")}
                          for d in self.dismissed],
            "categories_tried": sorted(self.tried),
            "history": self.rechecks,
            "discovery": self.discovery,
            "contract": self.contract,
            "critiques": critiques,
            "budget_left": self.budget_left(config),
        }


def _shown_query(query: dict[str, Any]) -> dict[str, Any]:
    text = json.dumps(query["output"] if query["ok"] else query["error"], ensure_ascii=False,
                      default=str)
    if len(text) > SHOWN_QUERY_CHARS:
        text = text[:SHOWN_QUERY_CHARS] + f"... ({len(text)} characters, cut)"
    return {"step": query["step"], "sql": query["sql"], "ok": query["ok"], "result": text}


def _shown_finding(finding: Finding) -> dict[str, Any]:
    return {"key": finding.key, "category": finding.category, "columns": list(finding.columns),
            "title": finding.title, "severity": finding.severity,
            "count": finding.evidence.count, "denominator": finding.evidence.denominator,
            "predicate": finding.predicate}


def progress_line(payload: Any, max_steps: int | None) -> str | None:
    """One short line for a journal event worth telling a person watching a long audit."""
    if isinstance(payload, CandidatesFound):
        found = payload.discovery or {}
        return (f"discovery: {len(found.get('candidates') or [])} candidate(s), "
                f"{found.get('queries', 0)} queries")
    if isinstance(payload, ContractChecked):
        return f"contract {payload.check}: {payload.status} ({payload.description})"
    if isinstance(payload, StepDone):
        what = payload.arguments.get("column") or payload.arguments.get("title") or ""
        ok = "" if payload.ok else f" ({payload.gate if payload.gate == 'FAIL' else 'failed'})"
        return f"step {payload.step}/{max_steps}: {payload.tool} {what}".rstrip() + ok
    if isinstance(payload, AuditFinished):
        return f"{payload.status}: {payload.reason}"
    if isinstance(payload, AuditResumed):
        return f"resumed after: {payload.after}"
    return None
