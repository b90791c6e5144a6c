"""The fork server: a single-threaded process that forks one sandboxed child per tool call.

Started once per `Tools` (see `pool.py`) as `python -m parquet_agent.tools.server` with an
allow-listed environment. Before serving it opens the snapshot files read-only (as the caller,
so children can read them after dropping privileges), parses their footers, builds the lookup
structures (`lookup.py`) and two already-locked DuckDB connections (`prepare.py`): every child
inherits all of it copy-on-write instead of paying for it per call. It runs no agent input
itself: the one thing it reads of a call is a `file_stem` to look up in its row index, so that
a call naming a filing the corpus does not have is answered `not_found` at once, as its child
would answer before reading anything (`_absent_filing`), without forking one. Then it serves length-prefixed JSON frames on stdin/stdout:

    -> {"config": {...}}                       once: files, index, limits, drop_to, data_workers
    <- {"ready": true, "pid", "threads", ...}
    -> {"id": n, "tool": name, "args": {...}}  any number, concurrently
    <- {"id": n, "ok", "output" | "error", "peak_rss_bytes", "cpu_s", "worker_id", "queue_ms"}

Admission is here: at most `data_workers` children run at once, the other calls wait in arrival
order (first come, first served) and `queue_ms` says how long. Deciding here rather than in the
caller's threads hands the next call to the waiting spare the moment a child answers, without a
round trip through the caller (whose case threads compete for one GIL), and a call answered
without a child never waits behind data calls.

Why a separate process: forking a threaded process (a notebook, the runner's case threads) is
unsafe, and a fresh interpreter per call costs 150-300 ms; fork from this preloaded,
single-threaded server measured ~31 ms (notes B.5c). The server enforces the wall clock with
SIGKILL as a backstop to the child's own watchdog, and maps how a child died to an error kind.
It exits when its stdin closes, killing any child still running.
"""

from __future__ import annotations

import collections
import gc
import json
import os
import selectors
import signal
import sys
import time

from parquet_agent.tools.prepare import prepare
from parquet_agent.tools.wire import FRAME_HEADER, failure, frame_body, read_frame, write_frame

MAX_RESULT_BYTES = 16 * 1024 * 1024
KILL_GRACE_SECONDS = 2.0


class _Child:
    def __init__(self, job_id: int, pid: int, fd: int, deadline: float):
        self.queue_ms = 0.0  # how long its call waited for a free slot
        self.job_id = job_id
        self.pid = pid
        self.fd = fd
        self.deadline = deadline
        self.started = time.monotonic()
        self.buffer = bytearray()
        self.killed_for: str | None = None

    def answer(self) -> dict | None:
        """The child's answer once its whole length-prefixed frame has arrived."""
        body = frame_body(self.buffer)
        if body is None:
            return None
        try:
            return json.loads(body)
        except ValueError:
            return None


class _Spare:
    """A pre-forked, already hardened child waiting for one job (see `worker.run_spare`)."""

    def __init__(self, pid: int, job_fd: int, result_fd: int):
        self.pid = pid
        self.job_fd = job_fd
        self.result_fd = result_fd


def _death_answer(child: _Child, status: int, limits: dict) -> dict:
    """The child's answer, or what its death means when it gave none."""
    if child.killed_for == "too_large":
        return failure("too_large", f"the result exceeded {MAX_RESULT_BYTES} bytes; ask for less")
    if child.killed_for == "timeout":
        return failure(
            "timeout",
            f"the call ran past its {limits['wall_seconds']:g} s wall-clock limit and its worker "
            "was killed. Narrow the query by metadata first.",
        )
    answered = child.answer()
    if answered is not None:
        return answered
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGXCPU:  # RLIMIT_CPU: the backstop behind the watchdog
            return failure(
                "cpu",
                f"the call used its {limits['cpu_seconds']:g} CPU-second budget and its worker "
                "was stopped. Narrow by metadata first; prefer contains() over ILIKE.",
            )
        return failure(
            "worker_crashed",
            f"the worker died from signal {signal.Signals(sig).name} (possibly out of its "
            "address space); the next call gets a fresh worker.",
        )
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
    return failure(
        "worker_crashed",
        f"the worker exited with status {code} without an answer; the next call gets a fresh worker.",
    )


