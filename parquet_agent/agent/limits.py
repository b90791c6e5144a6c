"""`AgentLimits`: one case's limits, and the one home of their defaults.

The config's `[limits]` table (`experiment_config.Limits`) takes its `max_tool_calls` and
`max_rounds` defaults from here (the contract's 12 and 16) and hands the agent its part with
`Limits.agent_limits()`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AgentLimits:
    max_tool_calls: int = 12  # tool calls that count against the budget, per case
    max_rounds: int = 16  # model turns per case
    max_tokens: int | None = None  # input + output over the whole case
    max_cost_usd: float | None = None
