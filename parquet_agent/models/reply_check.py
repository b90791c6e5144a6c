"""The one place that decides what a provider's reply is: an answer, a block, or malformed.

Adapters read their wire format; what the reading means is decided here, the same way for
every provider:

- `body_problem(status, body, expected)`: a 2xx body that is not JSON (a wrong `base_url`
  answering with an HTML or text page, a gateway's error page) or is JSON without the wire
  format's top-level keys is no reply at all. The attempt is recorded and fails as `malformed`
  with advice about `base_url`.
- `verdict(...)`: a reply whose prompt was blocked (Gemini `promptFeedback.blockReason`) or
  whose finish reason is a refusal (`SAFETY`, `RECITATION`, `PROHIBITED_CONTENT`,
  `MODEL_ARMOR`, OpenAI `content_filter`, Anthropic `refusal`, ...) is a **block**: an answer
  that carries the provider's reason and message, never retried. A reply with no choice /
  candidate / content and no block, or a malformed function call, is **malformed** (retried:
  sampling may do better); a call of an undeclared function (Gemini `UNEXPECTED_TOOL_CALL`) is
  an answer when the call is in the reply (the tools answer it as an unknown tool). Everything
  else is an **answer**; `Reply.truncated` says whether it stopped at the output limit.

Errors (non-2xx) are classified by `retry.classify`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

BLOCK_FINISH_REASONS = frozenset({
    # Gemini / Vertex finish reasons that mean "refused", not "finished"
    "SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "IMAGE_SAFETY",
    "LANGUAGE", "MODEL_ARMOR", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION",
    # OpenAI-compatible and Anthropic spellings
    "content_filter", "refusal",
})
MALFORMED_FINISH_REASONS = frozenset({"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL"})
# Gemini: the model called a function the request did not declare. With the call in the reply
# it is an answer: the tools answer an unknown tool with an error value the model can read
# (and real models recover); without it, nothing can be done with the reply.
UNDECLARED_CALL = "UNEXPECTED_TOOL_CALL"


@dataclass(frozen=True)
class Verdict:
    kind: Literal["answer", "block", "malformed"]
    reason: str | None = None  # block: the provider's reason; malformed: what is wrong
    message: str | None = None  # block: the provider's message, when it gave one


def body_problem(status: int | None, body: bytes | None, expected: tuple[str, ...]) -> str | None:
    """Why a 2xx `body` is not a reply of a wire format whose replies carry one of the
    top-level keys `expected`; None when it is (or when the status is not 2xx)."""
    if status is None or not 200 <= status < 300:
        return None
    shown = (body or b"")[:200].decode("utf-8", "replace")
    try:
        data = json.loads(body or b"")
    except (ValueError, RecursionError):
        return (f"HTTP {status} with a body that is not JSON ({shown!r}): the endpoint is not "
                "a model API; check base_url (e.g. it must end in /v1 for OpenAI-compatible "
                "servers)")
    if not isinstance(data, dict) or not any(k in data for k in expected):
        keys = sorted(data)[:8] if isinstance(data, dict) else type(data).__name__
        return (f"HTTP {status} with JSON that is not a model reply (no {' / '.join(expected)}; "
                f"got {keys}): check base_url points at the model API")
    return None


def verdict(*, has_choice: bool, finish_reason: str | None, block_reason: str | None = None,
            block_message: str | None = None, has_calls: bool = False) -> Verdict:
    """Answer, block or malformed, from what an adapter read off the reply (`has_calls`: it
    holds tool calls)."""
    if block_reason:
        return Verdict("block", block_reason, block_message)
    if finish_reason in BLOCK_FINISH_REASONS:
        return Verdict("block", finish_reason, block_message)
    if finish_reason == UNDECLARED_CALL and has_calls and has_choice:
        return Verdict("answer")
    if finish_reason in MALFORMED_FINISH_REASONS:
        return Verdict("malformed", f"finish reason {finish_reason}")
    if not has_choice:
        return Verdict("malformed", "reply has no choices / candidates / content")
    return Verdict("answer")
