"""The one fold: a run's journals turned into frozen per-case views and the run's figures.

    view = fold_case(case_id, events, models)   # CaseView: status, counts, tokens, cost, timing
    fold = fold_run(run)                        # RunFold(cases, figures), every case of the grid
    fold.groups()                               # per model x strategy figures (summary.json's)

Every figure a reader sees comes from here, under the contract's names (DESIGN.md): statuses
`complete | incomplete | failed`; the tool-count fields `requested_by_model, processed,
budgeted_attempts, dispatched, cache_hits, source_worker_runs, errors, budget_rejected,
model_rounds, api_attempt_count`. The exporter (case records, cases-index, summary.json, the
report), `Run.summary()`, `cases_df()`, `attempts_df()`, `tool_calls_df()`, the charts, the
explorer and the comparison all read these views; none counts on its own.

Rules: only what the journal holds. A case without `case_finished` is `incomplete` with no
answer; scores only from a scored judgment (the last one counts); a finished case whose
answer waits for a batch judgment is `awaiting_judgment` (no scores yet, counted apart); tool counts as the agent
recorded them in `case_finished`, else the transcript's `tally` over the journal; an unknown cost
stays unknown (None), never 0; a case's wall time is the time it ran in each session, never
the gap between a kill and its resume (`running_ms`). Deterministic: no clock reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Iterable

from parquet_agent.analysis.stats import bootstrap_ci, percentile
from parquet_agent.errors import RunError
from parquet_agent.models.protocol import UNVERIFIED
from parquet_agent.transcript import (
    CASE_STATUSES,
    TOOL_COUNT_FIELDS,
    CaseFailed,
    CaseFinished,
    CaseStarted,
    CorpusDrift,
    Event,
    GateEvaluation,
    JudgeAttempt,
    Judgment,
    JudgmentPending,
    ModelAttempt,
    ModelTurn,
    RunFinished,
    RunStarted,
    ToolCallEvent,
    tally,
)
from parquet_agent.transcript.events import VERDICTS, case_id

if TYPE_CHECKING:
    from parquet_agent.store.run import Run

RUN_JOURNAL = "_run"  # as store.journal names it (imported lazily there: no cycle)
TOKEN_KINDS = ("input", "output", "cached", "reasoning", "cache_write")  # `<kind>_tokens`


def split_case_id(case_id: str) -> tuple[str | None, str | None, str | None]:
    parts = case_id.split("__")
    return (parts[0], parts[1], parts[2]) if len(parts) == 3 else (None, None, None)


def sum_or_none(values: Iterable[float | None]) -> float | None:
    """Sum where unknown stays unknown: one None makes the total None (never counted as 0)."""
    total = 0.0
    for v in values:
        if v is None:
            return None
        total += float(v)
    return round(total, 10)


def num(value: float | None) -> float | None:
    """A figure for JSON: None for unknown or NaN, else rounded to 6 places."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return round(float(value), 6)


