"""Re-judging a saved run: judgments appended with their provenance, never overwriting.

    result = rejudge(run, Judge(model), cases=None, repeat=1, batch=False)
    analysis.judgments.appended_judgments(run.dir)   # case id -> every appended Judgment
    set_primary(run, result.judging)

A judging is one judge (model, settings, prompt version and hash) over cases of a run. Its
judgments go to their own journal, so nothing already recorded changes (the case journals stay
byte for byte as they were):

    <run>/judgments/<judging>.json            schema_version, judging, judge provenance, created_at
    <run>/judgments/<judging>.jsonl           judge_attempt and judgment events (the transcript's
                                              codec and hash chain); each judgment names its
                                              case_id, judging and repeat
    <run>/judgments/<judging>.batches.jsonl   the batch ledger of `--batch` judgings
    <run>/judgments/primary.json              which judging is primary (absent: the config's)
    raw/<case>/rejudge-<judging>-rNN...       the judge's raw requests and responses

The judge sees what the run's judge saw, rebuilt from the case journal: question, reference
answer and gold evidence (`case_started`), the final answer (`case_finished`), every tool output
as recorded; the cited spans' text and `answerable` come from the run's own judgment when the
case was judged (which records them; in journals before issue 26, from its raw judge request),
or from its `judgment_pending` event when it awaits a batch judgment (no corpus read), else the
spans are left unlooked-up (said in provenance). `verdict_events` is
the one way a verdict becomes journal events (the run's judge, batch or not, and re-judgings).
No agent is called. A judgment that could not be obtained (the judge's call failed: unreachable,
refused) is not recorded as judged: its attempts are journaled, it stays pending with the
reason, and the same judging asks it again next time; one the judge gave that did not parse, or
an input that does not fit the judge's context, is recorded unscored (asking again would give
the same). The judging id is the judge's name and a hash of its provenance, so the same
judge again resumes its journal: a (case, repeat) already judged is never asked again; only a
request in flight at a kill can be (one at a time); by batch, the ledger finds the batch id
and fetches its results instead of paying again.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable

from parquet_agent.analysis.judgments import (
    JUDGMENTS_DIR,
    PRIMARY_FILE,
    RUN_JUDGE,
    judgings,
    judgments_in,
)
from parquet_agent.errors import RunError
from parquet_agent.files import atomic_write_bytes, utc_now
from parquet_agent.judge import Judge, JudgeInput, citations
from parquet_agent.judge.batch import judge_in_batches
from parquet_agent.models.batch import FileLedger, Polling
from parquet_agent.store.journal import Journal
from parquet_agent.transcript import (
    CaseFinished,
    CaseStarted,
    JudgeAttempt,
    Judgment,
    JudgmentPending,
    ToolCallEvent,
)
from parquet_agent.transcript.rawview import judge_input, parse_record, wire_body

if TYPE_CHECKING:
    from parquet_agent.judge import Verdict
    from parquet_agent.store.run import Run

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class JudgingResult:
    judging: str
    judged: tuple[str, ...] = ()  # "<case>#<repeat>" judged by this call
    already: int = 0  # judged before this call (a resume)
    pending: dict[str, str] = field(default_factory=dict)  # "<case>#<repeat>" -> why not
    skipped: dict[str, str] = field(default_factory=dict)  # case -> why it has nothing to judge
    # "<case>#<repeat>" judged now but unscored (the judge answered; its judgment did not parse,
    # or the input does not fit): recorded, never asked again by this judging
    unscored: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        """"N scored, M unscored now (K before); P pending", and the reasons, grouped."""
        scored = len(self.judged) - len(self.unscored)
        text = (f"{scored} scored, {len(self.unscored)} unscored now ({self.already} judged "
                f"before)")
        if self.pending:
            text += f"; {len(self.pending)} pending (not obtained: asked again next time)"
        for what, reasons in (("unscored", self.unscored), ("pending", self.pending)):
            for reason, n in grouped(reasons.values()):
                text += f"\n  {n:>4} x {what}: {reason}"
        return text


def grouped(reasons: Iterable[str], width: int = 160) -> list[tuple[str, int]]:
    """Distinct reasons with counts, most frequent first; grouped by their first `width`
    characters, as `analysis.status` groups case reasons (request ids further on differ)."""
    counts: dict[str, int] = {}
    for reason in reasons:
        text = " ".join(str(reason).split())
        text = text if len(text) <= width else text[: width - 1] + "…"
        counts[text] = counts.get(text, 0) + 1
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def judging_id(judge: Judge) -> str:
    provenance = json.dumps({**judge.provenance(), "context_tokens": judge.context_tokens,
                             "max_attempts": judge.max_attempts}, sort_keys=True)
    slug = re.sub(r"[^A-Za-z0-9.-]+", "-", judge.model.name).strip("-") or "judge"
    return f"{slug}-{hashlib.sha256(provenance.encode()).hexdigest()[:8]}"


def case_input(run: Run, case_id: str) -> tuple[JudgeInput | None, str | None, dict[str, Any]]:
    """(input, why there is none, provenance notes) for one saved case."""
    events = run.case_events(case_id)
    started = next((e.payload for e in events if isinstance(e.payload, CaseStarted)), None)
    finished = [e.payload for e in events if isinstance(e.payload, CaseFinished)]
    if started is None or not finished or finished[-1].answer is None:
        status = finished[-1].status if finished else "unfinished"
        return None, f"no final answer to judge (status {status})", {}
    evidence = tuple({"call_id": p.call_id, "name": p.name, "arguments": p.arguments,
                      "output": p.output if p.ok else {"error": p.error_message}}
                     for p in (e.payload for e in events) if isinstance(p, ToolCallEvent))
    own = [e.payload for e in events if isinstance(e.payload, Judgment) and e.payload.request_path]
    original = _original_input(run, own[-1]) if own else None
    waiting = [e.payload for e in events if isinstance(e.payload, JudgmentPending)]
    if original is None and waiting:  # batch judging: what the case recorded for its judge
        original = {"cited_spans": waiting[-1].cited_spans,
                    "answerable": waiting[-1].answerable}
    notes: dict[str, Any] = {}
    spans = tuple((original or {}).get("cited_spans") or ())
    if original is None and citations(finished[-1].answer):
        notes["cited_spans"] = "not looked up: the case has no earlier judge request to take them from"
    answer = finished[-1].answer
    return JudgeInput(
        question=started.question or "", candidate_answer=answer,
        reference_answer=started.reference_answer or "",
        gold_evidence=tuple(started.gold_evidence or ()), tool_evidence=evidence,
        cited_spans=spans, answerable=bool((original or {}).get("answerable", True))), None, notes


def _original_input(run: Run, judgment: Judgment) -> dict[str, Any] | None:
    """What the run's judge was given: as its judgment records it, else (journals before
    issue 26) as its raw request holds it."""
    if judgment.answerable is not None:
        return {"cited_spans": judgment.cited_spans or [], "answerable": judgment.answerable}
    path = judgment.request_path
    try:
        return judge_input(wire_body(parse_record(path, run.raw.read(path)))) if path else None
    except (RunError, OSError, KeyError, ValueError):
        return None


Progress = Callable[[int, int, str], None]  # (judged so far, to judge, what): a command's lines


def rejudge(run: Run, judge: Judge, *, cases: Iterable[str] | None = None, repeat: int = 1,
            batch: bool = False, primary: bool = False, polling: Polling = Polling(),
            progress: Progress | None = None) -> JudgingResult:
    """Judge `cases` (default: every case with a final answer) `repeat` times; see the module
    docstring. `run` must be writable. Raises RunError for an unknown case id. `progress` is
    told before the first request and after each judgment (a batch: before and after)."""
    if not run.writable:
        raise RunError(f"{run.dir}: open the run writable to re-judge it")
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    jid = judging_id(judge)
    folder = run.dir / JUDGMENTS_DIR
    folder.mkdir(exist_ok=True)
    info = folder / f"{jid}.json"
    if not info.exists():
        atomic_write_bytes(info, json.dumps({
            "schema_version": SCHEMA_VERSION, "judging": jid, "run_id": run.run_id,
            "judge": judge.provenance(), "batch": batch, "created_at": utc_now(),
            "committed": True}, indent=1).encode())  # the run journal commits to its journal
    journal = Journal(folder / f"{jid}.jsonl")
    try:
        return _judge_cases(run, judge, jid, journal, cases, repeat, batch, primary, polling,
                            progress or (lambda done, total, what: None))
    finally:
        journal.close()
        # the run journal commits to this judging's final chain (store.integrity)
        run.record_commitments(only=f"{JUDGMENTS_DIR}/{jid}")


def _judge_cases(run, judge, jid, journal, cases, repeat, batch, primary, polling, progress):
    known = set(run.case_ids())
    wanted = list(cases) if cases is not None else sorted(known)
    unknown = [c for c in wanted if c not in known]
    if unknown:
        raise RunError(f"{run.dir}: no such case(s): {', '.join(unknown[:5])}")
    done = {(j.case_id, j.repeat) for j in judgments_in(journal.path)}
    todo: dict[str, tuple[str, int, JudgeInput, dict[str, Any]]] = {}
    skipped: dict[str, str] = {}
    for cid in wanted:
        inp, why, notes = case_input(run, cid)
        if inp is None:
            skipped[cid] = why or "no input"  # case_input names why whenever it has none
            continue
        for k in range(1, repeat + 1):
            if (cid, k) not in done:
                todo[f"{cid}/rejudge-{jid}-r{k:02d}"] = (cid, k, inp, notes)
    pending: dict[str, str] = {}
    unscored: dict[str, str] = {}
    judged: list[str] = []
    progress(0, len(todo), f"{len(done)} judged before" if done else "")
    if batch:
        verdicts, waiting = judge_in_batches(
            judge, {label: t[2] for label, t in todo.items()}, run.raw,
            FileLedger(run.dir / JUDGMENTS_DIR / f"{jid}.batches.jsonl"), polling=polling,
            name=jid)
        journal.append_many([e for label, v in verdicts.items()
                             for e in _events(v, jid, *todo[label][:2], todo[label][3])])
        judged = [f"{todo[label][0]}#{todo[label][1]}" for label in verdicts]
        unscored = {f"{todo[label][0]}#{todo[label][1]}": v.unscored_reason or ""
                    for label, v in verdicts.items() if not v.scored}
        pending = {f"{todo[label][0]}#{todo[label][1]}": why for label, why in waiting.items()}
        progress(len(judged), len(todo), f"by batch, {len(pending)} pending" if pending else
                 "by batch")
    else:
        for label, (cid, k, inp, notes) in todo.items():
            verdict = judge.judge(inp, sink=run.raw, label=label)
            if verdict.call_error is not None:  # not obtained: asked again next time
                journal.append_many([JudgeAttempt(label=a.label, attempt=a)
                                     for a in verdict.attempts])
                pending[f"{cid}#{k}"] = verdict.unscored_reason or "judge call failed"
                continue
            journal.append_many(_events(verdict, jid, cid, k, notes))
            judged.append(f"{cid}#{k}")
            if not verdict.scored:
                unscored[f"{cid}#{k}"] = verdict.unscored_reason or "no reason recorded"
            progress(len(judged), len(todo), f"{cid}, repeat {k}" if repeat > 1 else cid)
    if primary:
        set_primary(run, jid)
    return JudgingResult(jid, tuple(judged), len(done), pending, skipped, unscored)


def _events(verdict: Verdict, jid: str, case_id: str, repeat: int,
            notes: dict[str, Any]) -> list[Any]:
    provenance = {**verdict.provenance, "judging": jid, "judged_at": utc_now(), **notes}
    return verdict_events(verdict, verdict.provenance.get("judge", jid), provenance=provenance,
                          case_id=case_id, judging=jid, repeat=repeat)


def verdict_events(verdict: Verdict, judge: str, *, provenance: dict[str, Any] | None = None,
                   given: JudgeInput | None = None, **judging: Any) -> list[Any]:
    """A verdict as journal events: its judge attempts, then the `Judgment` (`judging`: the
    re-judging fields `case_id`, `judging`, `repeat`; none for the run's own judge). `given`:
    the input of the run's own judge, whose cited spans and `answerable` the judgment records
    (a re-judging takes them from there)."""
    if given is not None:
        judging = {**judging, "cited_spans": [dict(s) for s in given.cited_spans],
                   "answerable": given.answerable}
    return [*(JudgeAttempt(label=a.label, attempt=a) for a in verdict.attempts),
            Judgment(judge=judge, correctness=verdict.correctness,
                     citation_support=verdict.citation_support, rationale=verdict.rationale,
                     scored=verdict.scored, unscored_reason=verdict.unscored_reason,
                     request_path=verdict.request_path, response_path=verdict.response_path,
                     checks=verdict.checks,
                     provenance=verdict.provenance if provenance is None else provenance,
                     verdict=verdict.verdict, **judging)]


def set_primary(run: Run, judging: str | None) -> None:
    """Make `judging` primary (None or "run": the config's judge again)."""
    if judging not in (None, RUN_JUDGE) and judging not in judgings(run.dir):
        raise RunError(f"{run.dir}: no judging {judging!r}; known: "
                       f"{', '.join(judgings(run.dir)) or 'none'}")
    folder = run.dir / JUDGMENTS_DIR
    folder.mkdir(exist_ok=True)
    atomic_write_bytes(folder / PRIMARY_FILE, json.dumps(
        {"schema_version": SCHEMA_VERSION, "judging": judging or RUN_JUDGE,
         "set_at": utc_now()}).encode())
