"""The shared result cache of one `Tools`: identical successful calls are answered once.

Bounded by entries and by bytes (the JSON text of the outputs): 40 distinct 12 MB answers must
not grow the notebook by half a gigabyte. The oldest entries go first; an output larger than a
quarter of the byte budget is not stored at all.

Keyed on (tool, canonical arguments with defaults filled in, snapshot id, tool version, and the
question's scope when there is one), so a
changed corpus or a changed tool never serves an old answer. Errors are never stored. Held in
memory by its `Tools` instance (no module-level state) and shared by every thread using it;
`enabled=False` turns it off for uncached timing comparisons. Counters say how it was used.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CachedOutput:
    output: str  # the output's JSON text
    truncated: dict | None

    @property
    def size(self) -> int:
        return len(self.output.encode("utf-8", "surrogatepass")) + len(json.dumps(self.truncated))


def cache_key(tool: str, arguments: dict, snapshot_id: str, tool_version: str,
              scope: list[str] | None = None) -> str:
    """The key of one call; `scope` (sorted file_stems) keeps scoped answers apart."""
    parts: list[Any] = [tool, arguments, snapshot_id, tool_version]
    if scope is not None:
        parts.append(scope)
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(canonical.encode("ascii")).hexdigest()


class ResultCache:
    def __init__(self, enabled: bool = True, max_entries: int = 10_000, max_bytes: int = 64 << 20):
        self.enabled = enabled
        self._max = max_entries
        self._max_bytes = max_bytes
        self._bytes = 0
        self._data: dict[str, CachedOutput] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.stores = 0

    def get(self, key: str) -> CachedOutput | None:
        if not self.enabled:
            return None
        with self._lock:
            found = self._data.get(key)
            if found is None:
                self.misses += 1
            else:
                self.hits += 1
            return found

    def put(self, key: str, value: CachedOutput) -> None:
        if not self.enabled or value.size > self._max_bytes // 4:
            return
        with self._lock:
            old = self._data.pop(key, None)
            self._bytes -= old.size if old else 0
            while self._data and (len(self._data) >= self._max or self._bytes + value.size > self._max_bytes):
                self._bytes -= self._data.pop(next(iter(self._data))).size  # oldest first
            self._data[key] = value
            self._bytes += value.size
            self.stores += 1

    def stats(self) -> dict[str, int | bool]:
        with self._lock:
            return {"enabled": self.enabled, "entries": len(self._data), "bytes": self._bytes,
                    "max_bytes": self._max_bytes, "hits": self.hits,
                    "misses": self.misses, "stores": self.stores}
