"""Watchers a run keeps beside its cases: the cheap corpus drift check before each case and
the process tree's peak memory.

Both are thread-safe (case workers call them concurrently) and hold no global state.
"""

from __future__ import annotations

import threading
from pathlib import Path

import psutil

from parquet_agent.corpus.snapshot import CorpusSnapshot
from parquet_agent.errors import SnapshotChangedError
from parquet_agent.store import CorpusDrift


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


class TreeMemory:
    """Samples the memory of this process and all its children.

    Uses PSS (proportional set size) where the kernel reports it: forked workers share most
    pages with their fork server, and summing RSS would count those pages once per process.
    """

    def __init__(self, interval_s: float = 0.2):
        self.peak = 0
        self._interval = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="tree-memory", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self._sample()

    def _sample(self) -> None:
        me = psutil.Process()
        total = 0
        for proc in [me, *me.children(recursive=True)]:
            try:
                total += _pss(proc)
            except psutil.Error:
                continue
        self.peak = max(self.peak, total)

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self._sample()


def _pss(proc: psutil.Process) -> int:
    try:
        return proc.memory_full_info().pss
    except (AttributeError, psutil.AccessDenied):
        return proc.memory_info().rss
