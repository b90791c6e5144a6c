"""tools: the agent's only way into the corpus (DESIGN.md "Tools" and "Sandboxed workers").

    from parquet_agent.tools import Tools, ToolResult, ToolError, ERROR_KINDS

Modules: `specs` (typed signatures -> schemas and validation), `gate` (exactly one SELECT),
`sandbox` (process hardening, locked DuckDB connection, watchdog), `worker` (one call in a child),
`server` (the fork server), `pool` (parent side), `cache` (shared result cache), `render`
(bounded output), `wire` (the frame codec), `shared_sandbox` (the processes, cache and gate every
view shares), `facade` (`Tools`), `commands` (the `parquet-agent tool` CLI).

Owns everything between a tool call and its `ToolResult`. May import: the shared layer,
`corpus` and `models` (the `ToolSpec` record). Never the agent, the store or anything above.
"""

from parquet_agent.tools.facade import ScopedTools, Tools
from parquet_agent.tools.result import ERROR_KINDS, Timings, ToolError, ToolResult

__all__ = ["ERROR_KINDS", "ScopedTools", "Timings", "ToolError", "ToolResult", "Tools"]