@dataclass(frozen=True)
class CaseView:
    """One case as its journal says it went (see the module docstring)."""

    case_id: str
    question_id: str | None
    model: str | None  # configured model name
    strategy: str | None
    status: str  # complete | incomplete | failed
    status_reason: str | None
    finished: bool
    answer: str | None
    forced_final: bool
    started: CaseStarted | None  # the first case_started
    node: str | None  # the engine node of the last session (None: local)
    sessions: int
    failures: tuple[tuple[str, CaseFailed], ...]  # (at, failure)
    turns: tuple[ModelTurn, ...]  # successful answer turns by number (last one wins)
    final_turn: ModelTurn | None  # the turn that gave the answer (or the forced final request)
    attempts: tuple[Event, ...]  # ModelAttempt / JudgeAttempt events, in journal order
    tool_calls: tuple[Event, ...]  # ToolCallEvent events, in journal order
    judgment: Judgment | None  # the primary judge's last one (see fold_case)
    judgments_recorded: int
    judgments: tuple[Judgment, ...]  # every judgment: the run's own, then appended ones
    tool_counts: dict[str, int | None]  # contract names, TOOL_COUNT_FIELDS order
    tool_counts_source: str
    identity: dict[str, str | None]  # configured, requested and actual model and provider
    tokens: dict[str, int]  # TOKEN_KINDS, summed over all attempts
    cost: dict[str, Any]  # usd (None if any unknown), known_usd, unknown_attempts, ...
    timing: dict[str, Any]  # started_at, ended_at, wall_ms, model_ms, judge_ms, tool_ms
    gate_evaluations: tuple[GateEvaluation, ...] = ()  # the action gate's, in journal order
    # `[judge] batch`: the answer waits for the run's judge (a JudgmentPending and no run
    # judgment yet): never scored 0, never "unscored" as if the judge had failed
    awaiting_judgment: bool = False

    @property
    def scored(self) -> bool:
        return self._scored_judgment is not None

    @property
    def _scored_judgment(self) -> Judgment | None:
        return self.judgment if self.judgment is not None and self.judgment.scored else None

    @property
    def correctness(self) -> float | None:
        return j.correctness if (j := self._scored_judgment) is not None else None

    @property
    def citation_support(self) -> float | None:
        return j.citation_support if (j := self._scored_judgment) is not None else None

    @property
    def verdict(self) -> str | None:
        """correct / incorrect / abstained; None when unscored or judged before judge-v2."""
        return j.verdict if (j := self._scored_judgment) is not None else None

    @property
    def abstained_answerable(self) -> bool:
        """An abstention on a question the corpus can answer: a failed search, not an error."""
        return ((j := self._scored_judgment) is not None and j.verdict == "abstained"
                and (j.checks or {}).get("answerable", True) is not False)

    @property
    def answer_attempts(self) -> tuple[Event, ...]:
        return tuple(e for e in self.attempts if not isinstance(e.payload, JudgeAttempt))

    @property
    def judge_attempts(self) -> tuple[Event, ...]:
        return tuple(e for e in self.attempts if isinstance(e.payload, JudgeAttempt))

    def row(self) -> dict[str, Any]:
        """The case as one flat row: the cases-index columns the journal alone decides."""
        return {
            "case_id": self.case_id, "question_id": self.question_id, "model": self.model,
            "provider": self.identity["configured_provider"],
            "actual_model": self.identity["actual_model"], "strategy": self.strategy,
            "status": self.status, "status_reason": self.status_reason, "answer": self.answer,
            "correctness": self.correctness, "citation_support": self.citation_support,
            "scored": self.scored, "verdict": self.verdict,
            "rationale": self.judgment.rationale if self.judgment else None,
            **{k: self.tool_counts.get(k) for k in TOOL_COUNT_FIELDS},
            **{f"{k}_tokens": v for k, v in self.tokens.items()},
            "cost_usd": self.cost["usd"], "cost_unknown_attempts": self.cost["unknown_attempts"],
            "wall_ms": self.timing["wall_ms"], "started_at": self.timing["started_at"],
        }


# -- one case ---------------------------------------------------------------------------------


def _status(finished: CaseFinished | None, started: CaseStarted | None,
            failures: list[tuple[str, CaseFailed]]) -> tuple[str, str | None, str | None]:
    """(status, reason, answer): only what case_finished says; no case_finished: incomplete."""
    if finished is not None:
        return finished.status, finished.reason, finished.answer
    if started is None:
        return "incomplete", "never started: the run stopped before this case began", None
    if failures:
        f = failures[-1][1]
        return "incomplete", f"unfinished: {f.error_type}: {f.message}", None
    return ("incomplete",
            "unfinished: the run stopped before this case finished (no case_finished)", None)


