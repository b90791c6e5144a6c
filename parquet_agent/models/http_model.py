"""The attempt loop shared by the provider adapters (OpenAI, Anthropic, Gemini).

`HttpModel.complete(request, sink)` runs up to `retry.max_attempts` attempts. Each attempt is
one SDK call (SDK retries are off) inside `RecordingTransport.exchange(sink,
"<label>.attempt-NN")`, so its request and response are on disk before the SDK parses them.
A subclass implements `_call(request, sent)`: translate the neutral conversation to its wire
format and call its SDK; and `_parse(response) -> CallOutcome`: normalise the reply. Between the
two, `reply_check.body_problem` rejects a 2xx body that is no reply of the wire format (HTML
from a wrong `base_url`), whatever the SDK made of it. Failures are classified by
`retry.classify`; retryable ones back off and try again, others fail fast. A failure whose
response body is byte-identical to the previous attempt's is deterministic (a server's
validation error, a page that will not change) and is not retried again. Every attempt becomes
a frozen `Attempt`; when none succeeds, `ModelCallError` carries them all and its `kind`
(e.g. `context_overflow`).

Cost: a model entry's declared `price` (e.g. `"free"` for a local model) wins over the price
table, which would otherwise match whatever name a local server echoes back.

Provider identity: when the client talks to the provider's own endpoint (no `base_url`), the
endpoint names the provider; behind a `base_url` (gateway, local server, fake) only the reply
can, and a reply that names none is `unverified`.
"""

from __future__ import annotations

import json
import random
import re
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Callable, Literal

import httpx2
import pydantic

from parquet_agent.errors import ModelCallError
from parquet_agent.files import utc_now
from parquet_agent.models.prices import (
    Price,
    PriceTable,
    UnknownCostWarning,
    declared_cost,
    not_the_vendor,
)
from parquet_agent.models.reply_check import body_problem
from parquet_agent.models.protocol import (
    UNVERIFIED,
    ToolCall,
    Attempt,
    Cost,
    GenerationSettings,
    ModelRequest,
    ModelResult,
    RawSink,
    Reply,
    ResponseSchema,
    Usage,
)
from parquet_agent.models.retry import (
    Failure,
    MalformedReplyError,
    PinMismatchError,
    RetryPolicy,
    classify,
)
from parquet_agent.models.transport import RecordingTransport

NOT_SUPPORTED = "not supported"


@dataclass(frozen=True)
class CallOutcome:
    """What one successful SDK call gave: the reply, a gateway-reported cost and notes.
    `fatal` (e.g. a provider-pin mismatch) fails the attempt without a retry."""

    reply: Reply
    gateway_usd: float | None = None
    notes: tuple[str, ...] = ()
    fatal: str | None = None


@dataclass(frozen=True)
class SentSettings:
    """Generation settings as sent: the value, or NOT_SUPPORTED when the model takes none."""

    temperature: float | str | None
    reasoning_effort: str | None
    max_output_tokens: int
    notes: tuple[str, ...] = field(default_factory=tuple)


