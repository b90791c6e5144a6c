"""The parent side of the sandbox: start the fork server, send calls, wait for answers.

`WorkerPool(config)` starts `python -m parquet_agent.tools.server` with an allow-listed
environment (no credentials ever reach a worker: the environment is built from scratch, not
copied and filtered). `run(tool, args)` is thread-safe: one lock serialises writes to the
server, which admits at most `data_workers` calls at once, first come, first served (time spent
waiting is `queue_ms`, measured there), and one reader thread hands each answer to the thread
waiting for it. If the server itself dies, waiting calls get `worker_crashed` and the next call
starts a new server.
"""

from __future__ import annotations

import collections
import itertools
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from parquet_agent.errors import CorpusError, UsageError
from parquet_agent.tools.wire import failure, read_frame, write_frame

# Allocator taming (notes B.6i): without these, duckdb + pyarrow reserve 2.3 GiB of address
# space and RLIMIT_AS 1.5 GiB fails healthy queries. The last two keep the server
# single-threaded so that fork() is safe.
_WORKER_ENV = {
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TZ": "UTC",
    "HOME": "/nonexistent",
    "MALLOC_ARENA_MAX": "2",
    # Transparent huge pages for malloc: a fresh worker faults in every page it touches; with
    # this a scoped read of a 12 MiB row group took 3.5k instead of 20k page faults
    # (measured: first read in a forked child ~50 ms instead of ~150 ms under load).
    "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1",
    "ARROW_DEFAULT_MEMORY_POOL": "system",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "JE_ARROW_MALLOC_CONF": "background_thread:false",
    "PYTHONDONTWRITEBYTECODE": "1",
}


def worker_environment() -> dict[str, str]:
    """The complete environment of the fork server and its workers (an allow-list)."""
    package_root = str(Path(__file__).resolve().parents[2])  # the folder holding parquet_agent/
    return {**_WORKER_ENV, "PYTHONPATH": package_root}


_LIVENESS_POLL_S = 0.1  # how often a waiting call checks that the server is alive
_DRAIN_S = 0.3


@dataclass(frozen=True)
class Answer:
    data: dict  # the server's answer frame
    queue_ms: float
    run_ms: float


class _Slot:
    __slots__ = ("event", "answer")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.answer: dict | None = None