def _identity(configured: dict[str, Any], answer_attempts: list[Event]) -> dict[str, Any]:
    ok = [e.payload.attempt for e in answer_attempts if e.payload.attempt.outcome == "ok"]
    ident = ok[-1] if ok else (answer_attempts[-1].payload.attempt if answer_attempts else None)
    return {
        "configured_model": configured.get("model"),
        "configured_provider": configured.get("provider"),
        "requested_model": (ident and ident.requested_model) or configured.get("model"),
        "requested_provider": (ident and ident.requested_provider)
        or configured.get("provider"),
        "actual_model": (ident and ident.actual_model) or UNVERIFIED,
        "actual_provider": (ident and ident.actual_provider) or UNVERIFIED,
    }


def _cost(attempts: list[Event], answer: list[Event], judge: list[Event]) -> dict[str, Any]:
    def usd(events: list[Event]) -> list[float | None]:
        return [e.payload.attempt.cost.usd for e in events]

    costs = usd(attempts)
    known = [c for c in costs if c is not None]
    return {
        "usd": sum_or_none(costs), "known_usd": round(sum(known), 10),
        "unknown_attempts": len(costs) - len(known),
        "answer_usd": sum_or_none(usd(answer)), "judge_usd": sum_or_none(usd(judge)),
        "sources": sorted({e.payload.attempt.cost.source or "unknown" for e in attempts}),
    }


def _timing(events: tuple[Event, ...], started: Event | None, finished: Event | None,
            answer: list[Event], judge: list[Event], tools: list[Event]) -> dict[str, Any]:
    def ms(items: list[Event]) -> float:
        return round(sum(e.payload.attempt.duration_ms or 0 for e in items), 3)

    return {
        "started_at": started.at if started else None,
        "ended_at": finished.at if finished else (events[-1].at if events else None),
        "wall_ms": running_ms(events, finished),
        "model_ms": ms(answer), "judge_ms": ms(judge),
        "tool_ms": round(sum((e.payload.timings.total_ms if e.payload.timings else 0) or 0
                             for e in tools), 3),
    }


def running_ms(events: tuple[Event, ...], finished: Event | None) -> float | None:
    """A finished case's wall time while it ran: the last session's own `wall_ms`, plus each
    earlier session of the same try from its `case_started` to its last event. Never the time
    between a kill and the resume (issue 19: a p50 of 296,008 ms), never an earlier try that
    finished before `--retry-failed`. None until the case finishes (unfinished: no latency)."""
    if finished is None:
        return None
    end = events.index(finished)
    begin = max((i for i, e in enumerate(events[:end]) if isinstance(e.payload, CaseFinished)),
                default=-1) + 1
    starts = [i for i in range(begin, end) if isinstance(events[i].payload, CaseStarted)]
    last_wall = finished.payload.wall_ms
    if last_wall is None or not starts:  # an old journal without wall_ms: its timestamps
        first = events[starts[0]] if starts else events[begin]
        return round(_seconds_between(first.at, finished.at) * 1000, 1)
    earlier = sum(_seconds_between(events[a].at, events[b - 1].at)
                  for a, b in zip(starts, starts[1:]))
    return round(last_wall + earlier * 1000, 1)


def _seconds_between(start: str, end: str) -> float:
    def parse(at: str) -> datetime:
        return datetime.fromisoformat(at.replace("Z", "+00:00"))

    return max(0.0, (parse(end) - parse(start)).total_seconds())


def _final_turn(turns: list[ModelTurn]) -> ModelTurn | None:
    last = turns[-1] if turns else None
    if last is not None and (last.final or not last.reply.tool_calls):
        return last
    return None


