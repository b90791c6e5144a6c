"""What state a run folder is in, and why its cases did not finish.

    status = run_status(run)         # RunStatus: complete | partial | failed | running | ...
    failure_groups(run.cases_df())   # [(count, "failed", reason), ...], most frequent first

Statuses: `running` (the last session has no `run_finished` and its process is alive),
`complete` (every planned case finished and none failed), `failed` (no case produced an
answer-bearing result: every finished case failed, or a session stopped before any case, e.g. a
failed health check), `partial` (anything in between: some cases failed or are unfinished),
`created` (a manifest but no session yet), `no manifest` (aborted before its inputs were
frozen). A case counts as `incomplete` when it hit a limit: that is a result, not a failure;
`unfinished` here are the planned cases without `case_finished` (the fold, and so every table
and export, calls them `incomplete` with `finished` False and says why in `status_reason`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import psutil

from parquet_agent.analysis.fold import fold_run, planned_case_ids
from parquet_agent.errors import RunError
from parquet_agent.store.journal import RUN_JOURNAL
from parquet_agent.transcript import RunFinished, RunStarted

if TYPE_CHECKING:
    import pandas as pd

    from parquet_agent.analysis.fold import RunFold
    from parquet_agent.store.run import Run

REASON_CHARS = 160  # a reason is grouped (and shown) by its first characters


@dataclass(frozen=True)
class RunStatus:
    """A run folder's state with its case counts (None where the manifest is missing)."""

    status: str
    planned: int | None
    complete: int
    incomplete: int
    failed: int
    unfinished: int | None

    def counts_text(self) -> str:
        """`12 complete, 2 failed, 4 unfinished of 18` (zero counts left out)."""
        parts = [f"{n} {name}" for name, n in (("complete", self.complete),
                                                ("incomplete", self.incomplete),
                                                ("failed", self.failed),
                                                ("unfinished", self.unfinished)) if n]
        total = f" of {self.planned}" if self.planned is not None else ""
        return (", ".join(parts) or "no case finished") + total


def run_status(run: Run, fold: RunFold | None = None) -> RunStatus:
    """The state of `run` from its journals (its fold when given; RunError when a journal is
    damaged)."""
    try:
        planned = len(planned_case_ids(run))
    except RunError:
        planned = None
    cases = (fold or fold_run(run)).cases
    finished = [c.status for c in cases if c.finished]
    complete, incomplete, failed = (finished.count(k) for k in ("complete", "incomplete", "failed"))
    unfinished = None if planned is None else planned - complete - incomplete - failed
    sessions = [e.payload for e in run.case_events(RUN_JOURNAL)
                if isinstance(e.payload, (RunStarted, RunFinished))]
    if planned is None:
        status = "no manifest"
    elif sessions and isinstance(sessions[-1], RunStarted) and _alive(sessions[-1].pid):
        status = "running"
    elif not sessions and not any(c.sessions for c in cases):
        status = "created"
    elif complete + incomplete == planned:
        status = "complete"
    elif complete + incomplete == 0:
        status = "failed"
    else:
        status = "partial"
    return RunStatus(status, planned, complete, incomplete, failed, unfinished)


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    return psutil.pid_exists(int(pid))


def failure_groups(cases: pd.DataFrame) -> list[tuple[int, str, str]]:
    """Cases that failed or did not finish (`Run.cases_df()` rows), grouped by status and
    reason: (count, "failed" | "unfinished", reason), most frequent first. Ids and numbers that
    differ per case are kept; the grouping uses the reason's first `REASON_CHARS` characters."""
    bad = cases[(cases["status"] == "failed") | ~cases["finished"].astype(bool)]
    groups: dict[tuple[str, str], int] = {}
    for finished, reason in zip(bad["finished"], bad["status_reason"]):
        status = "failed" if finished else "unfinished"
        if isinstance(reason, str) and reason.startswith("unfinished: "):
            reason = reason[len("unfinished: "):]  # the group already says so
        text = _short(reason) if isinstance(reason, str) and reason else "no reason recorded"
        groups[(status, text)] = groups.get((status, text), 0) + 1
    return sorted(((n, s, r) for (s, r), n in groups.items()), key=lambda g: (-g[0], g[1], g[2]))


def _short(reason: str) -> str:
    text = re.sub(r"\s+", " ", reason).strip()
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"




__all__ = ["RunStatus", "failure_groups", "run_status"]
