"""Pandas views of a run, computed from its journals only (so they work for any saved run).

- `attempts_frame(run)`: one row per HTTP attempt (answer, judge, health) with tokens, timing,
  cost, cost source and raw paths.
- `ledger_frame(run)`: the same attempts as a cost ledger: `category` is the purpose (`answer`,
  `judge`, `health`) of a successful attempt and `retries` for one that failed or was retried;
  `cost_usd` stays NaN when the cost is unknown (`cost_known` False), never 0.
- `cases_frame(run)`: one row per case journal: model, strategy, status, scores of the latest
  judgment (NaN when unscored), tool effort, rounds, attempts, tokens, cost, wall time.
- `tool_calls_frame(run)`: one row per tool response.
- `summary_frame(run, seed)`: per model x strategy: cases, completed, completion rate, mean
  correctness and citation support with seeded 95% bootstrap intervals, tool calls / errors /
  cache hits / budget rejections, case latency p50/p95 (ms), tokens, known cost and the number
  of attempts whose cost is unknown.
- `run_figures(run)`: per run: wall time over all sessions, API attempts, peak RSS of the process
  tree (as the runner recorded it in `run_finished`), cost.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pandas as pd

from parquet_agent.stats import bootstrap_ci, percentile
from parquet_agent.store.journal import ATTEMPT_EVENTS, RUN_JOURNAL

if TYPE_CHECKING:
    from parquet_agent.store.run import Run



def _ts(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def _attempt_row(run_id: str, case_id: str | None, event_name: str, data: dict) -> dict[str, Any]:
    a = data.get("attempt") or {}
    usage, cost = a.get("usage") or {}, a.get("cost") or {}
    outcome = a.get("outcome")
    purpose = a.get("purpose") or ("judge" if event_name == "judge_attempt" else "answer")
    usd = cost.get("usd")
    return {
        "run_id": run_id, "case_id": case_id, "label": data.get("label") or a.get("label"),
        "purpose": purpose, "number": a.get("number"), "outcome": outcome,
        "category": purpose if outcome == "ok" else "retries",
        "requested_model": a.get("requested_model"), "requested_provider": a.get("requested_provider"),
        "actual_model": a.get("actual_model"), "actual_provider": a.get("actual_provider"),
        "temperature": a.get("temperature"), "reasoning_effort": a.get("reasoning_effort"),
        "started_at": a.get("started_at"), "ended_at": a.get("ended_at"),
        "queue_ms": a.get("queue_ms"), "duration_ms": a.get("duration_ms"),
        "http_status": a.get("http_status"), "error": a.get("error"),
        "response_id": a.get("response_id"), "finish_reason": a.get("finish_reason"),
        "input_tokens": usage.get("input_tokens"), "output_tokens": usage.get("output_tokens"),
        "cached_tokens": usage.get("cached_tokens"), "reasoning_tokens": usage.get("reasoning_tokens"),
        "cache_write_tokens": usage.get("cache_write_tokens"),
        "cost_usd": float(usd) if usd is not None else float("nan"),
        "cost_known": usd is not None, "cost_source": cost.get("source") or "unknown",
        "price_table": cost.get("price_table"),
        "request_path": a.get("request_path"), "response_path": a.get("response_path"),
    }


_ATTEMPT_COLUMNS = list(_attempt_row("", None, "model_attempt", {}).keys())


def attempts_frame(run: Run, events: dict | None = None) -> pd.DataFrame:
    """One row per attempt; `events` (from `run.all_events()`) saves reading the journals."""
    events = run.all_events() if events is None else events
    rows = [_attempt_row(run.run_id, None if cid == RUN_JOURNAL else cid, e.event, e.data)
            for cid, case_events in events.items() for e in case_events
            if e.event in ATTEMPT_EVENTS]
    return pd.DataFrame(rows, columns=_ATTEMPT_COLUMNS)


LEDGER_COLUMNS = ["run_id", "case_id", "label", "purpose", "category", "number", "outcome",
                  "started_at", "cost_usd", "cost_known", "cost_source", "price_table",
                  "input_tokens", "output_tokens"]


_REQUEST = re.compile(r"^raw/(?P<label>.+)\.attempt-(?P<number>\d+)\.request\.json(~\d+)?$")


def ledger_frame(run: Run) -> pd.DataFrame:
    """Every recorded attempt, plus requests that were written (so possibly sent and billed)
    but whose attempt was never journaled because the process died: cost unknown, never 0."""
    attempts = attempts_frame(run)
    ledger = attempts[LEDGER_COLUMNS]
    known = set(attempts["request_path"].dropna())
    rows = []
    for path in run.raw.names():
        m = _REQUEST.match(path)
        if m is None or path in known:
            continue
        label = m.group("label")
        case = label.split("/", 1)[0]
        purpose = "health" if case == "_health" else ("judge" if "/judge" in label else "answer")
        rows.append({c: None for c in LEDGER_COLUMNS} | {
            "run_id": run.run_id, "case_id": None if case == "_health" else case,
            "label": label, "purpose": purpose, "category": purpose,
            "number": int(m.group("number")), "outcome": "interrupted",
            "cost_usd": None, "cost_known": False,
            "cost_source": "unknown: request recorded, no response journaled (process stopped)"})
    if not rows:
        return ledger
    return pd.concat([ledger, pd.DataFrame(rows, columns=LEDGER_COLUMNS)], ignore_index=True)


_TOOL_COLUMNS = ["case_id", "turn", "call_id", "name", "arguments", "ok", "error_kind",
                 "error_message", "budgeted", "budget_rejected", "dispatched", "cache_hit",
                 "queue_ms", "run_ms", "total_ms", "worker_id", "peak_rss_bytes", "at"]


def tool_calls_frame(run: Run) -> pd.DataFrame:
    rows = []
    for cid, events in run.all_events().items():
        for e in events:
            if e.event != "tool_call":
                continue
            d, t = e.data, e.data.get("timings") or {}
            rows.append({
                "case_id": cid, "turn": d.get("turn"), "call_id": d.get("call_id"),
                "name": d.get("name"), "arguments": d.get("arguments"), "ok": d.get("ok"),
                "error_kind": d.get("error_kind"), "error_message": d.get("error_message"),
                "budgeted": d.get("budgeted"), "budget_rejected": d.get("error_kind") == "budget",
                "dispatched": d.get("dispatched"), "cache_hit": bool(d.get("cache_hit")),
                "queue_ms": t.get("queue_ms"), "run_ms": t.get("run_ms"),
                "total_ms": t.get("total_ms"), "worker_id": d.get("worker_id"),
                "peak_rss_bytes": d.get("peak_rss_bytes"), "at": e.at,
            })
    return pd.DataFrame(rows, columns=_TOOL_COLUMNS)


_CASE_COLUMNS = ["case_id", "question_id", "model", "strategy", "status", "reason", "answer",
                 "correctness", "citation_support", "scored", "model_rounds", "tool_calls",
                 "tool_errors", "cache_hits", "budget_rejected", "api_attempts",
                 "input_tokens", "output_tokens", "cost_usd", "cost_unknown_attempts",
                 "wall_ms", "started_at", "ended_at", "sessions"]


def _case_row(case_id: str, events: tuple) -> dict[str, Any]:
    row: dict[str, Any] = {c: None for c in _CASE_COLUMNS}
    parts = case_id.split("__")
    row.update(case_id=case_id, status="unfinished", model_rounds=0, tool_calls=0, tool_errors=0,
               cache_hits=0, budget_rejected=0, api_attempts=0, input_tokens=0, output_tokens=0,
               cost_usd=0.0, cost_unknown_attempts=0, sessions=0, scored=False,
               correctness=float("nan"), citation_support=float("nan"),
               question_id=parts[0] if len(parts) == 3 else None,
               model=parts[1] if len(parts) == 3 else None,
               strategy=parts[2] if len(parts) == 3 else None)
    for e in events:
        d = e.data
        if e.event == "case_started":
            row["sessions"] += 1
            row.update(question_id=d.get("question_id"), model=d.get("model"),
                       strategy=d.get("strategy"))
            row["started_at"] = row["started_at"] or e.at
        elif e.event in ATTEMPT_EVENTS:
            a = d.get("attempt") or {}
            usage, usd = a.get("usage") or {}, (a.get("cost") or {}).get("usd")
            row["api_attempts"] += 1
            row["input_tokens"] += usage.get("input_tokens") or 0
            row["output_tokens"] += usage.get("output_tokens") or 0
            if usd is None:
                row["cost_unknown_attempts"] += 1
            else:
                row["cost_usd"] += float(usd)
        elif e.event == "model_turn":
            row["model_rounds"] = max(row["model_rounds"], d.get("turn") or 0)
        elif e.event == "tool_call":
            row["tool_calls"] += 1
            row["tool_errors"] += not d.get("ok")
            row["cache_hits"] += bool(d.get("cache_hit"))
            row["budget_rejected"] += d.get("error_kind") == "budget"
        elif e.event == "judgment":
            scored = bool(d.get("scored"))
            row["scored"] = scored
            row["correctness"] = float(d["correctness"]) if scored and d.get("correctness") is not None else float("nan")
            row["citation_support"] = (float(d["citation_support"])
                                       if scored and d.get("citation_support") is not None else float("nan"))
        elif e.event == "case_failed" and row["status"] == "unfinished":
            row["reason"] = f"{d.get('error_type')}: {d.get('message')}"
        elif e.event == "case_finished":
            row.update(status=d.get("status"), reason=d.get("reason"), answer=d.get("answer"),
                       ended_at=e.at, wall_ms=d.get("wall_ms"))
        row["ended_at"] = row["ended_at"] if row["status"] != "unfinished" else e.at
    if row["wall_ms"] is None and row["started_at"] and row["ended_at"]:
        row["wall_ms"] = (_ts(row["ended_at"]) - _ts(row["started_at"])).total_seconds() * 1000
    return row


def cases_frame(run: Run) -> pd.DataFrame:
    """One row per case of the frozen grid: planned cases that never started are rows too
    (status `unfinished`), so summaries and charts count what the report counts."""
    events = run.all_events()
    rows = [_case_row(cid, events.get(cid, ())) for cid in run.all_case_ids()]
    return pd.DataFrame(rows, columns=_CASE_COLUMNS)


def summary_frame(run: Run, *, seed: int = 0) -> pd.DataFrame:
    cases = cases_frame(run)
    rows = []
    for (model, strategy), g in cases.groupby(["model", "strategy"], sort=True, dropna=False):
        corr = bootstrap_ci(g["correctness"].tolist(), seed=seed)
        cite = bootstrap_ci(g["citation_support"].tolist(), seed=seed)
        completed = int((g["status"] == "complete").sum())
        rows.append({
            "model": model, "strategy": strategy, "cases": len(g), "completed": completed,
            "completion_rate": completed / len(g) if len(g) else float("nan"),
            "scored": corr.n,
            "correctness": corr.mean, "correctness_low": corr.low, "correctness_high": corr.high,
            "citation_support": cite.mean, "citation_low": cite.low, "citation_high": cite.high,
            "tool_calls": int(g["tool_calls"].sum()), "tool_errors": int(g["tool_errors"].sum()),
            "cache_hits": int(g["cache_hits"].sum()),
            "budget_rejected": int(g["budget_rejected"].sum()),
            "model_rounds": int(g["model_rounds"].sum()),
            "latency_p50_ms": percentile(g["wall_ms"].tolist(), 50),
            "latency_p95_ms": percentile(g["wall_ms"].tolist(), 95),
            "input_tokens": int(g["input_tokens"].sum()),
            "output_tokens": int(g["output_tokens"].sum()),
            "api_attempts": int(g["api_attempts"].sum()),
            "cost_usd": float(g["cost_usd"].sum()),
            "cost_unknown_attempts": int(g["cost_unknown_attempts"].sum()),
        })
    return pd.DataFrame(rows)


def run_figures(run: Run) -> dict[str, Any]:
    """Per-run figures: wall time (sum over sessions), attempts, peak RSS, cost, case counts."""
    events = run.all_events()
    run_events = events.get(RUN_JOURNAL, ())
    wall_ms, peak, open_start = 0.0, None, None
    last_at = max((e.at for evs in events.values() for e in evs), default=None)
    for e in run_events:
        if e.event == "run_started":
            if open_start is not None and last_at:  # a session that died without run_finished
                wall_ms += (_ts(e.at) - _ts(open_start)).total_seconds() * 1000
            open_start = e.at
        elif e.event == "run_finished":
            wall_ms += e.data.get("wall_ms") or 0.0
            rss = e.data.get("peak_rss_bytes")
            peak = max(peak or 0, rss) if rss is not None else peak
            open_start = None
    if open_start is not None and last_at:
        wall_ms += (_ts(last_at) - _ts(open_start)).total_seconds() * 1000
    attempts = attempts_frame(run, events)
    cases = [cid for cid in events if cid != RUN_JOURNAL]
    finished = sum(any(e.event == "case_finished" for e in events[c]) for c in cases)
    return {
        "run_id": run.run_id, "wall_ms": wall_ms, "peak_rss_bytes": peak,
        "api_attempts": len(attempts),
        "cost_usd": float(attempts.loc[attempts["cost_known"], "cost_usd"].sum()),
        "cost_unknown_attempts": int((~attempts["cost_known"]).sum()) if len(attempts) else 0,
        "cases_started": len(cases), "cases_finished": finished,
        "sessions": sum(e.event == "run_started" for e in run_events),
    } | _node_figures(events, wall_ms)


def _node_figures(events: dict[str, tuple], wall_ms: float) -> dict[str, Any]:
    """Per engine node (Ray runs only): cases finished there and cases per minute of wall."""
    nodes: dict[str, dict[str, Any]] = {}
    for cid, evs in events.items():
        node, finished = None, None
        for e in evs:
            if e.event == "case_started":
                node = e.data.get("node")
            elif e.event == "case_finished":
                finished = e
        if cid == RUN_JOURNAL or node is None or finished is None:
            continue
        entry = nodes.setdefault(node, {"cases": 0, "case_s": 0.0})
        entry["cases"] += 1
        entry["case_s"] += (finished.data.get("wall_ms") or 0.0) / 1000
    for entry in nodes.values():
        entry["cases_per_min"] = round(entry["cases"] / (wall_ms / 60000), 2) if wall_ms else None
        entry["case_s"] = round(entry["case_s"], 3)
    return {"nodes": nodes} if nodes else {}
