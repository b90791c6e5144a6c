"""`DirectorySink`: the simplest durable `RawSink` — one file per raw record under a folder.

Contract: `write(name, data)` makes `data` durable (temp file, fsync, atomic rename, fsync of
the directory) before it returns the path relative to `root`. A name is a relative,
`/`-separated path; anything outside `[A-Za-z0-9._+=@-]` in a segment becomes `_`, and `..`
cannot escape the folder. Files are never overwritten: writing the same bytes under an existing
name returns that name; different bytes get a `~2`, `~3`, ... suffix, so a resumed run that reuses
a label keeps both records. Safe to share between threads.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

from parquet_agent.files import atomic_write_bytes

_UNSAFE = re.compile(r"[^A-Za-z0-9._+=@-]")


def safe_name(name: str) -> str:
    """Return `name` as a relative path whose segments are safe file names."""
    parts = []
    for part in name.replace("\\", "/").split("/"):
        part = _UNSAFE.sub("_", part).strip()
        if part in ("", ".", ".."):
            continue
        parts.append(part)
    if not parts:
        raise ValueError(f"raw record name {name!r} has no usable path segment")
    return "/".join(parts)


class DirectorySink:
    """Write raw records as files under `root/prefix/`; returns paths relative to `root`."""

    def __init__(self, root: Path, prefix: str = "raw"):
        self.root = Path(root)
        self.prefix = safe_name(prefix) if prefix else ""
        # Only name allocation is serialised; concurrent writers fsync in parallel.
        self._lock = threading.Lock()
        self._pending: set[str] = set()

    def write(self, name: str, data: bytes) -> str:
        rel = safe_name(name)
        if self.prefix:
            rel = f"{self.prefix}/{rel}"
        with self._lock:
            rel, exists = self._allocate(rel, data)
            if exists:  # identical bytes already stored under this name
                return rel
            self._pending.add(rel)
        try:
            target = self.root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(target, data)
        finally:
            with self._lock:
                self._pending.discard(rel)
        return rel

    def _allocate(self, rel: str, data: bytes) -> tuple[str, bool]:
        last = rel.rsplit("/", 1)[-1]
        stem, dot, ext = rel.rpartition(".") if "." in last else (rel, "", "")
        candidate, n = rel, 1
        while candidate in self._pending or (self.root / candidate).exists():
            if candidate not in self._pending and (self.root / candidate).read_bytes() == data:
                return candidate, True
            n += 1
            candidate = f"{stem}~{n}{dot}{ext}" if dot else f"{rel}~{n}"
        return candidate, False