class HttpModel:
    """Base of the SDK adapters; see the module docstring."""

    provider = "?"
    reply_keys: tuple[str, ...] = ()  # top-level keys of a reply of this wire format
    # how this wire format can ask for a structured reply (ResponseSchema.mode), strictest first
    structured_modes: tuple[str, ...] = ("json_schema", "text")
    _sdk_errors: tuple[type[BaseException], ...] = ()

    def __init__(
        self,
        *,
        name: str,
        model: str,
        transport: RecordingTransport,
        official_endpoint: bool,
        defaults: GenerationSettings | None = None,
        retry: RetryPolicy | None = None,
        prices: PriceTable | None = None,
        sleep: Callable[[float], None] = time.sleep,
        seed: int = 0,
        price: Price | None = None,
        structured_output: bool = True,
        table_priced: bool = True,
        base_url: str | None = None,
    ):
        self.name = name
        self.model = model
        self.transport = transport
        self.official_endpoint = official_endpoint
        self.defaults = defaults or GenerationSettings()
        self.retry = retry or RetryPolicy()
        self.prices = prices or PriceTable.load()
        self.price = price  # declared in the model entry: wins over the table
        # the price table applies (the vendor's endpoint, or `price = "list"`): see
        # prices.table_applies; otherwise an undeclared price is unknown
        self.table_priced = table_priced
        self.base_url = base_url
        # ask for a request's response_schema on the wire (false: a server that rejects it)
        self.structured_output = structured_output
        self._unknown_cost = UnknownCostWarning(name)
        self._sleep = sleep
        self._rng = random.Random(seed)

    @property
    def sdk_errors(self) -> tuple[type[BaseException], ...]:
        """The SDK's own exception types (mapped to our errors at this seam)."""
        return self._sdk_errors

    # -- for subclasses ------------------------------------------------------------------

    def _call(self, request: ModelRequest, sent: SentSettings):
        raise NotImplementedError

    def _parse(self, response, raw: dict) -> CallOutcome:
        """Normalise the SDK's `response`; `raw` is the same reply as parsed JSON, for the
        fields an SDK drops."""
        raise NotImplementedError

    def _notes(self, request: ModelRequest) -> tuple[str, ...]:
        """What else every attempt of `request` should record (adapters add their own)."""
        return ()

    def wire_schema(self, request: ModelRequest) -> ResponseSchema | None:
        """The request's response schema if it goes on the wire (not `text` mode), else None.
        A mode this adapter cannot send is a ValueError: the caller negotiated it wrongly."""
        schema = request.response_schema
        if schema is None or not self.structured_output or schema.mode == "text":
            return None
        if schema.mode not in self.structured_modes:
            raise ValueError(f"{self.provider} cannot ask for structured output as "
                             f"{schema.mode!r}; it offers {', '.join(self.structured_modes)}")
        return schema

    def _schema_notes(self, request: ModelRequest) -> tuple[str, ...]:
        schema = request.response_schema
        if schema is None:
            return ()
        if not self.structured_output:
            return (f"structured output {schema.name!r} not asked for (structured_output = "
                    "false): the reply is parsed from its text",)
        if schema.mode == "text":
            return (f"structured output {schema.name!r} asked for in the prompt only (mode "
                    "text): the reply is parsed from its text",)
        return (f"structured output {schema.name!r} asked for as {schema.mode}",)

    def _sent_settings(self, settings: GenerationSettings) -> SentSettings:
        raise NotImplementedError

    def _table_settings(self, settings: GenerationSettings) -> SentSettings:
        """Temperature and reasoning effort as the price table says this model takes them
        (`false` there: not sent, recorded as "not supported"); adapters add their own limits."""
        price = self.price or self.prices.lookup(self.model)
        temperature: float | str | None = settings.temperature
        effort: str | None = settings.reasoning_effort
        notes = []
        if temperature is not None and price is not None and not price.temperature:
            temperature = NOT_SUPPORTED
            notes.append(f"temperature {settings.temperature} not sent: {self.model} takes none")
        if effort is not None and price is not None and not price.reasoning_effort:
            effort = NOT_SUPPORTED
            notes.append(f"reasoning_effort {settings.reasoning_effort!r} not sent: {self.model} "
                         "takes none")
        return SentSettings(temperature, effort, settings.max_output_tokens, tuple(notes))

    def _provider_identity(self, named: str | None) -> str:
        if named:
            return named
        if self.official_endpoint:
            return self.provider
        return UNVERIFIED

    def _list_models(self) -> list[str]:
        raise NotImplementedError

    def list_models(self, sink: RawSink, label: str = "models") -> list[str]:
        """Model ids the endpoint lists (one metadata GET, no retries). Recorded under
        `meta/`, apart from the model calls; errors are the SDK's own, mapped to
        `ModelCallError`."""
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        with self.transport.exchange(sink, f"meta/{label}.{stamp}") as ex:
            # annotated: mypy joins a tuple display with a starred tuple to tuple[object, ...]
            caught: tuple[type[BaseException], ...] = (
                json.JSONDecodeError, httpx2.HTTPError, pydantic.ValidationError, *self._sdk_errors)
            try:
                return self._list_models()
            except caught as exc:
                failure = classify(ex, exc)
        raise ModelCallError(f"listing models of {self.provider} failed: {failure.message}",
                             retryable=failure.retryable)

    # -- the loop ------------------------------------------------------------------------

    def settings_for(self, request: ModelRequest) -> GenerationSettings:
        """Request settings, with this model's configured defaults where the request has none."""
        s, d = request.settings, self.defaults
        return GenerationSettings(
            temperature=s.temperature if s.temperature is not None else d.temperature,
            reasoning_effort=s.reasoning_effort or d.reasoning_effort,
            max_output_tokens=s.max_output_tokens,
            tool_choice=s.tool_choice,
        )

    def sent_settings(self, request: ModelRequest) -> SentSettings:
        """The settings `request` goes out with, and the notes every attempt of it records."""
        sent = self._sent_settings(self.settings_for(request))
        return SentSettings(sent.temperature, sent.reasoning_effort, sent.max_output_tokens,
                            sent.notes + self._notes(request) + self._schema_notes(request))

    def cost_of(self, usage: Usage, actual_model: str | None, *,
                gateway_usd: float | None = None, batch: bool = False) -> Cost:
        """The cost of one reply: the entry's declared price, else the price table's (at the
        provider's batch price for a request sent in a batch)."""
        if self.price is not None:
            cost = declared_cost(self.price, usage)
        elif not self.table_priced and gateway_usd is None:
            cost = not_the_vendor(self.base_url or "the base_url", self.model)
        else:
            cost = self.prices.cost((actual_model, self.model), usage, gateway_usd=gateway_usd,
                                    batch=batch)
        self._unknown_cost.note(cost)  # said once per model, not once per call
        return cost

    def complete(self, request: ModelRequest, sink: RawSink) -> ModelResult:
        sent = self.sent_settings(request)
        attempts: list[Attempt] = []
        wait_s = 0.0
        failure: Failure | None = None
        previous_body: bytes | None = None
        for number in range(1, self.retry.max_attempts + 1):
            started_at = utc_now()
            t0 = time.perf_counter()
            with self.transport.exchange(sink, f"{request.label}.attempt-{number:02d}") as ex:
                outcome, malformed, failure = self._one_attempt(request, sent, ex)
            if ex.fault is not None:  # the machine (disk full ...), not the provider: no retry
                raise ex.fault
            if failure is not None and _repeats(failure, ex, previous_body):
                failure = replace(failure, retryable=False, deterministic=True,
                                  message=failure.message + " (the same reply as the previous "
                                  "attempt, byte for byte: deterministic, not retried)")
            previous_body = ex.body if failure is not None else None
            duration_ms = (time.perf_counter() - t0) * 1000.0
            attempt = self._attempt(
                request, sent, number, started_at, duration_ms, wait_s * 1000.0, ex, outcome,
                malformed, failure,
            )
            attempts.append(attempt)
            if failure is None and outcome is not None:
                # the assembled reply too: a key split across pieces the body scrub missed
                reply = self.transport.scrubber.value(outcome.reply)
                return ModelResult(reply=reply, attempts=tuple(attempts))
            if not failure.retryable or number == self.retry.max_attempts:
                break
            wait_s = self.retry.delay(number, failure.retry_after_s, self._rng)
            self._sleep(wait_s)
        assert failure is not None
        what = "failed (not retryable)" if not failure.retryable else "failed"
        raise ModelCallError(
            f"model {self.name!r} ({self.provider} {self.model}) {what} after "
            f"{len(attempts)} attempt(s); last error: {_sentence(failure.message)} "
            + _advice(failure),
            tuple(attempts),
            retryable=failure.retryable,
            kind=failure.kind,
        )

    def _one_attempt(self, request, sent, ex):
        """(outcome, malformed error, failure) of one SDK call inside the open exchange."""
        caught: tuple[type[BaseException], ...] = (  # annotated: see list_models
            MalformedReplyError,
            json.JSONDecodeError,
            RecursionError,  # JSON nested deeper than the parser goes
            httpx2.HTTPError,
            pydantic.ValidationError,
            *self._sdk_errors,
        )
        try:
            response = self._call(request, sent)
            problem = body_problem(ex.status, ex.body, self.reply_keys)
            if problem:
                raise MalformedReplyError(problem)
            outcome = self._parse(response, json.loads(ex.body or b"{}"))
        except caught as exc:
            problem = None if isinstance(exc, MalformedReplyError) else body_problem(
                ex.status, ex.body, self.reply_keys)
            if problem:  # the SDK choked on a body that is no reply: say so, not its error
                exc = MalformedReplyError(problem)
            failure = classify(ex, exc)
            return None, (exc if isinstance(exc, MalformedReplyError) else None), failure
        if outcome.fatal:
            return outcome, None, classify(ex, PinMismatchError(outcome.fatal))
        return outcome, None, None

    def _attempt(self, request, sent, number, started_at, duration_ms, queue_ms, ex, outcome,
                 malformed, failure) -> Attempt:
        reply = outcome.reply if outcome else None
        usage = reply.usage if reply else (malformed.usage if malformed and malformed.usage else Usage())
        actual_model = reply.model if reply else (malformed.model if malformed else None)
        notes = list(sent.notes) + (list(outcome.notes) if outcome else [])
        if reply is not None and reply.block_reason:
            where = "reply" if reply.finish_reason else "prompt"  # no candidate: the prompt
            notes.append(f"the provider blocked the {where} ({reply.block_reason})"
                         + (f": {reply.block_message}" if reply.block_message else ""))
        if ex.replayed:
            notes.append(REPLAYED_NOTE)
        if reply is None and usage.input_tokens is None:
            cost = Cost(None, "unknown", self.prices.version, None,
                        "no usage reported (failed attempt)")
        else:
            cost = self.cost_of(usage, actual_model,
                                gateway_usd=outcome.gateway_usd if outcome else None)
        outcome_kind: Literal["ok", "retry", "failed"]
        if failure is None:
            outcome_kind = "ok"
        elif failure.retryable and number < self.retry.max_attempts:
            outcome_kind = "retry"
        else:
            outcome_kind = "failed"
        return Attempt(
            label=request.label,
            number=number,
            purpose=request.purpose,
            requested_model=self.model,
            requested_provider=self.provider,
            actual_model=actual_model,
            actual_provider=reply.provider if reply else None,
            temperature=sent.temperature,
            reasoning_effort=sent.reasoning_effort,
            started_at=started_at,
            ended_at=utc_now(),
            queue_ms=round(queue_ms, 3),
            duration_ms=round(duration_ms, 3),
            http_status=ex.status,
            outcome=outcome_kind,
            error=None if failure is None else f"[{failure.kind}] {failure.message}",
            response_id=reply.response_id if reply else (malformed.response_id if malformed else None),
            # a blocked prompt has no finish reason of its own: its block reason says why
            finish_reason=(reply.block_reason if reply.finish_reason is None
                           else reply.finish_reason) if reply else None,
            usage=usage,
            cost=cost,
            request_path=ex.request_path,
            response_path=ex.response_path,
            notes=tuple(notes),
        )


