"""Making each fork of the tool server cheaper, without sharing anything more with the child.

A sandboxed call costs one fork of the server (~70 MiB of private memory: Python heap, DuckDB and
Arrow state), and most of that call's CPU is memory management rather than the query: the fork
copies one page-table entry per 4 KiB page, the child copies every page it writes to
(copy-on-write) and drops its page table when it exits. Two measured savings (docs/benchmarks.md,
issue 26):

- `collapse_resident()`: the server's mostly resident 2 MiB stretches of private anonymous memory
  become transparent huge pages (Linux 6.1+ `MADV_COLLAPSE`), so a fork copies one entry for each
  instead of 512 and the exit drops one. A child that writes into such a page still gets its own
  copy of the 4 KiB it touched (the kernel splits the mapping first): this changes how the same
  memory is mapped, not who can see it. Best effort: where the kernel has no transparent huge
  pages, or refuses, nothing changes.
- `fork_single_threaded()`: fork(2) itself, without the repair `os.fork()` runs in the child for
  a multi-threaded interpreter (re-initialising thread states and locks, every module's
  `register_at_fork` hook): in a server with one thread there is nothing to repair, and the
  repair wrote ~225 pages of the child (~0.85 ms of CPU per call, measured). The server uses it
  only while it has exactly one thread, and `os.fork()` otherwise. C-level `pthread_atfork`
  handlers (DuckDB's and Arrow's allocators) run either way: they are part of fork(2).
"""

from __future__ import annotations

import ctypes
import mmap
import os

HUGE_PAGE = 2 * 1024 * 1024
_MADV_HUGEPAGE = 14
_MADV_COLLAPSE = 25


def fork_single_threaded() -> int:
    """fork(2) for a process that has exactly one thread: the child's pid in the parent, 0 in
    the child. Falls back to `os.fork()` when another thread exists (then Python's repair of the
    child is needed) or when there is no C library to call."""
    if _thread_count() != 1:
        return os.fork()
    try:
        fork = ctypes.CDLL(None, use_errno=True).fork
    except (OSError, AttributeError):  # pragma: no cover - not a POSIX C library
        return os.fork()
    fork.restype = ctypes.c_int
    # CDLL releases the GIL around the call and takes it back after: in the child, the one
    # thread takes back a GIL nobody holds, as in the parent.
    pid = fork()
    if pid < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"fork: {os.strerror(err)}")
    return pid


def _thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:  # pragma: no cover - no /proc: assume the worst
        return 2


def collapse_resident(min_resident: float = 0.5) -> int:
    """Bytes now backed by huge pages after collapsing every 2 MiB-aligned stretch of this
    process's private anonymous memory that is at least `min_resident` resident (stretches mostly
    unused stay as they are, so resident memory grows by at most what their holes add); 0 where
    the kernel cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        madvise, mincore = libc.madvise, libc.mincore
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        return 0
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    pages = HUGE_PAGE // mmap.PAGESIZE
    vector = (ctypes.c_ubyte * pages)()
    done = 0
    for start, end in _anonymous_ranges():
        first = -(-start // HUGE_PAGE) * HUGE_PAGE
        for chunk in range(first, end - HUGE_PAGE + 1, HUGE_PAGE):
            if mincore(chunk, HUGE_PAGE, vector) != 0:
                continue
            if pages - bytes(vector).count(0) < min_resident * pages:  # bit 0: resident
                continue
            if madvise(chunk, HUGE_PAGE, _MADV_HUGEPAGE) == 0 and madvise(chunk, HUGE_PAGE, _MADV_COLLAPSE) == 0:
                done += HUGE_PAGE
    return done


def _anonymous_ranges() -> list[tuple[int, int]]:
    """(start, end) of each private, writable, anonymous mapping (and the brk heap) at least one
    huge page long, read from /proc/self/maps before anything is changed."""
    ranges = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            name = fields[5] if len(fields) > 5 else ""
            if not fields[1].startswith("rw") or fields[1][3] != "p" or name not in ("", "[heap]"):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            if end - start >= HUGE_PAGE:
                ranges.append((start, end))
    return ranges
