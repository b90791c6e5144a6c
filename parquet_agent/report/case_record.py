"""Build the audit record of one case from its journal and raw files, and nothing else.

    source = RunSource.open(run_dir)           # read-only: manifest, journals, raw store
    record = build_case(source, case_id)       # a CaseRecord (report.case_model; see below)
    row = index_row(record)                    # one flat row of cases-index.{json,csv}
    record.to_dict()                           # the JSON `cases/<id>.json` holds

The record (`schema_version` 1) holds the case-record fields of DESIGN.md: question and
reference (as the judge received them; the question also as the agent received it), model
(configured, requested, actual; a missing provider identity is `unverified`), strategy, status,
final answer, judgment, tool counts (contract names), rounds, attempts, tokens, cost, timing,
every tool call (and, with `[gates] action` on, `gate_evaluations`: the action gate's verdict
on each `sql` call), the exact final-answer request, the exact judge request and raw response, every
API attempt with its raw paths, and for unfinished work the `incomplete` block: the latest
request actually written, raw requests missing per attempt, and tool outputs produced but not
carried by that latest request (by call id).

Rules: everything comes from the journal (events as `Run.case_events` gives them) or the raw
store; nothing is inferred that they do not hold. Facts come from the journal (the tool results
a request carried: its attempt's `tool_results`; question and reference: `case_started`); a raw
body is parsed for one only where no journal line holds it (journals before issue 26, a request
written before a kill); the exact raw files are inlined as they are. No answer or score is ever
filled in for a case that has none: `final_answer` comes only from `case_finished`, scores only
from a scored `judgment`. A case with no `case_finished` is `incomplete`. Output is
deterministic: lists in journal or pack order, no clock reads.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from parquet_agent.analysis.fold import (
    RUN_JOURNAL,
    CaseView,
    RunFold,
    all_case_ids,
    configured_models,
    fold_case,
    make_fold,
)
from parquet_agent.analysis.judgments import (
    RUN_JUDGE,
    appended_judgments,
    primary_judging,
)
from parquet_agent.errors import ExportError, RunError
from parquet_agent.report.case_model import (
    AttemptRecord,
    CaseCost,
    CaseRecord,
    Failure,
    GateRecord,
    Incomplete,
    JudgeBlock,
    JudgmentSummary,
    Links,
    MissingRequest,
    ModelIdentity,
    Offset,
    RawInline,
    Timing,
    Tokens,
    ToolCall,
)
from parquet_agent.store.blobs import RawStore
from parquet_agent.store.casejournal import resolve_offloaded
from parquet_agent.store.manifest import read_manifest
from parquet_agent.store.run import Run
from parquet_agent.transcript import (
    TOOL_COUNT_FIELDS,
    CaseStarted,
    Event,
    ModelAttempt,
    ToolCallEvent,
    plain,
)
from parquet_agent.transcript.rawview import (
    RawFile,
    RequestName,
    first_user_text,
    judge_input,
    parse_record,
    request_name,
    sent_tool_results,
    wire_body,
)

SCHEMA_VERSION = 1


RUN_MANIFEST_KEYS = ("run_id", "config", "question_ids", "manifest_hash")


def _check_run_manifest(run_dir: Path) -> None:
    """ExportError unless `run_dir/manifest.json` is a run manifest with a journal folder (a
    corpus folder also has a manifest.json: exporting into it would litter the corpus)."""
    try:
        data, _ = read_manifest(run_dir / "manifest.json")  # verify() reports a repaired bit
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
    appended: dict[str, list[Any]] = field(default_factory=dict)  # re-judgings' judgments
    judge: str | None = None  # whose judgments count (a judging id; None: the run's own)

    @classmethod
    def open(cls, run_dir: str | Path, *, judge: str | None = None) -> RunSource:
        """`judge`: whose judgments count (a judging id, "run" for the config's judge;
        default: the primary one, see `judge.rejudge`)."""
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
        selected = primary_judging(run_dir) if judge is None else (
            None if judge == RUN_JUDGE else judge)
        return cls(run, raw, {k: tuple(v) for k, v in names.items()},
                   configured_models(manifest), frozenset(every),
                   appended=appended_judgments(run_dir), judge=selected)

    def case_ids(self) -> list[str]:
        """Every case: the planned grid first (in grid order), then any other journal."""
        return all_case_ids(self.run)

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
                    resolved.append(resolve_offloaded(event, self.raw))
                except RunError:
                    self.unreadable.add(event.payload.offloaded)
                    resolved.append(event)
            return tuple(resolved)

    def fold_case(self, case_id: str) -> CaseView:
        return fold_case(case_id, self.events(case_id), self.models,
                         self.appended.get(case_id, ()), self.judge)

    def fold(self, cases: tuple[CaseView, ...] | None = None) -> RunFold:
        """Every case of the run folded (or `cases`, folded already), and the run journal's
        figures."""
        if cases is None:
            cases = tuple(self.fold_case(c) for c in self.case_ids())
        return make_fold(self.run.run_id, cases, self.events(RUN_JOURNAL))

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

    def has(self, path: str | None) -> TypeGuard[str]:
        # the set taken at open, not `path in raw`, which rescans the pack on every miss
        return bool(path) and path in self.names

    def journal_link(self, case_id: str) -> str | None:
        for name in (f"{case_id}.jsonl", f"{case_id}.jsonl.gz"):
            if (self.run.dir / "journal" / name).exists():
                return f"journal/{name}"
        return None


def _offsets(output: Any) -> tuple[Offset, ...]:
    """Character ranges a tool output reports (read_filing text or windows)."""
    if not isinstance(output, dict):
        return ()
    stem = output.get("file_stem")
    spans = []
    items = [output] + [w for w in output.get("windows") or () if isinstance(w, dict)]
    for item in items:
        start, end = item.get("start"), item.get("end")
        if isinstance(start, int) and isinstance(end, int):
            spans.append(Offset(file_stem=stem, start=start, end=end))
    return tuple(spans)


def _compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _tool_call(event: Event) -> ToolCall:
    t: ToolCallEvent = event.payload
    args = t.arguments or {}
    # The text sent back for an ok call is the compact JSON of its output (tools.ToolResult.
    # model_text); keeping both would double the largest part of a record, so the text is
    # kept only when it is something else. The exact text is also in the next request.
    text = t.model_text
    from_output = bool(t.ok) and text is not None and text == _compact_json(t.output)
    return ToolCall(
        turn=t.turn, call_id=t.call_id, name=t.name, arguments=args,
        sql=args.get("query") if t.name == "sql" and isinstance(args, dict) else None,
        file_stem=args.get("file_stem") if isinstance(args, dict) else None,
        ok=t.ok, error_kind=t.error_kind, error_message=t.error_message,
        budgeted=t.budgeted, dispatched=t.dispatched, cache_hit=bool(t.cache_hit),
        timings=plain(t.timings) if t.timings else {},
        worker_id=t.worker_id, peak_rss_bytes=t.peak_rss_bytes,
        skip_index=t.skip_index, offsets=_offsets(t.output), output=t.output,
        model_text=None if from_output else text, model_text_is_output_json=from_output,
        at=event.at,
    )


def _attempt(event: Event, source: RunSource) -> AttemptRecord:
    a = plain(event.payload.attempt)  # a usage count the journal did not record stays out
    a["event"] = event.event
    a["request_in_store"] = source.has(a.get("request_path"))
    a["response_in_store"] = source.has(a.get("response_path"))
    return AttemptRecord.model_validate(a)


def _missing_requests(attempts: list[AttemptRecord], view: CaseView, names: tuple[str, ...],
                      source: RunSource) -> tuple[MissingRequest, ...]:
    """Raw requests the journal or the numbering says exist but the raw store lacks."""
    missing: list[MissingRequest] = []
    for a in attempts:
        if not a.request_in_store:
            missing.append(MissingRequest(
                label=a.label, attempt=a.number, purpose=a.purpose,
                expected_path=a.request_path,
                why="attempt recorded in the journal, its request is not in the raw store"
                    if a.request_path else
                    "attempt recorded in the journal without a request path"))
    for t in view.turns:
        if t.request_path and not source.has(t.request_path):
            missing.append(MissingRequest(
                label=t.label, attempt=None, purpose="answer", expected_path=t.request_path,
                why="successful turn recorded, its request is not in the raw store"))
    numbers: dict[int, set[int]] = {}
    for request in _answer_requests(names):
        if request.turn is None:  # _answer_requests keeps only numbered turns
            continue
        numbers.setdefault(request.turn, set()).add(request.number)
    for turn, seen in sorted(numbers.items()):
        for n in range(1, max(seen)):
            if n not in seen:
                missing.append(MissingRequest(
                    label=None, attempt=n, purpose="answer", expected_path=None, turn=turn,
                    why=f"turn {turn} has later attempts on disk but no request for attempt {n}"))
    return tuple(missing)


def _answer_requests(names: tuple[str, ...]) -> list[RequestName]:
    """Answer requests in the raw store, in write order (journaled or not: see rawview)."""
    found = [request_name(n) for n in names]
    return [r for r in found if r is not None and r.turn is not None]


def _reference(started: CaseStarted | None, judge_in: dict[str, Any] | None) -> dict[str, Any]:
    """The reference side, from `case_started` (newer runs) or the judge request (older)."""
    if started is not None and isinstance(started.reference_answer, str):
        return {"reference_answer": started.reference_answer,
                "gold_evidence": started.gold_evidence, "reference_source": "case_started"}
    return {"reference_answer": (judge_in or {}).get("reference_answer"),
            "gold_evidence": (judge_in or {}).get("gold_evidence"),
            "reference_source": "judge request" if judge_in else None}


@dataclass(frozen=True)
class _Requests:
    """The raw requests a record shows: final answer, latest written, judge."""

    final: RawFile | None
    final_response: RawFile | None
    latest: RawFile | None  # only when it is not the final request
    judge: RawFile | None
    judge_response: RawFile | None
    latest_path: str | None = None  # the newest answer request written, readable or not

    @property
    def last_sent(self) -> RawFile | None:
        return self.latest or self.final


def _requests(source: RunSource, view: CaseView, names: tuple[str, ...]) -> _Requests:
    final = view.final_turn
    answer_requests = _answer_requests(names)
    latest_path = answer_requests[-1].path if answer_requests else None
    final_request = source.read(final.request_path) if final else None
    latest = (source.read(latest_path) if latest_path and (
        final_request is None or latest_path != final_request.path) else None)
    j = view.judgment
    return _Requests(final_request, source.read(final.response_path) if final else None, latest,
                     source.read(j.request_path) if j else None,
                     source.read(j.response_path) if j else None,
                     latest_path or (final.request_path if final else None))


def _needs_judge_input(started: CaseStarted | None) -> bool:
    """Whether the question or the reference must be read from the judge request: only for
    runs whose `case_started` did not record them (older journals)."""
    return started is None or not (isinstance(started.question, str)
                                   and isinstance(started.reference_answer, str))


def _question(view: CaseView, judge_in: dict[str, Any] | None,
              latest: RawFile | None) -> tuple[str | None, str | None]:
    """The question and where it was read: case_started, else the judge or latest request."""
    if view.started is not None and isinstance(view.started.question, str):
        return view.started.question, "case_started"
    if judge_in and isinstance(judge_in.get("question"), str):
        return judge_in["question"], "judge request"
    latest_body = wire_body(latest) if latest else None
    if latest_body is not None:
        question = first_user_text(latest_body)
        return question, "latest answer request" if question is not None else None
    return None, None


def _carried(view: CaseView, path: str) -> tuple[str, ...] | None:
    """Call ids of the tool results the request at `path` carried, as its journaled attempt
    records them (None: none does)."""
    for event in reversed(view.attempts):
        payload = event.payload
        if isinstance(payload, ModelAttempt) and payload.attempt.request_path == path:
            return payload.tool_results
    return None


def _unsent(tools: list[ToolCall], view: CaseView, requests: _Requests) -> tuple[str, ...]:
    """Call ids of tool outputs produced but not carried by the latest request (by the
    journal; by its body where no journal line says)."""
    carried = _carried(view, requests.latest_path) if requests.latest_path else None
    latest = requests.last_sent
    if carried is not None:
        sent = set(carried)
        return tuple(t.call_id for t in tools if t.call_id not in sent)
    latest_body = wire_body(latest) if latest else None
    if latest_body is None:
        return tuple(t.call_id for t in tools)
    ids, anonymous = sent_tool_results(latest_body)
    return tuple(t.call_id for index, t in enumerate(tools)
                 if t.call_id not in ids and index >= anonymous)


def _judge_block(view: CaseView, requests: _Requests) -> JudgeBlock | None:
    j = view.judgment
    if j is None:
        return _awaiting_block(view) if view.awaiting_judgment else None
    return JudgeBlock(
        judge=j.judge, scored=view.scored, correctness=view.correctness,
        citation_support=view.citation_support, rationale=j.rationale,
        unscored_reason=j.unscored_reason, checks=j.checks or {},
        provenance=j.provenance or {}, request_path=j.request_path,
        response_path=j.response_path, judgments_recorded=view.judgments_recorded,
        verdict=view.verdict, judging=j.judging or RUN_JUDGE,
        judgments=tuple(JudgmentSummary(
            judging=k.judging or RUN_JUDGE, judge=k.judge, repeat=k.repeat, scored=k.scored,
            verdict=k.verdict, correctness=k.correctness, citation_support=k.citation_support,
            unscored_reason=k.unscored_reason,
            prompt_version=(k.provenance or {}).get("prompt_version"),
            request_path=k.request_path, response_path=k.response_path)
            for k in view.judgments),
        request=_inline(requests.judge), response=_inline(requests.judge_response),
    )


def _awaiting_block(view: CaseView) -> JudgeBlock:
    """A judge block with no scores: the answer waits for its batch judgment (never 0)."""
    return JudgeBlock(
        judge=None, scored=False, correctness=None, citation_support=None, rationale=None,
        awaiting=True,
        unscored_reason="awaiting judgment: the run's batch judge has not returned it yet "
                        "(`parquet-agent judge RUN --batch` or a resume polls it)",
        checks={}, provenance={}, request_path=None, response_path=None,
        judgments_recorded=view.judgments_recorded, verdict=None, judging=RUN_JUDGE,
        judgments=(), request=None, response=None)


def _inline(raw: RawFile | None) -> RawInline | None:
    return RawInline.model_validate(raw.inline()) if raw else None


def build_case(source: RunSource, case_id: str, view: CaseView | None = None) -> CaseRecord:
    """The audit record of one case (see the module docstring): the fold's view of the case
    (`view`, folded here when not given) plus the raw files it points to."""
    view = view or source.fold_case(case_id)
    names = source.names_by_case.get(case_id, ())
    attempts = [_attempt(e, source) for e in view.attempts]
    tools = [_tool_call(e) for e in view.tool_calls]
    requests = _requests(source, view, names)
    latest = requests.last_sent
    judge_in = (judge_input(wire_body(requests.judge))
                if requests.judge and _needs_judge_input(view.started) else None)
    question, question_source = _question(view, judge_in, latest)
    unsent = _unsent(tools, view, requests)
    incomplete = None
    if view.status != "complete":
        incomplete = Incomplete(
            latest_request_path=latest.path if latest else None,
            missing_raw_requests=_missing_requests(attempts, view, names, source),
            unsent_tool_outputs=unsent)
    record = CaseRecord(
        schema_version=SCHEMA_VERSION,
        case_id=case_id, run_id=source.run.run_id,
        question_id=view.question_id, question=question,
        question_source=question_source, **_reference(view.started, judge_in),
        model=ModelIdentity(name=view.model, **view.identity), strategy=view.strategy,
        status=view.status, status_reason=view.status_reason, finished=view.finished,
        sessions=view.sessions,
        failures=tuple(Failure(at=at, **plain(f)) for at, f in view.failures),
        final_answer=view.answer, forced_final=view.forced_final,
        judgment=_judge_block(view, requests),
        tool_counts=view.tool_counts, tool_counts_source=view.tool_counts_source,
        model_rounds=len(view.turns), api_attempts=len(view.attempts),
        tokens=Tokens(**view.tokens), cost=CaseCost(**view.cost),
        timing=Timing(**view.timing),
        tool_calls=tuple(tools),
        final_request=_inline(requests.final),
        final_response=_inline(requests.final_response),
        latest_request=_inline(requests.latest),
        tool_outputs_not_in_latest_request=unsent,
        attempts=tuple(attempts),
        incomplete=incomplete,
        raw_files=names,
        links=Links(case=f"cases/{case_id}.json", journal=source.journal_link(case_id)),
    )
    if not view.gate_evaluations:  # only with `[gates] action` on: ungated records keep
        return record              # their shape
    return record.model_copy(update={"gate_evaluations": tuple(
        GateRecord.model_validate(plain(g)) for g in view.gate_evaluations)})


INDEX_COLUMNS = (
    "case_id", "question_id", "question", "model", "provider", "actual_model", "strategy",
    "status", "status_reason", "answer", "correctness", "citation_support", "scored", "rationale",
    *TOOL_COUNT_FIELDS,
    "input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens", "cache_write_tokens",
    "cost_usd", "cost_unknown_attempts", "wall_ms", "started_at", "case_json",
)


def index_row(record: CaseRecord) -> dict[str, Any]:
    """One flat row of the cases index (columns `INDEX_COLUMNS`)."""
    j, counts, model = record.judgment, record.tool_counts, record.model
    row = {
        "case_id": record.case_id, "question_id": record.question_id,
        "question": record.question, "model": model.name,
        "provider": model.configured_provider,
        "actual_model": model.actual_model, "strategy": record.strategy,
        "status": record.status, "status_reason": record.status_reason,
        "answer": record.final_answer,
        "correctness": j.correctness if j else None,
        "citation_support": j.citation_support if j else None,
        "scored": bool(j and j.scored), "rationale": j.rationale if j else None,
        **{k: counts.get(k) for k in TOOL_COUNT_FIELDS},
        **{f"{k}_tokens": v for k, v in record.tokens},
        "cost_usd": record.cost.usd,
        "cost_unknown_attempts": record.cost.unknown_attempts,
        "wall_ms": record.timing.wall_ms, "started_at": record.timing.started_at,
        "case_json": record.links.case,
    }
    return {c: row[c] for c in INDEX_COLUMNS}

