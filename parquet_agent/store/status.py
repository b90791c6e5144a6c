"""What state a run folder is in, and why its cases did not finish.

    status = run_status(run)         # RunStatus: complete | partial | failed | running | ...
    failure_groups(run.cases_df())   # [(count, "failed", reason), ...], most frequent first

Statuses: `running` (the last session has no `run_finished` and its process is alive),
`complete` (every planned case finished and none failed), `failed` (no case produced an
answer-bearing result: every finished case failed, or a session stopped before any case, e.g. a
failed health check), `partial` (anything in between: some cases failed or are unfinished),
`created` (a manifest but no session yet), `no manifest` (aborted before its inputs were
frozen). A case counts as `incomplete` when it hit a limit: that is a result, not a failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import psutil

from parquet_agent.errors import RunError

if TYPE_CHECKING:
    import pandas as pd

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


def run_status(run: Run) -> RunStatus:
    """The state of `run` from its journals (RunError when a journal is damaged)."""
    try:
        planned = len(run.planned_case_ids())
    except RunError:
        planned = None
    cases = run.cases_df()
    counts = cases["status"].value_counts()
    complete, incomplete, failed = (int(counts.get(k, 0)) for k in
                                    ("complete", "incomplete", "failed"))
    unfinished = None if planned is None else planned - complete - incomplete - failed
    sessions = [e for e in run.run_events() if e.event in ("run_started", "run_finished")]
    if planned is None:
        status = "no manifest"
    elif sessions and sessions[-1].event == "run_started" and _alive(sessions[-1].data.get("pid")):
        status = "running"
    elif not sessions and not cases["sessions"].sum():
        status = "created"
    elif complete + incomplete == planned:
        status = "complete"
    elif complete + incomplete == 0:
        status = "failed"
    else:
        status = "partial"
    return RunStatus(status, planned, complete, incomplete, failed, unfinished)


def _alive(pid: int | None) -> bool:
    return bool(pid) and psutil.pid_exists(int(pid))


def failure_groups(cases: pd.DataFrame) -> list[tuple[int, str, str]]:
    """Cases that failed or did not finish, grouped by status and reason: (count, status,
    reason), most frequent first. Ids and numbers that differ per case are kept; the grouping
    uses the reason's first `REASON_CHARS` characters."""
    bad = cases[cases["status"].isin(["failed", "unfinished"])]
    groups: dict[tuple[str, str], int] = {}
    for status, reason in zip(bad["status"], bad["reason"]):
        text = _short(reason) if isinstance(reason, str) and reason else (
            "never started" if status == "unfinished" else "no reason recorded")
        groups[(status, text)] = groups.get((status, text), 0) + 1
    return sorted(((n, s, r) for (s, r), n in groups.items()), key=lambda g: (-g[0], g[1], g[2]))


def _short(reason: str) -> str:
    text = re.sub(r"\s+", " ", reason).strip()
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"




__all__ = ["RunStatus", "failure_groups", "run_status"]
