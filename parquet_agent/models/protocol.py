"""The one model protocol and the records that cross it.

A model is anything with `complete(request, sink) -> ModelResult`. Every provider adapter, the
scripted test double and the offline baseline implement it. The conversation is provider-neutral;
adapters translate it to their wire format and back. Each HTTP attempt an adapter makes is an
`Attempt` whose raw request and response bytes were handed to the `RawSink` before anything
interpreted them. When every attempt fails, `complete` raises `ModelCallError` carrying the
attempts, so nothing that was recorded is lost.

All records are frozen; timestamps are UTC ISO-8601 strings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Literal, Protocol, Union

# -- tools as the model sees them -----------------------------------------------------------


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to a model: `parameters` is a JSON Schema object."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """A tool call a model emitted. `raw_arguments` is the exact argument text on the wire,
    when the wire format carries text (OpenAI); `arguments` is its parsed form. Argument text
    that does not parse leaves `arguments` empty and says why in `arguments_error`: the tools
    then answer with a validation error the model can read, never a failed call.

    `id` is unique within its reply (resume keys saved tool results by turn and call id);
    `wire_id` is what the provider sent when that differs (Gemini's OpenAI endpoint sends `""`
    for every call) and is what goes back on the wire."""

    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str | None = None
    wire_id: str | None = None
    arguments_error: str | None = None

    @property
    def sent_id(self) -> str:
        """The id as the provider knows it."""
        return self.id if self.wire_id is None else self.wire_id


# -- the conversation ---------------------------------------------------------------------


@dataclass(frozen=True)
class SystemMessage:
    text: str
    role: Literal["system"] = "system"


@dataclass(frozen=True)
class UserMessage:
    text: str
    role: Literal["user"] = "user"


@dataclass(frozen=True)
class AssistantMessage:
    """A model turn. `provider_data` keeps wire details that must be replayed unchanged
    (e.g. Gemini thought signatures), keyed by provider name."""

    text: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    provider_data: dict[str, Any] | None = None
    role: Literal["assistant"] = "assistant"


@dataclass(frozen=True)
class ToolMessage:
    """The result of one tool call, exactly as the model receives it."""

    call_id: str
    name: str
    content: str
    role: Literal["tool"] = "tool"


Message = Union[SystemMessage, UserMessage, AssistantMessage, ToolMessage]


@dataclass(frozen=True)
class GenerationSettings:
    """What the caller asks for; adapters record what the model actually supports."""

    temperature: float | None = None
    reasoning_effort: str | None = None
    max_output_tokens: int = 4096
    # "required": a tool must be called (one offered tool: that one); used by preflight
    tool_choice: Literal["auto", "none", "required"] = "auto"


# How a structured reply is asked for (`ResponseSchema.mode`), strictest first. Not every
# server takes every one: the judge negotiates (`judge.negotiate`) and records the one it uses.
STRUCTURED_MODES = ("json_schema", "json_object", "tool", "text")
StructuredMode = Literal["json_schema", "json_object", "tool", "text"]


@dataclass(frozen=True)
class ResponseSchema:
    """Ask for the reply as one JSON object matching `schema` (a JSON Schema object whose every
    property is required and which allows no others: what OpenAI's strict mode accepts).

    `mode` says how (each adapter lists the ones it can send in `structured_modes`):
    `json_schema` is the provider's own strict way (OpenAI `response_format: json_schema`,
    Gemini `responseJsonSchema`, Anthropic a forced call of a tool named `name`, whose
    arguments are then the object); `json_object` is OpenAI's JSON mode carrying the schema
    (`response_format: {type: json_object, schema}`, which llama.cpp's server turns into a
    grammar; Gemini: `responseMimeType` alone); `tool` a forced call of a tool named `name`;
    `text` asks for nothing on the wire (the object is read from the reply's text). A model
    entry with `structured_output = false` sends none of these and says so in the attempt's
    notes; offline models ignore it."""

    name: str
    schema: dict[str, Any]
    mode: StructuredMode = "json_schema"


@dataclass(frozen=True)
class ModelRequest:
    """One logical model call. `label` names it in raw files and journals
    (e.g. `Q001__flash__sql/turn-03`); `purpose` separates answer, judge and health costs.
    `response_schema`: the reply should be a JSON object of that shape (the judge)."""

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    settings: GenerationSettings = field(default_factory=GenerationSettings)
    purpose: Literal["answer", "judge", "health"] = "answer"
    label: str = "call"
    response_schema: ResponseSchema | None = None


# -- what comes back ----------------------------------------------------------------------


@dataclass(frozen=True)
class Usage:
    """Token counts as the provider reports them, normalised: `input_tokens` includes cache
    reads (`cached_tokens`) and cache writes (`cache_write_tokens`), `output_tokens` includes
    reasoning (hidden thinking a provider counts only in its total is added to both).
    `None` means the provider did not say."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    cache_write_tokens: int | None = None


UNVERIFIED = "unverified"  # a reply that does not name who served it


@dataclass(frozen=True)
class Reply:
    """A normalised model reply. `message` is what to append to the conversation."""

    text: str | None
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str | None
    response_id: str | None
    model: str | None  # actual model, as the reply names it
    provider: str  # actual provider, or UNVERIFIED
    usage: Usage
    message: AssistantMessage
    # The provider refused to answer (a safety filter, a blocked prompt): its reason and message.
    # A block is an answer, recorded as the case's outcome; it is never retried.
    block_reason: str | None = None
    block_message: str | None = None

    @property
    def truncated(self) -> bool:
        """The reply stopped at the output-token limit: its text is cut off."""
        return self.finish_reason in TRUNCATED


# Finish reasons meaning "cut off at the output limit", as each wire format spells it.
TRUNCATED = frozenset({"length", "max_tokens", "MAX_TOKENS"})


@dataclass(frozen=True)
class Cost:
    """Cost of one attempt in USD. `source` is `gateway` (reported in the reply), `declared`
    (the model entry's own `price`), `price_table` (computed; `price_table` names the table
    version) or `unknown` (usd is None)."""

    usd: float | None
    source: Literal["gateway", "declared", "price_table", "unknown"]
    price_table: str | None = None
    computed_usd: float | None = None  # when the gateway reported one, what the table says
    note: str | None = None


@dataclass(frozen=True)
class Attempt:
    """One HTTP attempt (or one offline call) with everything the audit needs."""

    label: str
    number: int  # 1-based within the logical call
    purpose: str
    requested_model: str
    requested_provider: str
    actual_model: str | None
    actual_provider: str | None  # None when there was no usable reply
    temperature: float | str | None  # "not supported" where the model does not take one
    reasoning_effort: str | None
    started_at: str
    ended_at: str
    queue_ms: float
    duration_ms: float
    http_status: int | None
    outcome: Literal["ok", "retry", "failed"]
    error: str | None
    response_id: str | None
    finish_reason: str | None
    usage: Usage
    cost: Cost
    request_path: str | None  # raw files, relative to the run folder
    response_path: str | None
    # Added by the models piece: what else the audit should see about this attempt (provider
    # pin checks, settings not sent because the model does not take them, ...).
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ModelResult:
    reply: Reply
    attempts: tuple[Attempt, ...]


def total_cost(attempts: Iterable[Attempt]) -> float | None:
    """The USD cost of these attempts; None as soon as one cost is unknown (never counted 0)."""
    total = 0.0
    for attempt in attempts:
        if attempt.cost.usd is None:
            return None
        total += attempt.cost.usd
    return total


# -- the seams ------------------------------------------------------------------------------


class RawSink(Protocol):
    """Where raw wire bytes go. `write` must have made the bytes durable before it returns,
    and returns the path relative to the run folder."""

    def write(self, name: str, data: bytes) -> str: ...


class Model(Protocol):
    """The one model protocol."""

    name: str  # slug used in case ids
    provider: str  # configured provider: openai | anthropic | google | scripted | baseline
    model: str  # requested model id

    def complete(self, request: ModelRequest, sink: RawSink) -> ModelResult: ...
