"""Catch a run in the window between a paid response made durable in the raw store and its
turn journaled (issue 18): stop the processes running cases each time an answer response
appears, look at the journals, and kill the one whose response is not journaled yet.

Used by tests/test_replay_recorded_responses.py (a local run process: stopped, it has no write
on its way). The Ray test catches the window with tests/engine/freeze.py instead, since a Ray
node's writes travel through the mailbox actor."""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path

from parquet_agent.models.http_model import REPLAYED_NOTE
from parquet_agent.store.blobs import RawStore


def answer_responses(run_dir: Path) -> set[str]:
    """Raw paths of the answer-turn responses durable in `run_dir` so far."""
    if not (run_dir / "raw" / "bodies.pack").exists():
        return set()
    store = RawStore(run_dir, writable=False)
    try:
        return {n for n in store.names() if "/turn-" in n and n.endswith(".response.json")}
    finally:
        store.close()


def unjournaled(run_dir: Path, responses: set[str]) -> list[str]:
    """Those of `responses` no open case journal mentions (a sealed case journaled all)."""
    out = []
    for path in sorted(responses):
        journal = run_dir / "journal" / f"{path.split('/')[1]}.jsonl"
        try:
            if path not in journal.read_text(errors="replace"):
                out.append(path)
        except FileNotFoundError:  # sealed meanwhile
            continue
    return out


def last_node(run_dir: Path, response: str) -> str | None:
    """The node named by the last `case_started` of the response's case."""
    journal = run_dir / "journal" / f"{response.split('/')[1]}.jsonl"
    found = re.findall(r'"node":"([^"]+)"', journal.read_text(errors="replace"))
    return found[-1] if found else None


def stop_in_the_window(run_dir: Path, pids: Callable[[], list[int]],
                       kill: Callable[[str], None], running: Callable[[], bool], *,
                       settle_s: float) -> str | None:
    """SIGSTOP `pids()` each time a new answer response is durable; after `settle_s` (writes
    already on their way land), `kill(response)` the first time one is not journaled, then
    SIGCONT the rest. Returns that response's raw path, or None if the run ended first."""
    seen: set[str] = set()
    while running():
        if not answer_responses(run_dir) - seen:
            time.sleep(0.002)
            continue
        stopped = _signal(pids(), signal.SIGSTOP)
        time.sleep(settle_s)
        now = answer_responses(run_dir)
        open_ = unjournaled(run_dir, now - seen)
        seen |= now
        if open_:
            kill(open_[0])
        _signal(stopped, signal.SIGCONT)
        if open_:
            return open_[0]
    return None


def replayed_attempts(run) -> list[dict]:
    """Attempts answered from a recorded response instead of a new call."""
    return [e.data["attempt"] for evs in run.all_events().values() for e in evs
            if e.event == "model_attempt" and REPLAYED_NOTE in e.data["attempt"]["notes"]]


def check_complete_once(run, cases: int = 12) -> None:
    """`run` verifies clean and each of its `cases` cases finished complete, once, with each
    answer turn journaled once."""
    report = run.verify()
    assert report.ok, str(report)
    events = run.all_events()
    ids = [c for c in events if c != "_run"]
    assert len(ids) == len(run.completed_cases()) == cases
    for cid in ids:
        finished = [e for e in events[cid] if e.event == "case_finished"]
        assert len(finished) == 1 and finished[0].data["status"] == "complete", cid
        turns = [e.data["turn"] for e in events[cid] if e.event == "model_turn"]
        assert sorted(turns) == sorted(set(turns)), f"{cid}: a turn was recorded twice"


def _signal(pids: list[int], sig: int) -> list[int]:
    done = []
    for pid in pids:
        try:
            os.kill(pid, sig)
            done.append(pid)
        except ProcessLookupError:
            continue
    return done
