"""The run's own judgments that wait for a batch (`[judge] batch = true` in the config).

    result = judge_pending(run, judge, polling=Polling(max_wait_s=3600))
    result.judged    # case ids judged now
    result.pending   # case id -> why it still awaits its judgment (batch still running, ...)

With batch judging on, a case records its answer and a `judgment_pending` event (the cited
spans' corpus text and whether the question is answerable, looked up while its tools were
open) instead of calling the judge; the fold shows it `awaiting_judgment`, never scored. At
the end of the run, `judge_pending` rebuilds each waiting case's judge input from its journal
(`judge.rejudge.case_input`: the same input on every call, so the same batch input file) and
sends them through `judge.batch.judge_in_batches` (the one batch machinery: input file in raw/
before upload, every poll and result recorded, batch price). Verdicts are appended to the case
journals as the run's own judgments (`judging` None), exactly as one-at-a-time judging writes
them; the cases stop awaiting.

Never paying twice: the batch ledger is `judgments/run.batches.jsonl`; the requests of a batch
created earlier (a run interrupted while it polled, or one that stopped waiting after
`batch_wait_s`) go back into that same batch (`models.batch.batch_groups`), so a resume or
`parquet-agent judge RUN --batch` polls and fetches it instead of creating another; cases that
finished since go into a new batch of their own. Requests a batch expired, cancelled or failed
stay pending with the reason and go into a new batch on the next call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from parquet_agent.analysis.fold import fold_run
from parquet_agent.errors import ModelCallError
from parquet_agent.judge.batch import judge_in_batches
from parquet_agent.judge.rejudge import (
    JUDGMENTS_DIR,
    RUN_JUDGE,
    Progress,
    case_input,
    verdict_events,
)
from parquet_agent.models.batch import FileLedger, Polling
from parquet_agent.transcript import JudgeAttempt

if TYPE_CHECKING:
    from parquet_agent.judge import Judge, JudgeInput
    from parquet_agent.store.run import Run

LEDGER = f"{RUN_JUDGE}.batches.jsonl"  # under judgments/: the run's own judge's batches


@dataclass(frozen=True)
class PendingResult:
    judged: tuple[str, ...] = ()  # case ids judged by this call
    pending: dict[str, str] = field(default_factory=dict)  # case id -> why it still waits

    def summary(self, how: str = "by batch") -> str:
        """One line: how many were judged and why the rest still wait (grouped)."""
        reasons: dict[str, int] = {}
        for why in self.pending.values():
            reasons[why] = reasons.get(why, 0) + 1
        text = f"{len(self.judged)} judged {how}"
        if reasons:
            text += f", {len(self.pending)} still awaiting judgment: " + "; ".join(
                f"{n} x {why}" for why, n in sorted(reasons.items(), key=lambda r: -r[1]))
        return text


def awaiting_cases(run: Run) -> list[str]:
    """The case ids whose answer awaits the run's own judge."""
    return [c.case_id for c in fold_run(run).cases if c.awaiting_judgment]


def judge_pending(run: Run, judge: Judge, *, batch: bool = True, polling: Polling = Polling(),
                  progress: Progress | None = None) -> PendingResult:
    """Judge every case awaiting the run's judge: by batch (default), or one request at a time
    (`batch=False`). A batch that cannot be sent or polled (an HTTP error the SDK could not
    get past) leaves every case pending with the error; nothing is lost. `progress(done,
    total, what)` is told before the first request and after each judgment (a batch: after it)."""
    labels = {f"{cid}/judge": cid for cid in awaiting_cases(run)}
    inputs = {}
    for label, cid in labels.items():
        inp, _, _ = case_input(run, cid)
        if inp is not None:
            inputs[label] = inp
    tell = progress or (lambda done, total, what: None)
    tell(0, len(inputs), "by batch" if batch else "")
    if not batch:  # a judgment not obtained (the call failed) keeps its case awaiting
        judged, waiting = [], {}
        for n, (label, inp) in enumerate(inputs.items(), 1):
            verdict = judge.judge(inp, sink=run.raw, label=label)
            if verdict.call_error is not None:
                run.journal(labels[label]).append_many(
                    [JudgeAttempt(label=a.label, attempt=a) for a in verdict.attempts])
                waiting[labels[label]] = verdict.unscored_reason or "judge call failed"
            else:
                _record(run, labels[label], verdict, judge, inputs[label])
                judged.append(labels[label])
            tell(n, len(inputs), labels[label])
        return PendingResult(tuple(judged), waiting)
    try:
        verdicts, waiting = judge_in_batches(
            judge, inputs, run.raw, FileLedger(run.dir / JUDGMENTS_DIR / LEDGER),
            polling=polling, name=RUN_JUDGE)
    except ModelCallError as exc:
        return PendingResult((), {labels[label]: f"the batch could not be sent or polled: "
                                  f"{exc}" for label in inputs})
    for label, verdict in verdicts.items():
        _record(run, labels[label], verdict, judge, inputs[label])
    tell(len(verdicts), len(inputs), "by batch")
    return PendingResult(tuple(labels[label] for label in verdicts),
                         {labels[label]: why for label, why in waiting.items()})


def _record(run: Run, case_id: str, verdict, judge: Judge, given: JudgeInput) -> None:
    run.journal(case_id).append_many(verdict_events(verdict, judge.model.name, given=given))