class WorkerPool:
    def __init__(self, config: dict, *, data_workers: int = 1, answer_timeout_s: float = 60.0):
        if data_workers < 1:
            raise ValueError("data_workers must be at least 1")
        self._config = {**config, "data_workers": data_workers}
        self._data_workers = data_workers
        self._write_lock = threading.Lock()
        self._start_lock = threading.Lock()
        self._slots: dict[int, _Slot] = {}
        self._slots_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._answer_timeout = answer_timeout_s
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=50)
        self._proc: subprocess.Popen | None = None
        self.server_info: dict = {}
        self.starts = 0
        self._closed = False
        self._start()

    # -- lifecycle -----------------------------------------------------------------------------

    def _start(self) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [sys.executable, "-s", "-m", "parquet_agent.tools.server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=worker_environment(),
            cwd="/",
            close_fds=True,
            start_new_session=True,  # a Ctrl-C in the notebook does not reach the workers
        )
        stdin, stdout, stderr = _pipes(proc)
        write_frame(stdin.fileno(), {"config": self._config})
        ready = read_frame(stdout)
        if not ready or not ready.get("ready"):
            proc.kill()
            err = stderr.read().decode("utf-8", "replace")[-2000:]
            raise CorpusError(
                "the tool worker server could not start over this corpus (is every file and "
                f"the _index readable?): {err.strip().splitlines()[-1] if err.strip() else 'no output'}"
            )
        self.server_info = ready
        self._proc = proc
        self.starts += 1
        threading.Thread(target=self._read_answers, args=(proc,), daemon=True, name="tools-answers").start()
        threading.Thread(target=self._drain_stderr, args=(proc,), daemon=True, name="tools-stderr").start()
        return proc

    def _ensure_running(self) -> subprocess.Popen:
        with self._start_lock:
            if self._closed:
                raise UsageError("this Tools is closed; open a new one with Tools.open(...)")
            proc = self._proc
            if proc is None or proc.poll() is not None:
                proc = self._start()
            return proc

    def close(self) -> None:
        with self._start_lock:
            self._closed = True
            proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            _pipes(proc)[0].close()  # the server kills running children and exits
            proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()

    @property
    def server_pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def server_running(self) -> bool:
        proc = self._proc
        return proc is not None and proc.poll() is None

    def stderr_tail(self) -> list[str]:
        return list(self._stderr_tail)

    # -- calls ---------------------------------------------------------------------------------

    def run(self, tool: str, args: dict) -> Answer:
        t0 = time.perf_counter()
        proc = self._ensure_running()
        job_id = next(self._ids)
        slot = _Slot()
        with self._slots_lock:
            ahead = len(self._slots)  # calls this one may wait behind in the server
            self._slots[job_id] = slot
        try:
            with self._write_lock:
                write_frame(_pipes(proc)[0].fileno(), {"id": job_id, "tool": tool, "args": args})
        except OSError:
            slot.answer = _crashed("the tool worker server is gone; the next call starts a new one")
            slot.event.set()
        self._wait(slot, proc, turns=1 + ahead // self._data_workers)
        with self._slots_lock:
            self._slots.pop(job_id, None)
        answer = slot.answer or _crashed("no answer")
        total_ms = (time.perf_counter() - t0) * 1000
        queue_ms = min(float(answer.get("queue_ms", 0.0)), total_ms)
        return Answer(answer, queue_ms, total_ms - queue_ms)

    def _wait(self, slot: _Slot, proc: subprocess.Popen, turns: int) -> None:
        """Wait for the answer, but notice at once when the server died: a dead server's pipe
        can still accept a request (nothing may ever answer it), so waiting for the answer alone
        cost a whole `answer_timeout` while every other call queued behind this one. `turns`:
        how many calls' time the server may take (this one and those queued before it)."""
        deadline = time.monotonic() + self._answer_timeout * turns
        while not slot.event.wait(_LIVENESS_POLL_S):
            if proc.poll() is not None:
                # the answer reader may still be forwarding what the server wrote before it died
                if not slot.event.wait(_DRAIN_S):
                    slot.answer = _crashed(
                        f"the tool worker server died (exit status {proc.returncode}) during this "
                        "call; the next call starts a new one")
                return
            if time.monotonic() > deadline:
                slot.answer = _crashed("no answer from the tool worker server in time")
                return

    def _read_answers(self, proc: subprocess.Popen) -> None:
        while True:
            try:
                frame = read_frame(_pipes(proc)[1])
            except (OSError, ValueError):
                frame = None
            if frame is None:
                break
            with self._slots_lock:
                slot = self._slots.get(frame.get("id", -1))  # ids count from 1
            if slot is not None:
                slot.answer = frame
                slot.event.set()
        # The server is gone (it closed its stdout only by exiting): make sure it is reaped
        # before the calls waiting on it fail, so that the next call starts a new one instead
        # of writing to one still exiting
        try:
            proc.kill()
            proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        with self._slots_lock:
            waiting = list(self._slots.values())
        for slot in waiting:
            if not slot.event.is_set():
                slot.answer = _crashed("the tool worker server exited; the next call starts a new one")
                slot.event.set()

    def _drain_stderr(self, proc: subprocess.Popen) -> None:
        for line in _pipes(proc)[2]:
            self._stderr_tail.append(line.decode("utf-8", "replace").rstrip())


def _pipes(proc: subprocess.Popen) -> tuple[IO[bytes], IO[bytes], IO[bytes]]:
    """stdin, stdout and stderr of the server (`_start` opens all three as pipes)."""
    if proc.stdin is None or proc.stdout is None or proc.stderr is None:
        raise ValueError("the tool worker server was started without its three pipes")
    return proc.stdin, proc.stdout, proc.stderr


def _crashed(message: str) -> dict:
    return failure("worker_crashed", message)
