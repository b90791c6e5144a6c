"""The shared bottom layer: durable file primitives, hashes, canonical JSON, the one clock format.

Every other piece (corpus, models, store, report, ...) imports these downward; this module
imports nothing of ours but `errors`.

- `utc_now()`: the one timestamp format every record uses (UTC, microseconds, `Z`).
- `canonical_json(value)` / `tagged_hash(data)`: the bytes hashed everywhere and their `b2:` hash;
  `sha256_file(path)`: `sha256:<hex>` of a file.

- `atomic_write_bytes(path, data)`: temp file in the same folder, fsync, `os.replace`, fsync of
  the folder; a reader sees the old file or the whole new one, never a part.
- `DurableAppender(path)`: one `os.write` of a whole record on an `O_APPEND` descriptor, then
  `fdatasync`, so a record is on disk before `append` returns. A process killed mid-append
  leaves at most one torn record at the end of the file, which readers detect and skip.
- `WriterLock(run_dir)`: an exclusive `flock` on `<run>/.lock`, so two processes never append
  to the same run at once. The kernel drops it when the holder dies, even by SIGKILL.
- `claim_folder(folder, owner, clear)`: a work folder that is new, empty or `owner`'s own from
  an earlier call (only the entries named in `clear` are then removed); any other non-empty
  folder is refused untouched, so nothing deletes a folder it did not make.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import threading
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from parquet_agent.errors import RunError, UsageError


def utc_now() -> str:
    """Now as a UTC ISO-8601 string with microseconds and a `Z`."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def canonical_json(value: Any) -> bytes:
    """The canonical JSON bytes hashed everywhere: sorted keys, no spaces, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def tagged_hash(data: bytes) -> str:
    """`b2:` + BLAKE2b-256 hex of `data`."""
    return "b2:" + hashlib.blake2b(data, digest_size=32).hexdigest()


def sha256_file(path: Path) -> str:
    """`sha256:<hex>` of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return "sha256:" + h.hexdigest()


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` atomically and durably."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


class DurableAppender:
    """Append whole records to one file, each durable before `append` returns. Thread-safe."""

    def __init__(self, path: Path):
        self.path = Path(path)
        existed = self.path.exists()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._lock = threading.Lock()
        if not existed:  # the new name must survive a crash too
            fsync_dir(self.path.parent)

    def append(self, record: bytes) -> int:
        """Write `record`; return the file offset where it starts."""
        with self._lock:
            start = os.lseek(self._fd, 0, os.SEEK_END)
            view = memoryview(record)
            while view:  # os.write may write less than asked (signals, huge records)
                written = os.write(self._fd, view)
                view = view[written:]
            os.fdatasync(self._fd)
            return start

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


def truncate_torn_tail(path: Path, good_length: int) -> bytes:
    """Cut `path` back to `good_length` bytes and return the bytes removed (a torn record)."""
    with open(path, "r+b") as f:
        f.seek(good_length)
        torn = f.read()
        f.truncate(good_length)
        f.flush()
        os.fsync(f.fileno())
    return torn


class WriterLock:
    """Exclusive writer lock on a run folder; raises RunError when another process holds it."""

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / ".lock"
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            self._fd = -1
            raise RunError(f"{run_dir} is being written by another process (lock {self.path}); "
                           "wait for it to finish or stop it before resuming") from None
        os.ftruncate(self._fd, 0)
        os.write(self._fd, f"{os.getpid()}\n".encode())

    def release(self) -> None:
        if self._fd >= 0:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1


def ignore_os_errors(action) -> None:
    """Run a clean-up step whose own failure (the disk is still full) must not hide the error
    that stopped the work."""
    try:
        action()
    except OSError:
        pass


OWNER_MARK = ".parquet-agent-owner.json"


def claim_folder(folder: Path, owner: str, clear: Sequence[str] = ()) -> Path:
    """Make `folder` the work folder of `owner` (e.g. "notebooks/audit_dataset.ipynb") and
    return it: created when missing, taken when empty (a mark naming `owner` is written in
    it), reused when its mark names `owner`; then the entries named in `clear` (and SQLite's
    `-wal`, `-shm` and `-journal` files beside them) are removed, and nothing else.
    A non-empty folder without that mark raises UsageError and is left as it was."""
    folder = Path(folder)
    mark = folder / OWNER_MARK
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{folder} is not a folder")
    entries = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
    if entries and _owner(mark) != owner:
        shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
        raise UsageError(f"{folder} is not empty ({shown}) and was not made by {owner}: pass "
                         "a new or empty folder (nothing there was changed)")
    folder.mkdir(parents=True, exist_ok=True)
    for name in entries:
        if any(name in (c, c + "-wal", c + "-shm", c + "-journal") for c in clear):
            path = folder / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
    mark.write_text(json.dumps({"owner": owner}) + "\n", encoding="utf-8")
    return folder


def _owner(mark: Path) -> str | None:
    try:
        data = json.loads(mark.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data.get("owner") if isinstance(data, dict) else None