def fold_case(case_id: str, events: tuple[Event, ...],
              models: dict[str, dict[str, Any]] | None = None,
              appended: Iterable[Judgment] = (), judging: str | None = None) -> CaseView:
    """The view of one case from its events (as `Run.case_events` gives them). `appended`:
    judgments a re-judging appended (judge.rejudge); `judging` picks whose judgment counts (a
    judging id; None: the run's own judge), and the case is unscored if that one has none."""
    qid, model, strategy = split_case_id(case_id)
    started = next((e for e in events if isinstance(e.payload, CaseStarted)), None)
    if started is not None:
        qid, model, strategy = (started.payload.question_id, started.payload.model,
                                started.payload.strategy)
    finished = next((e for e in reversed(events) if isinstance(e.payload, CaseFinished)), None)
    attempts = [e for e in events if isinstance(e.payload, ModelAttempt)]
    answer = [e for e in attempts if not isinstance(e.payload, JudgeAttempt)]
    judge = [e for e in attempts if isinstance(e.payload, JudgeAttempt)]
    tools = [e for e in events if isinstance(e.payload, ToolCallEvent)]
    by_number = {e.payload.turn or 0: e.payload for e in events
                 if isinstance(e.payload, ModelTurn)}
    turns = [by_number[n] for n in sorted(by_number)]
    judgments = [e.payload for e in events if isinstance(e.payload, Judgment)]
    awaiting = (finished is not None and any(isinstance(e.payload, JudgmentPending)
                                             for e in events)
                and not any(j.judging is None for j in judgments))
    judgments += list(appended)
    chosen = [j for j in judgments if j.judging == judging]
    failures = [(e.at, e.payload) for e in events if isinstance(e.payload, CaseFailed)]
    status, reason, answer_text = _status(finished.payload if finished else None,
                                          started.payload if started else None, failures)
    final_turn = _final_turn(turns)
    recorded = finished.payload.tool_counts if finished else {}
    if recorded:
        counts: dict[str, int | None] = {k: recorded.get(k) for k in TOOL_COUNT_FIELDS}
        source = "case_finished"
    else:
        counts = dict(tally(turns, (e.payload for e in tools), len(attempts)).to_dict())
        source = "recomputed from the journal (the case did not finish)"
    usage = [e.payload.attempt.usage for e in attempts]
    return CaseView(
        case_id=case_id, question_id=qid, model=model, strategy=strategy, status=status,
        status_reason=reason, finished=finished is not None, answer=answer_text,
        forced_final=bool(final_turn and final_turn.final),
        started=started.payload if started else None,
        node=next((e.payload.node for e in reversed(events)
                   if isinstance(e.payload, CaseStarted)), None),
        sessions=sum(isinstance(e.payload, CaseStarted) for e in events),
        failures=tuple(failures), turns=tuple(turns), final_turn=final_turn,
        attempts=tuple(attempts), tool_calls=tuple(tools),
        judgment=chosen[-1] if chosen else None, judgments_recorded=len(judgments),
        judgments=tuple(judgments),
        tool_counts=counts, tool_counts_source=source,
        identity=_identity((models or {}).get(model or "", {}), answer),
        tokens={k: sum(getattr(u, f"{k}_tokens") or 0 for u in usage)
                for k in TOKEN_KINDS},
        cost=_cost(attempts, answer, judge),
        timing=_timing(events, started, finished, answer, judge, tools),
        gate_evaluations=tuple(e.payload for e in events if isinstance(e.payload, GateEvaluation)),
        awaiting_judgment=awaiting)


# -- the run ----------------------------------------------------------------------------------


def run_figures(run_events: tuple[Event, ...]) -> dict[str, Any]:
    """Per-run figures from the run journal: sessions, wall time, peak memory, health calls."""
    finished = [e.payload for e in run_events if isinstance(e.payload, RunFinished)]
    health = [e.payload.attempt for e in run_events if isinstance(e.payload, ModelAttempt)]
    health_costs = [a.cost.usd for a in health]
    rss = [f.peak_rss_bytes for f in finished if f.peak_rss_bytes is not None]
    return {
        "sessions": sum(isinstance(e.payload, RunStarted) for e in run_events),
        "sessions_finished": len(finished),
        "session_status": [f.status for f in finished],
        "wall_ms": num(sum(f.wall_ms or 0 for f in finished)),
        "peak_rss_bytes": max(rss) if rss else None,
        "health_attempts": len(health),
        "health_cost_usd_known": num(sum(c for c in health_costs if c is not None)),
        "corpus_drift": [e.payload.excluded_new_files for e in run_events
                         if isinstance(e.payload, CorpusDrift)],
    }


