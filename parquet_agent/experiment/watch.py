"""The watchers a run keeps beside its cases: the checks before the first case
(`health_checks`: one call per model and the judge, and the way the judge's server takes a
structured judgment) and what the runner checks around each case an engine runs (`CaseWatch`:
the cheap corpus drift check and the per-model circuit breaker). Thread-safe (case workers call
them concurrently); no global state. The process tree's peak memory is
`parquet_agent.memory.TreeMemory` (a Ray node samples its own tree with it too).
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

from parquet_agent.corpus.snapshot import CorpusSnapshot
from parquet_agent.errors import HealthCheckError, ModelCallError, SnapshotChangedError
from parquet_agent.experiment.config import ExperimentConfig, case_id
from parquet_agent.experiment.run import ExperimentRun
from parquet_agent.judge import Judge
from parquet_agent.judge.negotiate import negotiate
from parquet_agent.models.protocol import GenerationSettings, Model, ModelRequest, UserMessage
from parquet_agent.store import CorpusDrift, ModelAttempt
from parquet_agent.analysis.fold import CaseView, fold_case


BREAKER_THRESHOLD = 3  # cases in a row that could not reach their server before a model stops
# attempt error kinds (models.retry) that mean the server itself is not there: refused or
# dropped connections, timeouts, 5xx. A 400 is about one request; these are about every one.
UNREACHABLE_KINDS = ("[network]", "[timeout]", "[http_5xx]")


class CaseWatch:
    """The engine's hooks around each case: `before_case(item)` checks the corpus and says
    whether to start the case (False: its model's breaker is open, so the case stays unstarted
    and a resume runs it); `after_case(item)` feeds the breaker from the case's journal (read
    on the driver, whichever engine ran the case)."""

    def __init__(self, drift: DriftWatch, breaker: Breaker):
        self.drift, self.breaker = drift, breaker

    def before_case(self, item: tuple[str, str, str]) -> bool:
        if self.breaker.is_open(item[1]):
            return False
        self.drift.check()
        return True

    def after_case(self, item: tuple[str, str, str]) -> None:
        self.breaker.record(item)


class Breaker:
    """Per-model circuit breaker over one run: open after `threshold` cases in a row of one
    model ended failed because its server was unreachable; says so once on stderr."""

    def __init__(self, run: Any, threshold: int = BREAKER_THRESHOLD):
        self.run, self.threshold = run, threshold
        self._streak: dict[str, int] = {}
        self._open: set[str] = set()
        self._lock = threading.Lock()

    def is_open(self, model: str) -> bool:
        with self._lock:
            return model in self._open

    def record(self, item: tuple[str, str, str]) -> None:
        model = item[1]
        cid = case_id(*item)
        unreachable = server_unreachable(fold_case(cid, self.run.case_events(cid, resolve=False)))
        with self._lock:
            streak = self._streak[model] = self._streak.get(model, 0) + 1 if unreachable else 0
            if streak < self.threshold or model in self._open:
                return
            self._open.add(model)
        print(f"parquet-agent: model {model!r}: {streak} cases in a row could not reach its "
              "server; its remaining cases are not started and stay resumable (fix the server, "
              f"then resume {self.run.dir} with --resume)", file=sys.stderr, flush=True)


def server_unreachable(view: CaseView) -> bool:
    """Whether a case ended failed (finished `failed`, or stopped by a retryable failure),
    its last answer attempt having found no server."""
    stopped = view.status == "failed" or (not view.finished and bool(view.failures))
    attempts = view.answer_attempts
    error = attempts[-1].payload.attempt.error if attempts else None
    return stopped and isinstance(error, str) and error.startswith(UNREACHABLE_KINDS)


class DriftWatch:
    """Cheap per-case corpus checks (size and mtime); full hashes were checked at preflight."""

    def __init__(self, snapshot: CorpusSnapshot, corpus: Path, run_journal):
        self.snapshot, self.corpus, self.journal = snapshot, corpus, run_journal
        self._reported: set[str] = set()
        self._lock = threading.Lock()

    def check(self) -> None:
        check = self.snapshot.check(self.corpus, quick=True)
        if not check.ok:
            what = check.describe().replace("\n", "; ")
            if check.changed:
                raise SnapshotChangedError(
                    f"the corpus changed during the run, so its results are no longer "
                    f"comparable: {what}. Restore the snapshotted files to finish it with "
                    "--resume, or start a new run")
            raise SnapshotChangedError(  # vanished (moved, unmounted): the likelier fix
                f"corpus file(s) vanished from {self.corpus} during the run ({what}). Nothing "
                "recorded was lost: put them back unchanged, then finish the run with --resume")
        with self._lock:
            new = [n for n in check.new if n not in self._reported]
            if new:
                self._reported.update(new)
                self.journal.append(CorpusDrift(excluded_new_files=new))


def health_checks(run: ExperimentRun, session: int, config: ExperimentConfig,
                  models: dict[str, Model],
                  judge: Judge, keep_going: bool) -> str | None:
    """One recorded health call per model and for the judge, then the way the judge is asked
    for its judgment (returned; see `judge_format`); HealthCheckError on the first that fails
    (after recording its attempts), unless `keep_going`."""
    journal = run.run_journal()
    specs = {spec.name: spec for spec in config.models}
    judge_key = f"judge-{judge.model.name}"
    specs[judge_key] = config.judge
    for name, model in {**models, judge_key: judge.model}.items():
        label = f"_health/session-{session}/{name}"
        request = ModelRequest((UserMessage("Reply with the single word OK."),),
                               settings=GenerationSettings(max_output_tokens=16),
                               purpose="health", label=label)
        failure = None
        try:
            attempts = model.complete(request, run.raw).attempts
        except ModelCallError as exc:
            attempts, failure = exc.attempts, exc
        for attempt in attempts:
            journal.append(ModelAttempt(label=label, attempt=attempt, role="health"))
        if failure is not None:
            spec = specs[name]
            where = spec.base_url or f"the {spec.provider} default endpoint"
            _refuse(f"health check failed for {name!r} ({spec.provider} {spec.model} at "
                    f"{where}): {failure}", run, keep_going)
            if name == judge_key:
                return None  # --keep-going past a judge that does not answer
    return judge_format(run, session, config, judge, keep_going)


def judge_format(run: ExperimentRun, session: int, config: ExperimentConfig, judge: Judge,
                 keep_going: bool) -> str | None:
    """How the judge's server takes a structured judgment (`judge.negotiate`), journaled; a
    judge that can judge in no way stops the run here, unless `keep_going`. A batch judge
    (`[judge] batch`) is asked in its vendor's own strict way: only OpenAI, Anthropic and Gemini
    have batch APIs, and each takes it."""
    if config.judge.batch:
        return None
    found = negotiate(judge, run.raw, f"_health/session-{session}/judge-{judge.model.name}-format")
    if not found.offline:
        run.run_journal().append_many(found.events(judge.model.name))
    if not found.can_judge:
        spec = config.judge
        where = spec.base_url or f"the {spec.provider} default endpoint"
        _refuse(f"judge {judge.model.name!r} ({spec.provider} {spec.model} at {where}): "
                f"{found.summary()}.", run, keep_going)
    return found.mode


def _refuse(message: str, run: ExperimentRun, keep_going: bool) -> None:
    """A failed check stops the run before any case (HealthCheckError), unless `keep_going`."""
    if not keep_going:
        raise HealthCheckError(f"{message} No case was run (run folder {run.dir}); fix the "
                               "model entry or start its server, or pass --keep-going to run "
                               "anyway.")
    print(f"parquet-agent: {message} (--keep-going: running anyway)", file=sys.stderr,
          flush=True)