REPLAYED_NOTE = ("replayed: the response recorded before the case stopped (not journaled "
                 "then), not requested again")


def _sentence(text: str) -> str:
    """`text` ending in one full stop: many errors end in their own ("Server disconnected
    without sending a response.")."""
    text = text.rstrip()
    return text if text.endswith((".", "!", "?")) else text + "."


def _advice(failure: Failure) -> str:
    if failure.kind == "context_overflow":
        return ("The conversation no longer fits the model's context window: use a model with "
                "a larger context, fewer or smaller tool outputs (max_tool_calls, row limits), "
                "or a larger context on a local server (llama.cpp --n_ctx).")
    if failure.deterministic:
        return ("The endpoint gave the same reply twice, so retrying cannot help: read the raw "
                "response file and change the request or the server setting it rejects (for "
                "llama.cpp's 500 on an assistant message with `content: null`, set "
                "tool_call_content = \"\" in the model entry; a page that is not JSON means "
                "base_url is wrong).")
    if failure.kind == "malformed":
        return ("The endpoint answered with something that is not a usable model reply; check "
                "base_url and the raw response file.")
    if failure.kind == "http_4xx":
        return ("The provider rejected the request: check the model id, the API key variable, "
                "base_url and the settings in the config; the raw response file has the details.")
    if failure.kind == "pin":
        return ("The gateway served another provider than provider_pin allows; change the pin, "
                "or set fail_on_pin_mismatch = false to record the mismatch and continue.")
    return ("The provider kept failing (rate limit, outage, network or malformed replies); "
            "try again later or raise max_attempts.")


