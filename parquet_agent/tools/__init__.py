"""tools: the agent's only way into the corpus (DESIGN.md "Tools" and "Sandboxed workers").

    from parquet_agent.tools import Tools, ToolResult, ToolError, ERROR_KINDS

Modules: `specs` (typed signatures -> schemas and validation), `gate` (exactly one SELECT),
`sandbox` (process hardening, locked DuckDB connection, watchdog), `worker` (one call in a child),
`server` (the fork server), `pool` (parent side), `cache` (shared result cache), `render`
(bounded output), `facade` (`Tools`), `commands` (the `parquet-agent tool` CLI).
"""

from parquet_agent.tools.facade import ScopedTools, Tools
from parquet_agent.tools.result import ERROR_KINDS, Timings, ToolError, ToolResult

__all__ = ["ERROR_KINDS", "ScopedTools", "Timings", "ToolError", "ToolResult", "Tools"]
