"""Pandas views of a run, all read from the fold (`analysis.fold`), so they say what the exports say.

Every frame of cases, attempts and tool calls starts with the same keys, `KEYS` = run_id,
case_id, question_id, model, strategy, so they join (`attempts.merge(cases, on=KEYS)`) and
concatenate across runs; `summary_frame` joins on model and strategy. Pass one `fold` to
several frames to fold the journals once (`export --tables` does).

- `cases_frame(run)`: one row per case of the grid: the question, its reference answer, the
  answer, the judge's scores and rationale, and the cases-index columns the journal decides
  (contract names: `complete | incomplete | failed`, the tool-count fields of DESIGN.md;
  `cost_usd` is NaN as soon as one attempt's cost is unknown), plus `finished`, `sessions`,
  `ended_at`, `api_attempts` and `cost_usd_known` (the attempts whose cost is known, as the
  case record's `cost.known_usd`); unscored scores are NaN, never 0.
- `attempts_frame(run)`: one row per HTTP attempt (answer, final answer, judge, health) with its
  `role`, tokens, timing, cost, cost source and raw paths.
- `ledger_frame(run)`: the same attempts as a cost ledger: `category` is the purpose (`answer`,
  `judge`, `health`) of a successful attempt and `retries` for one that failed or was retried;
  `cost_usd` stays NaN when the cost is unknown (`cost_known` False), never 0.
- `tool_calls_frame(run)`: one row per tool response (turn, call id, arguments, error, cache,
  timings).
- `summary_frame(run, seed)`: per model x strategy, summary.json's `by_model_strategy` figures
  flattened (`correctness_low`, `tool_counts.processed` -> `processed`, ...).
- `run_figures(run)`: summary.json's `run` block.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import pandas as pd

from parquet_agent.analysis.fold import CaseView, RunFold, fold_run, split_case_id
from parquet_agent.transcript import TOOL_COUNT_FIELDS, Event, JudgeAttempt
from parquet_agent.transcript.rawview import request_name

if TYPE_CHECKING:
    from parquet_agent.store.run import Run


def _fold(run: Run, fold: RunFold | None) -> RunFold:
    return fold if fold is not None else fold_run(run)


KEYS = ["run_id", "case_id", "question_id", "model", "strategy"]


def _keys(run_id: str, case: CaseView | None) -> dict[str, Any]:
    """The join keys of a row: its case's, or only the run's (a health check)."""
    if case is None:
        return {"run_id": run_id, "case_id": None, "question_id": None, "model": None,
                "strategy": None}
    return {"run_id": run_id, "case_id": case.case_id, "question_id": case.question_id,
            "model": case.model, "strategy": case.strategy}


def _attempt_row(keys: dict[str, Any], event: Event | None) -> dict[str, Any]:
    p = event.payload if event is not None else None
    a = asdict(p.attempt) if p is not None else {}
    usage, cost = a.get("usage") or {}, a.get("cost") or {}
    outcome = a.get("outcome")
    purpose = a.get("purpose") or ("judge" if isinstance(p, JudgeAttempt) else "answer")
    usd = cost.get("usd")
    return {
        **keys, "label": p.label if p else None,
        "purpose": purpose, "role": p.role if p else None, "number": a.get("number"),
        "outcome": outcome, "category": purpose if outcome == "ok" else "retries",
        "requested_model": a.get("requested_model"),
        "requested_provider": a.get("requested_provider"),
        "actual_model": a.get("actual_model"), "actual_provider": a.get("actual_provider"),
        "temperature": a.get("temperature"), "reasoning_effort": a.get("reasoning_effort"),
        "started_at": a.get("started_at"), "ended_at": a.get("ended_at"),
        "queue_ms": a.get("queue_ms"), "duration_ms": a.get("duration_ms"),
        "http_status": a.get("http_status"), "error": a.get("error"),
        "response_id": a.get("response_id"), "finish_reason": a.get("finish_reason"),
        "input_tokens": usage.get("input_tokens"), "output_tokens": usage.get("output_tokens"),
        "cached_tokens": usage.get("cached_tokens"),
        "reasoning_tokens": usage.get("reasoning_tokens"),
        "cache_write_tokens": usage.get("cache_write_tokens"),
        "cost_usd": float(usd) if usd is not None else float("nan"),
        "cost_known": usd is not None, "cost_source": cost.get("source") or "unknown",
        "price_table": cost.get("price_table"),
        "request_path": a.get("request_path"), "response_path": a.get("response_path"),
    }


_ATTEMPT_COLUMNS = list(_attempt_row(_keys("", None), None).keys())


def attempts_frame(run: Run, fold: RunFold | None = None) -> pd.DataFrame:
    """One row per attempt: every case's (grid order), then the health checks (no case: their
    `case_id`, `question_id`, `model` and `strategy` are None; the label names the model)."""
    fold = _fold(run, fold)
    rows = [_attempt_row(_keys(fold.run_id, c), e) for c in fold.cases for e in c.attempts]
    rows += [_attempt_row(_keys(fold.run_id, None), e) for e in fold.health]
    return pd.DataFrame(rows, columns=_ATTEMPT_COLUMNS)


LEDGER_COLUMNS = [*KEYS, "label", "purpose", "category", "number", "outcome",
                  "started_at", "cost_usd", "cost_known", "cost_source", "price_table",
                  "input_tokens", "output_tokens"]


def ledger_frame(run: Run, fold: RunFold | None = None) -> pd.DataFrame:
    """Every recorded attempt, plus requests that were written (so possibly sent and billed)
    but whose attempt was never journaled because the process died: cost unknown, never 0."""
    attempts = attempts_frame(run, fold)
    ledger = attempts[LEDGER_COLUMNS]
    known = set(attempts["request_path"].dropna())
    rows = []
    for path in run.raw.names():
        name = request_name(path)
        if name is None or path in known or not path.startswith("raw/"):
            continue
        case = name.label.split("/", 1)[0]
        purpose = ("health" if case == "_health" else
                   "judge" if "/judge" in name.label else "answer")
        cid = None if case == "_health" else case
        qid, model, strategy = split_case_id(cid) if cid else (None, None, None)
        rows.append({c: None for c in LEDGER_COLUMNS} | {
            "run_id": run.run_id, "case_id": cid, "question_id": qid, "model": model,
            "strategy": strategy, "label": name.label, "purpose": purpose, "category": purpose,
            "number": name.number, "outcome": "interrupted",
            "cost_usd": None, "cost_known": False,
            "cost_source": "unknown: request recorded, no response journaled (process stopped)"})
    if not rows:
        return ledger
    return pd.concat([ledger, pd.DataFrame(rows, columns=LEDGER_COLUMNS)], ignore_index=True)


_TOOL_COLUMNS = [*KEYS, "turn", "call_id", "name", "arguments", "ok", "error_kind",
                 "error_message", "budgeted", "budget_rejected", "dispatched", "cache_hit",
                 "queue_ms", "run_ms", "total_ms", "worker_id", "peak_rss_bytes", "at"]


def tool_calls_frame(run: Run, fold: RunFold | None = None) -> pd.DataFrame:
    """One row per tool response, in each case's order, keyed like the other frames."""
    fold = _fold(run, fold)
    rows = []
    for case in fold.cases:
        keys = _keys(fold.run_id, case)
        for e in case.tool_calls:
            t = e.payload
            timings = asdict(t.timings) if t.timings else {}
            rows.append({
                **keys, "turn": t.turn, "call_id": t.call_id, "name": t.name,
                "arguments": t.arguments, "ok": t.ok, "error_kind": t.error_kind,
                "error_message": t.error_message, "budgeted": t.budgeted,
                "budget_rejected": t.error_kind == "budget", "dispatched": t.dispatched,
                "cache_hit": bool(t.cache_hit), "queue_ms": timings.get("queue_ms"),
                "run_ms": timings.get("run_ms"), "total_ms": timings.get("total_ms"),
                "worker_id": t.worker_id, "peak_rss_bytes": t.peak_rss_bytes, "at": e.at,
            })
    return pd.DataFrame(rows, columns=_TOOL_COLUMNS)


