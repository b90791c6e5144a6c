"""Helpers the three batch clients share: a recorded exchange that maps SDK failures once,
and parsing one result body with the adapter's own parser."""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import httpx2
import pydantic

from parquet_agent.errors import ModelCallError
from parquet_agent.models.http_model import CallOutcome, HttpModel
from parquet_agent.models.protocol import RawSink
from parquet_agent.models.retry import MalformedReplyError, classify
from parquet_agent.models.transport import Exchange


@contextmanager
def exchange(model: HttpModel, sink: RawSink, name: str) -> Iterator[Exchange]:
    """One batch API call, recorded under `name` (request before sending, response before the
    SDK parses it); an SDK or network failure becomes a `ModelCallError` naming the call."""
    # annotated: mypy joins a tuple display with a starred tuple to tuple[object, ...]
    caught: tuple[type[BaseException], ...] = (
        json.JSONDecodeError, httpx2.HTTPError, pydantic.ValidationError, *model.sdk_errors)
    with model.transport.exchange(sink, name) as ex:
        try:
            yield ex
        except caught as exc:
            failure = classify(ex, exc)
            raise ModelCallError(
                f"{model.provider} batch call {name!r} failed: {failure.message} (raw response: "
                f"{ex.response_path})", retryable=failure.retryable, kind=failure.kind) from exc


def parsed(parse: Callable[..., CallOutcome], *args: Any) -> tuple[CallOutcome | None,
                                                                   str | None]:
    """`parse(*args)`, or None and why the body is no usable reply."""
    try:
        return parse(*args), None
    except (MalformedReplyError, pydantic.ValidationError, KeyError, TypeError,
            ValueError) as exc:
        return None, f"[malformed] {exc}"


def custom_id(line: dict[str, Any]) -> str:
    """A result line's `custom_id` ("" when it has none: it then matches no request)."""
    value = line.get("custom_id")
    return value if isinstance(value, str) else ""