def group_figures(model: str, strategy: str, cases: list[CaseView],
                  seed: int = 0) -> dict[str, Any]:
    """Figures of one model x strategy cell (summary.json's `by_model_strategy` entries)."""
    corr = bootstrap_ci([c.correctness for c in cases], seed=seed)
    cite = bootstrap_ci([c.citation_support for c in cases], seed=seed)
    costs = [c.cost["usd"] for c in cases]
    statuses = [c.status for c in cases]
    walls = [c.timing["wall_ms"] for c in cases]
    return {
        "model": model, "strategy": strategy, "cases": len(cases),
        **{s: statuses.count(s) for s in CASE_STATUSES},
        "completion_rate": num(statuses.count("complete") / len(cases)) if cases else None,
        "scored": corr.n,
        "correctness": {"mean": num(corr.mean), "low": num(corr.low), "high": num(corr.high)},
        "citation_support": {"mean": num(cite.mean), "low": num(cite.low),
                             "high": num(cite.high)},
        **verdict_figures(cases),
        "tool_counts": {k: sum(c.tool_counts.get(k) or 0 for c in cases)
                        for k in TOOL_COUNT_FIELDS},
        "input_tokens": sum(c.tokens["input"] for c in cases),
        "output_tokens": sum(c.tokens["output"] for c in cases),
        # the cell's cost: None (unknown) as soon as one case's is, never a partial sum
        # passed off as the total; what is known is `cost_usd_known`
        "cost_usd": num(sum_or_none(costs)),
        "cost_usd_known": num(sum(c for c in costs if c is not None)),
        "cases_with_unknown_cost": sum(c is None for c in costs),
        "latency_p50_ms": num(percentile(walls, 50)),
        "latency_p95_ms": num(percentile(walls, 95)),
        "bootstrap": {"seed": seed, "level": 0.95},
    }


def verdict_figures(cases: list[CaseView]) -> dict[str, Any]:
    """Correct / incorrect / abstained counts and rates over the cases judged with a verdict
    (as the FinanceBench paper reports them), and the abstentions on answerable questions."""
    verdicts = [c.verdict for c in cases if c.verdict is not None]
    out: dict[str, Any] = {"judged_with_verdict": len(verdicts)}
    for v in VERDICTS:
        out[v] = verdicts.count(v)
        out[f"{v}_rate"] = num(verdicts.count(v) / len(verdicts)) if verdicts else None
    out["abstained_answerable"] = sum(c.abstained_answerable for c in cases)
    awaiting = sum(c.awaiting_judgment for c in cases)
    if awaiting:  # only runs judged by batch have the key (older exports stay as they were)
        out["awaiting_judgment"] = awaiting
    return out


@dataclass(frozen=True)
class RunFold:
    """Every case of a run (the planned grid first, then any other journal) and its figures."""

    run_id: str
    cases: tuple[CaseView, ...]
    figures: dict[str, Any]  # run_figures(): the run journal's
    health: tuple[Event, ...] = field(default=())  # health-check attempts (run journal)

    def groups(self, seed: int = 0) -> list[dict[str, Any]]:
        cells: dict[tuple[str, str], list[CaseView]] = {}
        for c in self.cases:
            cells.setdefault((str(c.model), str(c.strategy)), []).append(c)
        return [group_figures(m, s, g, seed) for (m, s), g in sorted(cells.items())]

    def totals(self) -> dict[str, Any]:
        """Run-wide case figures (summary.json's top level)."""
        costs = [c.cost["usd"] for c in self.cases]
        return {
            "cases": len(self.cases),
            "status_counts": {s: sum(c.status == s for c in self.cases) for s in CASE_STATUSES},
            "scored": sum(c.scored for c in self.cases),
            **verdict_figures(list(self.cases)),
            "cases_cost_usd_known": num(sum(c for c in costs if c is not None)),
            "cases_with_unknown_cost": sum(c is None for c in costs),
        }


    def activity(self) -> dict[str, Any]:
        """What the run has done so far, health checks included (`RunStore.list()`'s)."""
        health = [e.payload.attempt.cost.usd for e in self.health]
        return {
            "cases_started": sum(c.started is not None for c in self.cases),
            "cases_finished": sum(c.finished for c in self.cases),
            "api_attempts": sum(len(c.attempts) for c in self.cases) + len(health),
            "cost_usd_known": num(sum(c.cost["known_usd"] for c in self.cases)
                                  + sum(u for u in health if u is not None)),
            "cost_unknown_attempts": sum(c.cost["unknown_attempts"] for c in self.cases)
            + sum(u is None for u in health),
        }