def _repeats(failure: Failure, ex, previous_body: bytes | None) -> bool:
    """A retryable failure that is deterministic: a 500 or malformed 2xx whose body repeats
    the previous attempt's byte for byte and does not itself ask for a retry (overload and
    rate-limit replies, which repeat by nature, keep their retries)."""
    if not failure.retryable or not ex.body or ex.body != previous_body:
        return False
    if failure.kind not in ("malformed", "http_5xx"):
        return False
    if ex.status != 500 and not 200 <= (ex.status or 0) < 300:
        return False
    return re.search(rb"retry|try again|overload|unavailable", ex.body[:4000], re.I) is None


def unique_call_ids(calls: list[ToolCall]) -> list[ToolCall]:
    """Tool calls with ids unique within the reply. An empty or repeated provider id gets
    `call-<index>` (index in the reply); the provider's own stays in `wire_id` for the wire."""
    seen: set[str] = set()
    out = []
    for i, call in enumerate(calls):
        if call.id and call.id not in seen:
            seen.add(call.id)
            out.append(call)
            continue
        new = f"call-{i}"
        while new in seen:
            new += "x"
        seen.add(new)
        out.append(replace(call, id=new, wire_id=call.id))
    return out


def tokens(value) -> int | None:
    """An SDK token count as int, or None when the provider did not say."""
    return None if value is None else int(value)
