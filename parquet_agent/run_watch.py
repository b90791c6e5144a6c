"""The watchers a run keeps beside its cases: what the runner checks around each case an engine
runs (`CaseWatch`: the cheap corpus drift check and the per-model circuit breaker). Thread-safe
(case workers call them concurrently); no global state. The process tree's peak memory is
`parquet_agent.memory.TreeMemory` (a Ray node samples its own tree with it too).
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

from parquet_agent.corpus.snapshot import CorpusSnapshot
from parquet_agent.errors import SnapshotChangedError
from parquet_agent.experiment_config import case_id
from parquet_agent.store import CorpusDrift
from parquet_agent.store.fold import CaseView, fold_case


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
