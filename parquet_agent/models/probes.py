"""Can this model call our tools? One small probe that needs the tools to be in the prompt.

    probe = tool_probe(model, sink, label="preflight/local-tools")
    probe.problem   # None, or what is wrong and what to change
    probe.facts     # {"called": ..., "prompt_tokens_with_tools": ..., ...} for preflight.json

The agent offers its tools with `tool_choice: auto`, so the probe does the same: the prompt
asks for a call of `echo_number` with n = 7, and nothing forces it. A forced call proves little:
llama.cpp's server satisfies a named `tool_choice` with a grammar even when its chat template
leaves the tool list out of the prompt, and then the model never calls a tool on its own. When
the call does not come, the same request is sent once more without the tool, and the prompt
token counts the server echoes tell the two failures apart: the prompt did not grow by the
tool's definition (its chat format does not show tools: say which format to use instead), or
it did and the model still did not call it (a model that will not call tools).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from parquet_agent.errors import ModelCallError
from parquet_agent.models.protocol import (
    Attempt,
    GenerationSettings,
    Model,
    ModelRequest,
    RawSink,
    SystemMessage,
    ToolSpec,
    UserMessage,
)

TOOL_PROMPT = ("Call the tool echo_number with n = 7. Reply with the tool call only, no text.")
ECHO_TOOL = ToolSpec("echo_number", "Echo a number back.", {
    "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
    "additionalProperties": False})
# The echo_number definition is ~40 tokens in any template that shows it; a prompt that grew
# by fewer did not get it.
TOOLS_MIN_TOKENS = 10
CHAT_FORMAT_ADVICE = (
    "Start llama.cpp's server with a chat format that puts the tools in the prompt: "
    "llama-cpp-python `--chat_format chatml-function-calling`, llama-server `--jinja` with a "
    "template that renders tools (vLLM: `--enable-auto-tool-choice` and a tool parser); "
    "otherwise run this model with the closed-book strategy (`none`) only.")


@dataclass(frozen=True)
class ToolProbe:
    attempts: tuple[Attempt, ...]
    problem: str | None  # None: the model called the tool unforced
    facts: dict[str, Any] = field(default_factory=dict)


def _request(label: str, tools: tuple[ToolSpec, ...]) -> ModelRequest:
    return ModelRequest(
        messages=(SystemMessage("You are a health check."), UserMessage(TOOL_PROMPT)),
        tools=tools, settings=GenerationSettings(max_output_tokens=64), purpose="health",
        label=label)


def tool_probe(model: Model, sink: RawSink, label: str) -> ToolProbe:
    """Ask for an unforced call of `echo_number` (see the module docstring)."""
    try:
        result = model.complete(_request(label, (ECHO_TOOL,)), sink)
    except ModelCallError as exc:
        return ToolProbe(exc.attempts, f"the tool probe failed: {exc} The model or server "
                         "cannot be used with a tool strategy as configured.",
                         {"called": False})
    calls = [c for c in result.reply.tool_calls if c.name == ECHO_TOOL.name]
    with_tools = result.reply.usage.input_tokens
    if calls and not calls[0].arguments_error:
        return ToolProbe(result.attempts, None, {
            "called": True, "arguments": calls[0].arguments,
            "prompt_tokens_with_tools": with_tools})
    said = (result.reply.text or "")[:120]
    what = (f"asked to call {ECHO_TOOL.name} (tool_choice auto, as the agent asks), the model "
            f"called {[c.name for c in result.reply.tool_calls] or 'no tool'} and said {said!r}")
    attempts = result.attempts
    without = None
    try:
        bare = model.complete(_request(f"{label}-no-tools", ()), sink)
        attempts += bare.attempts
        without = bare.reply.usage.input_tokens
    except ModelCallError as exc:
        attempts += exc.attempts
    facts = {"called": False, "prompt_tokens_with_tools": with_tools,
             "prompt_tokens_without_tools": without}
    if with_tools is not None and without is not None:
        grew = with_tools - without
        facts["tools_in_prompt"] = grew >= TOOLS_MIN_TOKENS
        if grew < TOOLS_MIN_TOKENS:
            return ToolProbe(attempts, (
                f"{what}. The server left the tools out of the prompt ({with_tools} prompt "
                f"tokens with the tool, {without} without): its chat format (for llama.cpp, the "
                "model's own template, used when no --chat_format is given) does not show tools "
                f"to the model, so it cannot call the data tools. {CHAT_FORMAT_ADVICE}"), facts)
        return ToolProbe(attempts, (
            f"{what}. The tools reached the model (the prompt grew by {grew} tokens with "
            "them), but it does not call them when asked: it will not call the data tools. Use "
            "a model that calls tools, or run this one with the closed-book strategy (`none`) "
            "only."), facts)
    return ToolProbe(attempts, (
        f"{what}: it will not call the data tools (the server reports no prompt token counts, "
        f"so whether the tools reached the prompt is unknown). {CHAT_FORMAT_ADVICE}"), facts)
