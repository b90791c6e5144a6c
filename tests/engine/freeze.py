"""Kill a Ray node's processes at a moment chosen by construction, not by timing.

The node's processes are frozen (SIGSTOP) while the run's journals are read, so what the
journals say cannot change under the decision but by writes the frozen processes had already
sent: a case thread waits for each of its store calls (`RemoteRun.call`), so that is at most one
write per case thread. A grid case (tests/engine/grid.py) whose journal has no `turn-03` yet
needs many more writes before its `case_finished`: killed now, it is certainly lost mid-case.

`step` goes further, for the windows between a write made durable on the driver and the node
hearing of it (a case's `case_finished`; a paid response not yet journaled): it lets the nodes
and the mailbox actor (which carries every node write to the driver and every reply back) run
only in turns, so a node never acts on a reply the run folder did not show first.
"""

from __future__ import annotations

import gzip
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil

STARTED = '"event":"case_started"'
ENDED = ('"event":"case_finished"', '"event":"case_failed"')
LAST_TURN = "turn-03"  # the grid's answer turn


def journal_text(run_dir: Path, case_id: str) -> str:
    """The case's journal so far (open or sealed), '' if it has none."""
    path = run_dir / "journal" / f"{case_id}.jsonl"
    for _ in range(3):  # sealed (renamed to .gz) while we looked: read that
        try:
            return path.read_text(errors="replace")
        except FileNotFoundError:
            pass
        try:
            return gzip.decompress(path.with_name(path.name + ".gz").read_bytes()).decode(
                errors="replace")
        except (FileNotFoundError, EOFError, gzip.BadGzipFile):
            continue
    return ""


def open_cases(run_dir: Path, node: str) -> dict[str, str]:
    """Cases last started on `node` that have not finished or failed since: case id -> the
    journal lines written since that start."""
    out = {}
    for path in (run_dir / "journal").glob("*.jsonl"):
        lines = journal_text(run_dir, path.name[: -len(".jsonl")]).splitlines()
        starts = [i for i, line in enumerate(lines) if STARTED in line]
        if not starts or f'"node":"{node}"' not in lines[starts[-1]]:
            continue
        since = lines[starts[-1]:]
        if not any(end in line for line in since for end in ENDED):
            out[path.name[: -len(".jsonl")]] = "\n".join(since)
    return out


def finished(run_dir: Path, case_id: str) -> bool:
    return '"event":"case_finished"' in journal_text(run_dir, case_id)


def signal_all(procs: list[psutil.Process], sig: int) -> None:
    for proc in procs:
        try:
            proc.send_signal(sig)
        except psutil.Error:
            continue


def freeze(procs: list[psutil.Process], bound_s: float = 30.0) -> None:
    """SIGSTOP `procs` and return once every thread of each has stopped (a signal is delivered
    asynchronously: a process may run on another core for a moment after kill() returns)."""
    signal_all(procs, signal.SIGSTOP)
    deadline = time.monotonic() + bound_s
    for proc in procs:
        while not _stopped(proc.pid):
            assert time.monotonic() < deadline, f"process {proc.pid} did not stop"
            time.sleep(0.001)


def _stopped(pid: int) -> bool:
    """Every thread of `pid` stopped (or the process is gone)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return True
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, IndexError):
            continue
        if state not in ("T", "t", "Z", "X"):
            return False
    return True


def kill_mid_case(run_dir: Path, node: str, victims: Callable[[], list[psutil.Process]],
                  ready: Callable[[], bool], killed: list[int],
                  deadline_s: float = 240.0) -> threading.Thread:
    """A thread that, once `ready()`, SIGKILLs `victims()` (processes of `node`) at a moment
    when `node` has a case in flight that cannot have finished; records the killed pids."""
    def run() -> None:
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            if not (ready() and open_cases(run_dir, node)):
                time.sleep(0.02)
                continue
            procs = victims()
            try:
                freeze(procs)
                if any(LAST_TURN not in since for since in open_cases(run_dir, node).values()):
                    signal_all(procs, signal.SIGKILL)
                    killed.extend(p.pid for p in procs)
                    return
            finally:
                signal_all(procs, signal.SIGCONT)  # a no-op for the killed
            time.sleep(0.02)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def step(look: Callable[[], object], kill: Callable[[object], None],
         node_procs: Callable[[], list[psutil.Process]],
         mailbox_procs: Callable[[], list[psutil.Process]], running: Callable[[], bool], *,
         settle_s: float = 0.2) -> object:
    """Run the nodes and the mailbox actor in turns until `look()` (called with both frozen)
    returns something; then `kill(it)` before any node runs again, and return it (None if
    the run ended first).

    Invariant: a node runs only while the mailbox is frozen, and the mailbox only while the
    nodes are frozen. Every reply to a node goes through the mailbox, and the driver replies
    only once the write is durable; so what became durable since the previous look has not
    been answered to any node yet: the node that asked cannot have acted on it."""
    nodes, mailbox = node_procs(), mailbox_procs()
    freeze(mailbox)
    freeze(nodes)
    try:
        look()  # the state every later look is compared with
        while running():
            signal_all(mailbox, signal.SIGCONT)  # the driver applies what the nodes sent
            time.sleep(settle_s)
            freeze(mailbox)
            hit = look()
            if hit is not None:
                kill(hit)
                return hit
            signal_all(nodes, signal.SIGCONT)  # the nodes read their replies, send on
            time.sleep(settle_s)
            freeze(nodes)
        return None
    finally:
        signal_all(nodes, signal.SIGCONT)  # a no-op for the killed
        signal_all(mailbox, signal.SIGCONT)


class FinishedSince:
    """`look` for `step`: a case of `node` that was open at the previous look and has its
    `case_finished` now (durable, and not yet answered to the node)."""

    def __init__(self, run_dir: Path, node: str):
        self.run_dir, self.node = run_dir, node
        self.open: set[str] = set()

    def __call__(self) -> str | None:
        done = sorted(c for c in self.open if finished(self.run_dir, c))
        self.open = set(open_cases(self.run_dir, self.node))
        return done[0] if done else None
