"""tools: the agent's only way into the corpus (DESIGN.md "Tools" and "Sandboxed workers").

    from parquet_agent.tools import Tools, ToolResult, ToolError, ERROR_KINDS

Modules: `specs` (typed signatures -> schemas and validation), `gate` (exactly one SELECT),
`sandbox` (process hardening, locked DuckDB connection, watchdog), `worker` (one call in a child),
`server` (the fork server), `pool` (parent side), `cache` (shared result cache), `render`
(bounded output), `wire` (the frame codec), `shared_sandbox` (the processes, cache and gate every
view shares), `facade` (`Tools`), `commands` (the `parquet-agent tool` CLI).

Owns everything between a tool call and its `ToolResult`. May import: the shared layer,
`corpus` and `models` (the `ToolSpec` record). Never the agent, the store or anything above.

The names are imported on first use: the journal's records (`parquet_agent.transcript`) need
`tools.result` only, and reading a run (exports, explorer) must not load DuckDB.
"""

from __future__ import annotations

import importlib
from typing import Any

_PUBLIC = {
    "ERROR_KINDS": "parquet_agent.tools.result",
    "ScopedTools": "parquet_agent.tools.facade",
    "Timings": "parquet_agent.tools.result",
    "ToolError": "parquet_agent.tools.result",
    "ToolResult": "parquet_agent.tools.result",
    "Tools": "parquet_agent.tools.facade",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'parquet_agent.tools' has no attribute {name!r}")
    return getattr(importlib.import_module(_PUBLIC[name]), name)