def serve(stdin_fd: int = 0, stdout_fd: int = 1) -> None:  # pragma: no cover - runs in a subprocess
    import duckdb  # noqa: F401  (preload: children fork with it imported)
    import pyarrow  # noqa: F401
    import pyarrow.parquet  # noqa: F401

    ready = _get_ready(stdin_fd, stdout_fd)
    if ready is None:
        return
    ctx, limits, data_workers = ready
    selector = selectors.DefaultSelector()
    os.set_blocking(stdin_fd, False)
    selector.register(stdin_fd, selectors.EVENT_READ, None)
    pending = bytearray()
    children: dict[int, _Child] = {}
    waiting: collections.deque[tuple[dict, float]] = collections.deque()  # (job, arrived)
    exited: list[int] = []  # answered children still to reap (their teardown is not our latency)
    spare = _fork_spare(ctx)
    open_input = True
    while open_input or children:
        now = time.monotonic()
        timeout = min((c.deadline - now for c in children.values()), default=1.0)
        for key, _ in selector.select(max(0.0, min(timeout, 1.0))):
            if key.data is None:  # a request (or EOF) from the parent
                chunk = os.read(stdin_fd, 1 << 16)
                if not chunk:
                    open_input = False
                    selector.unregister(stdin_fd)
                    for running in children.values():
                        _kill(running.pid)
                    waiting.clear()  # nobody is left to answer
                    if spare is not None:
                        _retire(spare)
                        spare = None
                    continue
                pending += chunk
                while (body := frame_body(pending)) is not None:
                    del pending[: FRAME_HEADER.size + len(body)]
                    job = json.loads(body)
                    absent = _absent_filing(job, ctx)
                    if absent is not None:  # nothing to read, no SQL to run: no child
                        write_frame(stdout_fd, absent)
                    else:
                        waiting.append((job, time.monotonic()))
            else:
                child = key.data
                answer, reaped = _read_child(child, limits)
                if answer is None:
                    continue
                if not reaped:
                    exited.append(child.pid)  # it exits right after its frame: reap it later
                selector.unregister(child.fd)
                os.close(child.fd)
                del children[child.fd]
                answer.update(
                    id=child.job_id,
                    worker_id=f"w{child.pid}",
                    child_ms=round((time.monotonic() - child.started) * 1000, 3),
                    queue_ms=round(child.queue_ms, 3),
                )
                write_frame(stdout_fd, answer)
        while waiting and len(children) < data_workers:
            job, arrived = waiting.popleft()
            child = _dispatch(spare, job, limits) if spare is not None else None
            if child is None:  # no spare (calls overlap) or it died: fork one now
                child = _spawn(job, ctx, limits, stdin_fd, stdout_fd)
            spare = None
            child.queue_ms = (child.started - arrived) * 1000
            children[child.fd] = child
            selector.register(child.fd, selectors.EVENT_READ, child)
        exited = _reap(exited)
        if spare is None and open_input:
            spare = _fork_spare(ctx)  # while the call runs: the next call finds it ready
        now = time.monotonic()
        for child in children.values():
            if now > child.deadline and not child.killed_for:
                child.killed_for = "timeout"
                _kill(child.pid)


def _absent_filing(job: dict, ctx) -> dict | None:  # pragma: no cover - runs in the server
    """The answer to a `read_filing` or `file_stem`-scoped `sql` call naming a file_stem the row
    index does not hold: `not_found`, exactly what its child would answer after the same binary
    search and before reading any file or running any SQL (`worker._locate_row`). None for every
    other call, and whenever there is no row index (children then search the files)."""
    from parquet_agent.tools.worker import not_found_answer

    args = job.get("args")
    stem = args.get("file_stem") if isinstance(args, dict) else None
    if job.get("tool") not in ("read_filing", "sql") or not isinstance(stem, str):
        return None
    if ctx.row_index is None:
        return None
    try:
        if ctx.row_index.locate(stem) is not None:
            return None
    except Exception:  # noqa: BLE001 - never the server's problem: a child answers it
        return None
    return {**not_found_answer(stem, ctx), "id": job["id"], "worker_id": "server",
            "child_ms": 0.0}