CASE_COLUMNS = [*KEYS, "provider", "actual_model", "question", "reference_answer",
                "status", "status_reason", "answer", "correctness", "citation_support", "scored",
                "rationale", *TOOL_COUNT_FIELDS, "input_tokens", "output_tokens",
                "cached_tokens", "reasoning_tokens", "cache_write_tokens", "cost_usd",
                "cost_unknown_attempts",
                "wall_ms", "started_at", "ended_at", "finished", "sessions", "api_attempts",
                "cost_usd_known", "awaiting_judgment"]


def cases_frame(run: Run, fold: RunFold | None = None) -> pd.DataFrame:
    """One row per case of the frozen grid: planned cases that never started are rows too
    (status `incomplete`), so summaries and charts count what the report counts."""
    fold = _fold(run, fold)
    rows = [c.row() | _keys(fold.run_id, c) | {
        "question": c.started.question if c.started else None,
        "reference_answer": c.started.reference_answer if c.started else None,
        "ended_at": c.timing["ended_at"], "finished": c.finished, "sessions": c.sessions,
        "api_attempts": len(c.attempts), "cost_usd_known": c.cost["known_usd"],
        "awaiting_judgment": c.awaiting_judgment}
            for c in fold.cases]
    frame = pd.DataFrame(rows, columns=CASE_COLUMNS)
    for col in ("correctness", "citation_support", "cost_usd", "wall_ms"):
        frame[col] = pd.to_numeric(frame[col], errors="coerce")  # None -> NaN
    return frame


def _flat_group(g: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in g.items()
           if k not in ("correctness", "citation_support", "tool_counts", "bootstrap")}
    for score in ("correctness", "citation_support"):
        out[score] = g[score]["mean"]
        out[f"{score}_low"], out[f"{score}_high"] = g[score]["low"], g[score]["high"]
    out.update(g["tool_counts"])
    return out


def summary_frame(run: Run, *, seed: int = 0, fold: RunFold | None = None) -> pd.DataFrame:
    """summary.json's per model x strategy figures, one row each (unknown values NaN)."""
    rows = [_flat_group(g) for g in _fold(run, fold).groups(seed)]
    frame = pd.DataFrame(rows)
    for col in ("completion_rate", "correctness", "correctness_low", "correctness_high",
                "citation_support", "citation_support_low", "citation_support_high",
                "cost_usd", "cost_usd_known", "latency_p50_ms", "latency_p95_ms",
                "correct_rate", "incorrect_rate", "abstained_rate"):
        if col in frame:
            frame[col] = pd.to_numeric(frame[col], errors="coerce")
    return frame


def run_figures(run: Run, fold: RunFold | None = None) -> dict[str, Any]:
    """summary.json's `run` block: sessions, wall time, peak RSS, health checks, drift."""
    return dict(_fold(run, fold).figures)
