"""Build the audit record of one case from its journal and raw files, and nothing else.

    source = RunSource.open(run_dir)           # read-only: manifest, journals, raw store
    record = build_case(source, case_id)       # a plain JSON-able dict (see below)
    row = index_row(record)                    # one flat row of cases-index.{json,csv}

The record (`schema_version` 1) holds the case-record fields of DESIGN.md: question and
reference (as the judge received them; the question also as the agent received it), model
(configured, requested, actual; a missing provider identity is `unverified`), strategy, status,
final answer, judgment, tool counts (contract names), rounds, attempts, tokens, cost, timing,
every tool call, the exact final-answer request, the exact judge request and raw response, every
API attempt with its raw paths, and for unfinished work the `incomplete` block: the latest
request actually written, raw requests missing per attempt, and tool outputs produced but not
carried by that latest request (by call id).

Rules: everything comes from the journal (events as `Run.case_events` gives them) or the raw
store; nothing is inferred that they do not hold. No answer or score is ever filled in for a
case that has none: `final_answer` comes only from `case_finished`, scores only from a scored
`judgment`. A case with no `case_finished` is `incomplete`. Output is deterministic: lists in
journal or pack order, no clock reads.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parquet_agent.errors import ExportError, RunError
from parquet_agent.models.protocol import UNVERIFIED
from parquet_agent.report.rawview import (
    RawFile,
    first_user_text,
    judge_input,
    parse_record,
    sent_tool_results,
    wire_body,
)
from parquet_agent.store.blobs import RawStore
from parquet_agent.store.journal import ATTEMPT_EVENTS, Event
from parquet_agent.store.run import Run

SCHEMA_VERSION = 1
TOOL_COUNT_FIELDS = ("requested_by_model", "processed", "budgeted_attempts", "dispatched",
                     "cache_hits", "source_worker_runs", "errors", "budget_rejected",
                     "model_rounds", "api_attempt_count")
_ANSWER_REQUEST = re.compile(r"/turn-(\d+)\.attempt-(\d+)\.request\.json(?:~\d+)?$")


RUN_MANIFEST_KEYS = ("run_id", "config", "question_ids", "manifest_hash")


def _check_run_manifest(run_dir: Path) -> None:
    """ExportError unless `run_dir/manifest.json` is a run manifest with a journal folder (a
    corpus folder also has a manifest.json: exporting into it would litter the corpus)."""
    try:
        data = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ExportError(f"{run_dir}: cannot read the run: manifest.json is unreadable "
                          f"({exc}); nothing was written") from None
    missing = [k for k in RUN_MANIFEST_KEYS if not isinstance(data, dict) or k not in data]
    if missing or not (run_dir / "journal").is_dir():
        what = (f"its manifest.json is a corpus manifest (kind {data.get('kind')!r})"
                if isinstance(data, dict) and "kind" in data else
                f"its manifest.json lacks {', '.join(missing)}" if missing else
                "it has no journal/ folder")
        raise ExportError(f"{run_dir}: not a run folder: {what}; nothing was written. Give "
                          "the folder that `parquet-agent run` printed")


@dataclass(frozen=True)
class RunSource:
    """A run folder opened for reading: never writes, never takes the writer lock."""

    run: Run
    raw: RawStore
    names_by_case: dict[str, tuple[str, ...]]  # raw paths per case, in write order
    models: dict[str, dict[str, Any]]  # configured models by name
    names: frozenset[str] = frozenset()  # every raw path, as the packs were when opened
    unreadable: set[str] = field(default_factory=set)  # raw paths that failed to read

    @classmethod
    def open(cls, run_dir: str | Path) -> RunSource:
        run_dir = Path(run_dir)
        if not (run_dir / "manifest.json").is_file():
            raise ExportError(f"{run_dir}: not a run folder (no manifest.json); give the folder "
                              "that `parquet-agent run` printed")
        _check_run_manifest(run_dir)
        try:
            run = Run(run_dir, writable=False)
            manifest = run.manifest
            raw = run.raw  # read-only (the run is): one scan of the packs serves both
        except (RunError, ValueError, OSError) as exc:
            raise ExportError(f"{run_dir}: cannot read the run: {exc}") from exc
        every = raw.names()
        names: dict[str, list[str]] = {}
        for path in every:
            parts = path.split("/")
            if len(parts) >= 3:
                names.setdefault(parts[1], []).append(path)
        models = {m.get("name"): m for m in (manifest.get("config") or {}).get("models", [])}
        return cls(run, raw, {k: tuple(v) for k, v in names.items()}, models, frozenset(every))

    def case_ids(self) -> list[str]:
        """Every case: the planned grid first (in grid order), then any other journal."""
        return self.run.all_case_ids()

    def events(self, case_id: str) -> tuple[Event, ...]:
        """The case's events (damaged lines skipped: `Run.verify()` names them); an offloaded
        tool text whose raw body is damaged stays unresolved and is listed as unreadable."""
        try:
            return self.run.case_events(case_id)
        except RunError:
            events = self.run.case_events(case_id, resolve=False)
            resolved = []
            for event in events:
                try:
                    resolved.append(self.run.resolve(event))
                except RunError:
                    self.unreadable.add(event.data.get("offloaded"))
                    resolved.append(event)
            return tuple(resolved)

    def read(self, path: str | None) -> RawFile | None:
        """A raw file, or None when the path is unset, the bytes were never written, or they
        are damaged (then listed in `unreadable`: the export marks the case, the rest shows)."""
        if not self.has(path):
            return None
        try:
            return parse_record(path, self.raw.read(path))
        except RunError:
            self.unreadable.add(path)
            return None

    def has(self, path: str | None) -> bool:
        # the set taken at open, not `path in raw`, which rescans the pack on every miss
        return bool(path) and path in self.names

    def journal_link(self, case_id: str) -> str | None:
        for name in (f"{case_id}.jsonl", f"{case_id}.jsonl.gz"):
            if (self.run.dir / "journal" / name).exists():
                return f"journal/{name}"
        return None


def _split_case_id(case_id: str) -> tuple[str | None, str | None, str | None]:
    parts = case_id.split("__")
    return (parts[0], parts[1], parts[2]) if len(parts) == 3 else (None, None, None)


def _offsets(output: Any) -> list[dict[str, Any]]:
    """Character ranges a tool output reports (read_filing text or windows)."""
    if not isinstance(output, dict):
        return []
    stem = output.get("file_stem")
    spans = []
    items = [output] + [w for w in output.get("windows") or () if isinstance(w, dict)]
    for item in items:
        start, end = item.get("start"), item.get("end")
        if isinstance(start, int) and isinstance(end, int):
            spans.append({"file_stem": stem, "start": start, "end": end})
    return spans


def _compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _tool_call(event: Event) -> dict[str, Any]:
    d = event.data
    args = d.get("arguments") or {}
    # The text sent back for an ok call is the compact JSON of its output (tools.ToolResult.
    # model_text); keeping both would double the largest part of a record, so the text is
    # kept only when it is something else. The exact text is also in the next request.
    text = d.get("model_text")
    from_output = bool(d.get("ok")) and text is not None and text == _compact_json(d.get("output"))
    return {
        "turn": d.get("turn"), "call_id": d.get("call_id"), "name": d.get("name"),
        "arguments": args,
        "sql": args.get("query") if d.get("name") == "sql" and isinstance(args, dict) else None,
        "file_stem": args.get("file_stem") if isinstance(args, dict) else None,
        "ok": d.get("ok"), "error_kind": d.get("error_kind"),
        "error_message": d.get("error_message"),
        "budgeted": d.get("budgeted"), "dispatched": d.get("dispatched"),
        "cache_hit": bool(d.get("cache_hit")), "timings": d.get("timings") or {},
        "worker_id": d.get("worker_id"), "peak_rss_bytes": d.get("peak_rss_bytes"),
        "skip_index": d.get("skip_index"), "offsets": _offsets(d.get("output")), "output": d.get("output"),
        "model_text": None if from_output else text, "model_text_is_output_json": from_output,
        "at": event.at,
    }


def _attempt(event: Event, source: RunSource) -> dict[str, Any]:
    a = dict(event.data.get("attempt") or {})
    a.setdefault("purpose", "judge" if event.event == "judge_attempt" else "answer")
    a["event"] = event.event
    a["request_in_store"] = source.has(a.get("request_path"))
    a["response_in_store"] = source.has(a.get("response_path"))
    return a


def _counts_from_events(tool_events: list[dict], rounds: int, attempts: int) -> dict[str, int]:
    """The contract tool counts, recomputed from the journal the way the agent counts them."""
    c = dict.fromkeys(TOOL_COUNT_FIELDS, 0)
    for t in tool_events:
        c["processed"] += 1
        c["budgeted_attempts"] += bool(t["budgeted"])
        if t["dispatched"]:
            c["dispatched"] += 1
            c["cache_hits" if t["cache_hit"] else "source_worker_runs"] += 1
        if not t["ok"]:
            c["errors"] += 1
            c["budget_rejected"] += t["error_kind"] == "budget"
    c["model_rounds"] = rounds
    c["api_attempt_count"] = attempts
    return c


def _sum(values: list[float | None]) -> float | None:
    """Sum where unknown stays unknown: one None makes the total None (never counted as 0)."""
    total = 0.0
    for v in values:
        if v is None:
            return None
        total += float(v)
    return round(total, 10)


def _missing_requests(attempts: list[dict], turns: list[dict], names: tuple[str, ...],
                      source: RunSource) -> list[dict[str, Any]]:
    """Raw requests the journal or the numbering says exist but the raw store lacks."""
    missing: list[dict[str, Any]] = []
    for a in attempts:
        if not a["request_in_store"]:
            missing.append({"label": a.get("label"), "attempt": a.get("number"),
                            "purpose": a.get("purpose"), "expected_path": a.get("request_path"),
                            "why": "attempt recorded in the journal, its request is not in the "
                                   "raw store" if a.get("request_path") else
                                   "attempt recorded in the journal without a request path"})
    for t in turns:
        if t["request_path"] and not source.has(t["request_path"]):
            missing.append({"label": t["label"], "attempt": None, "purpose": "answer",
                            "expected_path": t["request_path"],
                            "why": "successful turn recorded, its request is not in the raw store"})
    numbers: dict[int, set[int]] = {}
    for name in names:
        m = _ANSWER_REQUEST.search(name)
        if m:
            numbers.setdefault(int(m.group(1)), set()).add(int(m.group(2)))
    for turn, seen in sorted(numbers.items()):
        for n in range(1, max(seen)):
            if n not in seen:
                missing.append({"label": None, "attempt": n, "purpose": "answer",
                                "expected_path": None, "turn": turn,
                                "why": f"turn {turn} has later attempts on disk but no request "
                                       f"for attempt {n}"})
    return missing


def _reference(started: dict[str, Any], judge_in: dict[str, Any] | None) -> dict[str, Any]:
    """The reference side, from `case_started` (newer runs) or the judge request (older)."""
    if isinstance(started.get("reference_answer"), str):
        return {"reference_answer": started["reference_answer"],
                "gold_evidence": started.get("gold_evidence"), "reference_source": "case_started"}
    return {"reference_answer": (judge_in or {}).get("reference_answer"),
            "gold_evidence": (judge_in or {}).get("gold_evidence"),
            "reference_source": "judge request" if judge_in else None}


def build_case(source: RunSource, case_id: str) -> dict[str, Any]:
    """The audit record of one case (see the module docstring)."""
    events = source.events(case_id)
    names = source.names_by_case.get(case_id, ())
    qid, model_name, strategy = _split_case_id(case_id)
    started = next((e for e in events if e.event == "case_started"), None)
    if started is not None:
        qid = started.data.get("question_id", qid)
        model_name = started.data.get("model", model_name)
        strategy = started.data.get("strategy", strategy)
    attempts = [_attempt(e, source) for e in events if e.event in ATTEMPT_EVENTS]
    tools = [_tool_call(e) for e in events if e.event == "tool_call"]
    turns: dict[int, dict[str, Any]] = {}
    for e in events:
        if e.event == "model_turn":
            turns[e.data.get("turn") or 0] = dict(e.data)
    ordered_turns = [turns[n] for n in sorted(turns)]
    judgments = [e for e in events if e.event == "judgment"]
    judgment = judgments[-1].data if judgments else None
    finished = next((e for e in reversed(events) if e.event == "case_finished"), None)
    failures = [{"at": e.at, **e.data} for e in events if e.event == "case_failed"]

    # -- status and answer: only what case_finished says --------------------------------------
    if finished is not None:
        status = finished.data.get("status")
        reason = finished.data.get("reason")
        answer = finished.data.get("answer")
    else:
        status, answer = "incomplete", None
        if started is None:
            reason = "never started: the run stopped before this case began"
        elif failures:
            f = failures[-1]
            reason = f"unfinished: {f.get('error_type')}: {f.get('message')}"
        else:
            reason = "unfinished: the run stopped before this case finished (no case_finished)"

    # -- requests: final answer, latest sent, judge ---------------------------------------------
    last_turn = ordered_turns[-1] if ordered_turns else None
    final_turn = None
    if last_turn is not None and (last_turn.get("final")
                                  or not (last_turn.get("reply") or {}).get("tool_calls")):
        final_turn = last_turn
    answer_requests = [n for n in names if _ANSWER_REQUEST.search(n)]
    latest_path = answer_requests[-1] if answer_requests else None
    final_request = source.read(final_turn["request_path"]) if final_turn else None
    final_response = source.read(final_turn["response_path"]) if final_turn else None
    latest_request = (source.read(latest_path)
                      if latest_path and (final_request is None
                                          or latest_path != final_request.path) else None)
    judge_req = source.read(judgment.get("request_path")) if judgment else None
    judge_resp = source.read(judgment.get("response_path")) if judgment else None

    latest = latest_request or final_request
    latest_body = wire_body(latest) if latest else None
    judge_in = judge_input(wire_body(judge_req)) if judge_req else None
    question, question_source = None, None
    started_data = started.data if started is not None else {}
    if isinstance(started_data.get("question"), str):
        question, question_source = started_data["question"], "case_started"
    elif judge_in and isinstance(judge_in.get("question"), str):
        question, question_source = judge_in["question"], "judge request"
    elif latest_body is not None:
        question = first_user_text(latest_body)
        question_source = "latest answer request" if question is not None else None

    # -- tool outputs not carried by the latest request ----------------------------------------
    unsent: list[str] = []
    if latest_body is not None:
        ids, anonymous = sent_tool_results(latest_body)
        for index, t in enumerate(tools):
            if t["call_id"] not in ids and index >= anonymous:
                unsent.append(t["call_id"])
    elif tools:
        unsent = [t["call_id"] for t in tools]

    # -- model identity, usage, cost, timing --------------------------------------------------
    configured = source.models.get(model_name, {})
    answer_attempts = [a for a in attempts if a.get("purpose") != "judge"]
    judge_attempts = [a for a in attempts if a.get("purpose") == "judge"]
    ok_answers = [a for a in answer_attempts if a.get("outcome") == "ok"]
    ident = ok_answers[-1] if ok_answers else (answer_attempts[-1] if answer_attempts else {})
    model = {
        "name": model_name,
        "configured_model": configured.get("model"),
        "configured_provider": configured.get("provider"),
        "requested_model": ident.get("requested_model") or configured.get("model"),
        "requested_provider": ident.get("requested_provider") or configured.get("provider"),
        "actual_model": ident.get("actual_model") or UNVERIFIED,
        "actual_provider": ident.get("actual_provider") or UNVERIFIED,
    }
    tokens = {k: sum(((a.get("usage") or {}).get(f"{k}_tokens") or 0) for a in attempts)
              for k in ("input", "output", "cached", "reasoning", "cache_write")}
    costs = [(a.get("cost") or {}).get("usd") for a in attempts]
    known = [c for c in costs if c is not None]
    cost = {
        "usd": _sum(costs), "known_usd": round(sum(known), 10),
        "unknown_attempts": len(costs) - len(known),
        "answer_usd": _sum([(a.get("cost") or {}).get("usd") for a in answer_attempts]),
        "judge_usd": _sum([(a.get("cost") or {}).get("usd") for a in judge_attempts]),
        "sources": sorted({(a.get("cost") or {}).get("source") or "unknown" for a in attempts}),
    }
    timing = {
        "started_at": started.at if started else None,
        "ended_at": finished.at if finished else (events[-1].at if events else None),
        "wall_ms": finished.data.get("wall_ms") if finished else None,
        "model_ms": round(sum(a.get("duration_ms") or 0 for a in answer_attempts), 3),
        "judge_ms": round(sum(a.get("duration_ms") or 0 for a in judge_attempts), 3),
        "tool_ms": round(sum((t["timings"] or {}).get("total_ms") or 0 for t in tools), 3),
    }
    rounds = len(ordered_turns)
    recorded = (finished.data.get("tool_counts") or {}) if finished else {}
    if recorded:
        counts = {k: recorded.get(k) for k in TOOL_COUNT_FIELDS}
        counts_source = "case_finished"
    else:
        counts = _counts_from_events(tools, rounds, len(attempts))
        counts_source = "recomputed from the journal (the case did not finish)"
        # requested_by_model: tool calls in successfully recorded turns
        counts["requested_by_model"] = sum(len((t.get("reply") or {}).get("tool_calls") or ())
                                           for t in ordered_turns)

    scored = bool(judgment and judgment.get("scored"))
    judge_block = None
    if judgment is not None:
        judge_block = {
            "judge": judgment.get("judge"), "scored": scored,
            "correctness": judgment.get("correctness") if scored else None,
            "citation_support": judgment.get("citation_support") if scored else None,
            "rationale": judgment.get("rationale"),
            "unscored_reason": judgment.get("unscored_reason"),
            "checks": judgment.get("checks") or {}, "provenance": judgment.get("provenance") or {},
            "request_path": judgment.get("request_path"),
            "response_path": judgment.get("response_path"),
            "judgments_recorded": len(judgments),
            "request": judge_req.inline() if judge_req else None,
            "response": judge_resp.inline() if judge_resp else None,
        }

    incomplete = None
    if status != "complete":
        incomplete = {
            "latest_request_path": latest.path if latest else None,
            "missing_raw_requests": _missing_requests(attempts, ordered_turns, names, source),
            "unsent_tool_outputs": unsent,
        }

    return {
        "schema_version": SCHEMA_VERSION,
        "case_id": case_id, "run_id": source.run.run_id,
        "question_id": qid, "question": question, "question_source": question_source,
        **_reference(started_data, judge_in),
        "model": model, "strategy": strategy,
        "status": status, "status_reason": reason, "finished": finished is not None,
        "sessions": sum(e.event == "case_started" for e in events),
        "failures": failures,
        "final_answer": answer,
        "forced_final": bool(final_turn and final_turn.get("final")),
        "judgment": judge_block,
        "tool_counts": counts, "tool_counts_source": counts_source,
        "model_rounds": rounds, "api_attempts": len(attempts),
        "tokens": tokens, "cost": cost, "timing": timing,
        "tool_calls": tools,
        "final_request": final_request.inline() if final_request else None,
        "final_response": final_response.inline() if final_response else None,
        "latest_request": latest_request.inline() if latest_request else None,
        "tool_outputs_not_in_latest_request": unsent,
        "attempts": attempts,
        "incomplete": incomplete,
        "raw_files": list(names),
        "links": {"case": f"cases/{case_id}.json", "journal": source.journal_link(case_id)},
    }


INDEX_COLUMNS = (
    "case_id", "question_id", "question", "model", "provider", "actual_model", "strategy",
    "status", "status_reason", "answer", "correctness", "citation_support", "scored", "rationale",
    *TOOL_COUNT_FIELDS,
    "input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens", "cache_write_tokens",
    "cost_usd", "cost_unknown_attempts", "wall_ms", "started_at", "case_json",
)


def index_row(record: dict[str, Any]) -> dict[str, Any]:
    """One flat row of the cases index (columns `INDEX_COLUMNS`)."""
    j = record.get("judgment") or {}
    counts = record["tool_counts"]
    row = {
        "case_id": record["case_id"], "question_id": record["question_id"],
        "question": record["question"], "model": record["model"]["name"],
        "provider": record["model"]["configured_provider"],
        "actual_model": record["model"]["actual_model"], "strategy": record["strategy"],
        "status": record["status"], "status_reason": record["status_reason"],
        "answer": record["final_answer"],
        "correctness": j.get("correctness"), "citation_support": j.get("citation_support"),
        "scored": bool(j.get("scored")), "rationale": j.get("rationale"),
        **{k: counts.get(k) for k in TOOL_COUNT_FIELDS},
        **{f"{k}_tokens": v for k, v in record["tokens"].items()},
        "cost_usd": record["cost"]["usd"],
        "cost_unknown_attempts": record["cost"]["unknown_attempts"],
        "wall_ms": record["timing"]["wall_ms"], "started_at": record["timing"]["started_at"],
        "case_json": record["links"]["case"],
    }
    return {c: row[c] for c in INDEX_COLUMNS}

