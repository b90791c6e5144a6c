"""An honest model of Anthropic's prompt cache, for the fake Anthropic server.

`PromptCache(min_tokens=1024).usage(request_json)` returns the `usage` a real Messages API
would bill for the request, given every request this cache has seen before:

- The prompt is the sequence tools → system → messages, cut into blocks (one per tool, system
  text block, content block; a string content is one block). A block's size is
  `max(1, len(canonical JSON) // 4)` tokens (`cache_control` itself excluded; a plain string
  counts as the text block it stands for).
- A block carrying `cache_control` is a breakpoint. The prefix up to a breakpoint is written
  to the cache when it is at least `min_tokens` long and was not cached already: those tokens
  are `cache_creation_input_tokens` (billed at the write rate).
- A read happens only of a prefix that an earlier request **asked to cache** (a breakpoint then)
  and that is byte-identical now, at a block boundary at or before this request's last
  breakpoint: the longest such prefix is `cache_read_input_tokens`. Nothing is read of a prefix
  that was never marked, and nothing at all without breakpoints.
- `input_tokens` is the rest (Anthropic's `input_tokens` excludes cache reads and writes).

Time-to-live and the 20-block lookback are not modelled (a run is minutes long; the agent's
breakpoints move by one turn at a time).
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any


class PromptCache:
    def __init__(self, min_tokens: int = 1024):
        self.min_tokens = min_tokens
        self._written: set[str] = set()  # prefix digests
        self._lock = threading.Lock()

    def usage(self, request: dict[str, Any]) -> dict[str, int]:
        blocks = _blocks(request)
        digests, sizes, marks = [], [], []
        h = hashlib.sha256()
        total = 0
        for block, marked in blocks:
            text = json.dumps(block, sort_keys=True, ensure_ascii=False)
            h.update(text.encode("utf-8") + b"\x00")
            total += max(1, len(text) // 4)
            digests.append(h.copy().hexdigest())
            sizes.append(total)
            marks.append(marked)
        last_mark = max((i for i, m in enumerate(marks) if m), default=-1)
        with self._lock:
            read_end = max((i for i in range(last_mark + 1) if digests[i] in self._written),
                           default=-1)
            read = sizes[read_end] if read_end >= 0 else 0
            written_to = read
            for i in range(read_end + 1, last_mark + 1):
                if marks[i] and sizes[i] >= self.min_tokens:
                    self._written.add(digests[i])
                    written_to = sizes[i]
        return {"input_tokens": total - written_to, "cache_read_input_tokens": read,
                "cache_creation_input_tokens": written_to - read}


def _blocks(request: dict[str, Any]) -> list[tuple[Any, bool]]:
    """(block without cache_control, marked) in prompt order: tools, system, messages."""
    out: list[tuple[Any, bool]] = []

    def add(block: Any, where: str) -> None:
        if isinstance(block, str):  # a plain string is one text block, billed the same
            block = {"type": "text", "text": block}
        if isinstance(block, dict):
            marked = "cache_control" in block
            block = {k: v for k, v in block.items() if k != "cache_control"}
        else:
            marked = False
        out.append(({"at": where, "block": block}, marked))

    for tool in request.get("tools") or ():
        add(tool, "tool")
    system = request.get("system")
    for block in ([system] if isinstance(system, str) else system or ()):
        add(block, "system")
    for i, message in enumerate(request.get("messages") or ()):
        content = message.get("content")
        for block in ([content] if isinstance(content, str) else content or ()):
            add(block, f"{message.get('role')}#{i}")
    return out
