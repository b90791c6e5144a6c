"""Our own retry policy: SDK retries are off, so every attempt is ours and on disk.

`classify(exchange, exc)` turns what one attempt produced into a `Failure` (retryable or not,
with a server-requested delay), using what the recording transport saw (status, headers,
transport error) rather than SDK exception classes, so the rule is the same for every provider:

- retryable: 408, 409, 429 (Retry-After / retry-after-ms / Gemini RetryInfo honoured up to a
  cap), every 5xx including Anthropic's 529, timeouts, dropped or refused connections, and a
  malformed 2xx reply (invalid JSON, no choices/candidates, tool arguments that are not JSON);
- not retryable (fails fast): every other 4xx (bad request, auth, not found, ...), a
  provider-pin mismatch when configured to fail, and a prompt over the model's context window
  (`context_overflow`, recognised by the messages of OpenAI, Anthropic, Gemini, vLLM and
  llama.cpp, whatever the status: llama.cpp and some gateways send it as a 500).

`RetryPolicy.delay(n, retry_after)` is exponential backoff with full jitter, bounded.
"""

from __future__ import annotations

import email.utils
import json
import random
import re
import time
from dataclasses import dataclass

from parquet_agent.models.transport import Exchange

_RETRY_STATUSES = frozenset({408, 409})  # 429 and 5xx have their own branches below


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded attempts with backoff. `retry_after_cap_s` bounds a server-requested wait: a
    longer Retry-After is waited only up to the cap, so one reply cannot stall a run."""

    max_attempts: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0
    retry_after_cap_s: float = 60.0

    def delay(self, attempt_number: int, retry_after_s: float | None, rng: random.Random) -> float:
        """Seconds to wait after failed attempt `attempt_number` (1-based)."""
        if retry_after_s is not None:
            return max(0.0, min(retry_after_s, self.retry_after_cap_s))
        ceiling = min(self.max_delay_s, self.base_delay_s * 2 ** (attempt_number - 1))
        return ceiling * (0.5 + 0.5 * rng.random())


@dataclass(frozen=True)
class Failure:
    message: str
    retryable: bool
    retry_after_s: float | None = None
    # http_429 | http_5xx | http_4xx | timeout | network | malformed | pin | context_overflow
    kind: str = "error"
    deterministic: bool = False  # the same reply twice: retrying cannot help


# How providers say "the prompt is over the context window" (OpenAI `context_length_exceeded`,
# Anthropic "prompt is too long", Gemini "input token count ... exceeds the maximum", vLLM /
# llama-cpp-python "maximum context length", llama.cpp's server `exceed_context_size_error`).
_CONTEXT_OVERFLOW = re.compile(
    r"context_length_exceeded|prompt is too long|maximum context length|"
    r"input token count.{0,40}exceeds|exceed_context_size|exceeds? (?:the )?(?:available )?"
    r"context (?:window|size|length)|context window (?:of \d+ tokens )?(?:was |is )?exceeded|"
    r"requested tokens \(\d+\) exceed context window",
    re.IGNORECASE,
)


class MalformedReplyError(Exception):
    """A 2xx reply the adapter cannot use (no choices, bad tool-call JSON, ...). Carries what
    could still be read from it, so the attempt record keeps the tokens it cost."""

    def __init__(self, message: str, *, usage=None, model=None, response_id=None):
        super().__init__(message)
        self.usage = usage
        self.model = model
        self.response_id = response_id


class PinMismatchError(Exception):
    """The gateway served the request from a provider outside the configured pin."""


def classify(exchange: Exchange, exc: BaseException) -> Failure:
    """Decide whether the attempt that raised `exc` may be retried."""
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, PinMismatchError):
        return Failure(text, retryable=False, kind="pin")
    if exchange.error_kind is not None:  # the transport saw no complete response
        return Failure(exchange.error or text, retryable=True, kind=exchange.error_kind)
    status = exchange.status
    if status is None:
        # The SDK failed before any request went out (e.g. invalid arguments): ours to fix.
        return Failure(text, retryable=False, kind="client")
    if status >= 400 and exchange.body and _CONTEXT_OVERFLOW.search(
            exchange.body[:4000].decode("utf-8", "replace")):
        return Failure(f"context window exceeded: {_error_text(exchange.body) or text}",
                       retryable=False, kind="context_overflow")
    if status == 429:
        return Failure(text, True, retry_after(exchange), kind="http_429")
    if status >= 500:
        return Failure(text, True, retry_after(exchange), kind="http_5xx")
    if status in _RETRY_STATUSES:
        return Failure(text, True, retry_after(exchange), kind=f"http_{status}")
    if status >= 400:
        return Failure(text, retryable=False, kind="http_4xx")
    return Failure(text, retryable=True, kind="malformed")


def _error_text(body: bytes) -> str | None:
    """The provider's error message from a JSON error body (any of the three shapes)."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return body[:300].decode("utf-8", "replace")
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"]
    return error if isinstance(error, str) else None


def retry_after(exchange: Exchange) -> float | None:
    """Seconds the server asked us to wait, from headers or a Gemini RetryInfo body."""
    h = exchange.headers
    if "retry-after-ms" in h:
        try:
            return float(h["retry-after-ms"]) / 1000.0
        except ValueError:
            pass
    if "retry-after" in h:
        value = h["retry-after"].strip()
        try:
            return float(value)
        except ValueError:
            try:
                parsed = email.utils.parsedate_to_datetime(value) if value else None
            except (TypeError, ValueError):  # e.g. "soon": no usable hint, back off as usual
                parsed = None
            if parsed is not None:
                return max(0.0, parsed.timestamp() - time.time())
    if exchange.body and b"retryDelay" in exchange.body:
        try:
            details = json.loads(exchange.body)["error"]["details"]
            for d in details:
                m = re.fullmatch(r"([0-9.]+)s", str(d.get("retryDelay", "")))
                if m:
                    return float(m.group(1))
        except (ValueError, KeyError, TypeError, AttributeError):
            pass
    return None
