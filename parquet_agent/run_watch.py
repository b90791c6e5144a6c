"""The watcher a run keeps beside its cases: the cheap corpus drift check before each case
(thread-safe: case workers call it concurrently; no global state). The process tree's peak
memory is `parquet_agent.memory.TreeMemory` (a Ray node samples its own tree with it too).
"""

from __future__ import annotations

import threading
from pathlib import Path

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
