"""A multi-turn agent-shaped conversation driven through a model, for measuring prompt caching.

`run_cached_case(model, sink, turns=12)` sends what the agent loop sends on each turn of a case
whose every turn calls one tool: the real system prompt and tool definitions of the `sql+stream`
strategy, the question, then per turn the model's tool call and a tool result of realistic size
(a ~6 KB table excerpt). It returns the attempts (one per turn). Used by
`bench/bench_prompt_caching.py` and the caching tests; it is no part of a run. Against a fake
server, script one tool-call reply per turn; a reply without tool calls ends the case early.
"""

from __future__ import annotations

from parquet_agent.models.protocol import (
    Attempt,
    Model,
    ModelRequest,
    RawSink,
    SystemMessage,
    ToolMessage,
    ToolSpec,
    UserMessage,
)

QUESTION = "What was Northwind Traders' total revenue in fiscal 2023, and how did it change?"


def tool_result(turn: int) -> str:
    """A deterministic table excerpt of ~6 KB, different per turn."""
    rows = [f"| {turn:02d}-{i:03d} | Northwind segment {i % 7} | {1000 + 37 * i + turn} | "
            f"{(i * 7919 + turn) % 100000} | note {i * turn % 13} |" for i in range(90)]
    return "| id | segment | revenue | units | note |\n|---|---|---|---|---|\n" + "\n".join(rows)


def run_cached_case(model: Model, sink: RawSink, *, system: str, tools: tuple[ToolSpec, ...],
                    turns: int = 12, label: str = "cache-case") -> list[Attempt]:
    messages: list = [SystemMessage(system), UserMessage(QUESTION)]
    attempts: list[Attempt] = []
    for turn in range(1, turns + 1):
        request = ModelRequest(tuple(messages), tools, label=f"{label}/turn-{turn:02d}")
        result = model.complete(request, sink)
        attempts.extend(result.attempts)
        if not result.reply.tool_calls:
            break
        messages.append(result.reply.message)
        messages.extend(ToolMessage(c.id, c.name, tool_result(turn))
                        for c in result.reply.tool_calls)
    return attempts
