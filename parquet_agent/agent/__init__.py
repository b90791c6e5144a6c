"""The agent: one question answered by a model with tools, turn by turn, inside its limits.

- `agent.loop`: `Agent` (the tool-calling loop, its prompts, truncation and final-answer turns);
- `agent.limits`: `AgentLimits` (rounds, tool calls, tokens, seconds of one case).

May import: shared, corpus, models, tools, transcript. Public names are imported on first use
(the experiment config reads the limits without loading the models and tools).
"""

from parquet_agent.lazy import lazy_names

__all__ = ["Agent", "AgentLimits", "AgentOutcome"]
__getattr__, __dir__ = lazy_names(__name__, {
    "Agent": "parquet_agent.agent.loop", "AgentOutcome": "parquet_agent.agent.loop",
    "AgentLimits": "parquet_agent.agent.limits"})