def _get_ready(stdin_fd: int, stdout_fd: int):  # pragma: no cover - runs in a subprocess
    """Read the config frame, prepare what children inherit, answer `ready`: (ctx, limits,
    data_workers), or None when the parent closed the pipe first."""
    stdin = os.fdopen(stdin_fd, "rb", buffering=0, closefd=False)  # serve() keeps reading fd 0
    first = read_frame(stdin)
    if first is None:
        return None
    config = first["config"]
    # Opened once, as the caller: a child reads them through /proc/self/fd after dropping root.
    files = {f["name"]: os.open(f["path"], os.O_RDONLY) for f in config["files"]}
    started = time.monotonic()
    ctx = prepare(config, files)
    gc.freeze()  # children never scan (and so never copy) the server's objects in a collection
    ctx_ms = round((time.monotonic() - started) * 1000, 1)
    threads = len(os.listdir("/proc/self/task"))
    write_frame(
        stdout_fd,
        {"ready": True, "pid": os.getpid(), "threads": threads, "uid": os.getuid(),
         "drop_to": config.get("drop_to"), "corpus_con_inherited": ctx.corpus_con is not None,
         "corpus_con_locked_in_child": ctx.corpus_con is not None and not ctx.corpus_con_locked,
         "empty_con_inherited": ctx.empty_con is not None,
         "rss_bytes": _rss_bytes(), "prepare_ms": ctx_ms},
    )
    return ctx, config["limits"], int(config.get("data_workers", 1))


def _read_child(child: _Child, limits: dict) -> tuple[dict | None, bool]:  # pragma: no cover
    """Read what a child wrote: (its answer, whether it was reaped) once it answered or died,
    (None, False) while its frame is incomplete. A child writing more than MAX_RESULT_BYTES is
    killed; one that ends without a whole frame is answered by how it died."""
    chunk = os.read(child.fd, 1 << 16)
    if chunk:
        child.buffer += chunk
        if len(child.buffer) > MAX_RESULT_BYTES and not child.killed_for:
            child.killed_for = "too_large"
            _kill(child.pid)
        return (None if child.killed_for else child.answer()), False
    _, status, usage = os.wait4(child.pid, 0)
    answer = _death_answer(child, status, limits)
    answer.update(peak_rss_bytes=int(usage.ru_maxrss) * 1024,
                  cpu_s=round(usage.ru_utime + usage.ru_stime, 4))
    return answer, True


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _spawn(job: dict, ctx, limits: dict, stdin_fd: int, stdout_fd: int) -> _Child:  # pragma: no cover
    from parquet_agent.tools.worker import run_child

    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_fd)
            run_child(job, write_fd, ctx)
        finally:
            os._exit(70)
    os.close(write_fd)
    deadline = time.monotonic() + limits["wall_seconds"] + KILL_GRACE_SECONDS
    return _Child(job["id"], pid, read_fd, deadline)


def _fork_spare(ctx) -> _Spare | None:  # pragma: no cover - runs in the server
    """Fork the next call's child ahead of time; it hardens itself and waits for its job."""
    from parquet_agent.tools.worker import run_spare

    job_r, job_w = os.pipe()
    result_r, result_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(job_w)
            os.close(result_r)
            run_spare(job_r, result_w, ctx)
        finally:
            os._exit(70)
    os.close(job_r)
    os.close(result_w)
    return _Spare(pid, job_w, result_r)


def _dispatch(spare: _Spare, job: dict, limits: dict) -> _Child | None:  # pragma: no cover
    """Hand `job` to the waiting spare; None when it is gone (the caller forks a child)."""
    try:
        write_frame(spare.job_fd, job)
    except OSError:  # BrokenPipeError: the spare died while idle
        _retire(spare)
        return None
    finally:
        if spare.job_fd >= 0:
            os.close(spare.job_fd)
            spare.job_fd = -1
    deadline = time.monotonic() + limits["wall_seconds"] + KILL_GRACE_SECONDS
    return _Child(job["id"], spare.pid, spare.result_fd, deadline)


def _retire(spare: _Spare) -> None:  # pragma: no cover - runs in the server
    for fd in (spare.job_fd, spare.result_fd):
        if fd >= 0:
            os.close(fd)
    spare.job_fd = spare.result_fd = -1
    _kill(spare.pid)
    os.waitpid(spare.pid, 0)


def _reap(pids: list[int]) -> list[int]:  # pragma: no cover - runs in the server
    """Collect children that answered and exited; keep the ones still exiting."""
    left = []
    for pid in pids:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue
        if done == 0:
            left.append(pid)
    return left


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


if __name__ == "__main__":  # pragma: no cover
    try:
        serve()
    except KeyboardInterrupt:
        sys.exit(130)