def node_figures(cases: Iterable[CaseView], wall_ms: float | None) -> dict[str, Any]:
    """Per engine node (Ray runs only): cases finished there (the node of a case's last
    session) and cases per minute of wall; `{}` for a local run (its summary.json has no
    `nodes`)."""
    nodes: dict[str, dict[str, Any]] = {}
    for c in cases:
        if c.node is None or not c.finished:
            continue
        entry = nodes.setdefault(c.node, {"cases": 0, "case_s": 0.0})
        entry["cases"] += 1
        entry["case_s"] += (c.timing["wall_ms"] or 0.0) / 1000
    for entry in nodes.values():
        entry["cases_per_min"] = round(entry["cases"] / (wall_ms / 60000), 2) if wall_ms else None
        entry["case_s"] = round(entry["case_s"], 3)
    return {"nodes": nodes} if nodes else {}


def make_fold(run_id: str, cases: tuple[CaseView, ...], run_events: tuple[Event, ...]) -> RunFold:
    figures = run_figures(run_events)
    figures |= node_figures(cases, figures["wall_ms"])
    health = tuple(e for e in run_events if isinstance(e.payload, ModelAttempt))
    return RunFold(run_id, cases, figures, health)


def configured_models(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m.get("name"): m for m in (manifest.get("config") or {}).get("models", [])}


def planned_case_ids(run: Run) -> list[str]:
    """Every case of an experiment's frozen grid: question ids x models x strategies."""
    m = run.manifest
    return [case_id(q, model["name"], s) for q in m["question_ids"]
            for model in m["config"]["models"] for s in m["config"]["strategies"]]


def all_case_ids(run: Run) -> list[str]:
    """Every case: the frozen grid first (in grid order), then any other journal (a run
    aborted before its manifest has only the latter)."""
    try:
        planned = planned_case_ids(run)
    except (KeyError, TypeError, RunError):
        planned = []
    seen = set(planned)
    return planned + [c for c in run.case_ids() if c not in seen]


def fold_run(run: Run, *, resolve: bool = False, judge: str | None = None) -> RunFold:
    """Fold every journal of `run`. `resolve` reads offloaded tool texts back (the case records
    need them; figures do not). `judge`: whose judgments count (a judging id, `"run"` for the
    config's judge; default: the primary one, see `judge.rejudge`)."""
    from parquet_agent.analysis.judgments import (
        RUN_JUDGE,
        appended_judgments,
        primary_judging,
    )

    try:
        models = configured_models(run.manifest)
    except RunError:  # a run aborted before its manifest still folds
        models = {}
    appended = appended_judgments(run.dir)
    selected = primary_judging(run.dir) if judge is None else (
        None if judge == RUN_JUDGE else judge)
    cases = tuple(fold_case(cid, run.case_events(cid, resolve=resolve), models,
                            appended.get(cid, ()), selected)
                  for cid in all_case_ids(run))
    return make_fold(run.run_id, cases, run.case_events(RUN_JOURNAL, resolve=False))
