"""Kill a Ray node's processes at a moment chosen by construction, not by timing.

The node's processes are frozen (SIGSTOP) while the run's journals are read, so what the
journals say cannot change under the decision but by writes the frozen processes had already
sent: a case thread waits for each of its store calls (`RemoteRun.call`), so that is at most one
write per case thread. A grid case (tests/engine/grid.py) whose journal has no `turn-03` yet
needs many more writes before its `case_finished`: killed now, it is certainly lost mid-case.

`step_until_finished` goes further for the window where a node dies just after its case's
`case_finished` is durable on the driver and before its result reached the driver: it lets the
node and the mailbox actor (which carries every node write to the driver and every reply back)
run only in turns, so the node never sees a reply the journals did not show first.
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


def step_until_finished(run_dir: Path, node: str, node_procs: Callable[[], list[psutil.Process]],
                        mailbox_procs: Callable[[], list[psutil.Process]],
                        running: Callable[[], bool], *, settle_s: float = 0.2) -> str | None:
    """Kill `node_procs()` just after one of `node`'s cases has its `case_finished` durable and
    before the node can have seen the reply (so its result never reaches the driver); returns
    that case id, or None if the run ended first.

    Invariant: the node runs only while the mailbox is frozen, and the mailbox only while the
    node is frozen. A reply reaches the node only through the mailbox, and the driver replies
    only after the write is durable; so a case the journals showed unfinished while the mailbox
    was frozen has not been answered `case_finished` by the time the node next runs."""
    node_procs_now = node_procs()
    mailbox = mailbox_procs()
    freeze(mailbox)
    pending = set(open_cases(run_dir, node))  # before the node can see another reply
    freeze(node_procs_now)
    try:
        while running():
            signal_all(mailbox, signal.SIGCONT)  # the driver applies what the node sent
            time.sleep(settle_s)
            freeze(mailbox)
            done = sorted(c for c in pending if finished(run_dir, c))
            if done:
                signal_all(node_procs_now, signal.SIGKILL)
                return done[0]
            pending = set(open_cases(run_dir, node))
            signal_all(node_procs_now, signal.SIGCONT)  # the node reads its replies, sends on
            time.sleep(settle_s)
            freeze(node_procs_now)
        return None
    finally:
        signal_all(node_procs_now, signal.SIGCONT)  # no-op for the killed
        signal_all(mailbox, signal.SIGCONT)
