"""Paid model responses a stopped case left on disk unjournaled, to replay instead of paying again.

The recording transport makes a response durable in the raw store before anything parses it;
the agent journals the turn (its attempts and reply) only after. A case stopped in between (a
kill -9 of the run, a Ray node lost mid-case) leaves a paid response on disk that no journal
line claims. When such a case runs again, `Run.replay(case_id).unclaimed` holds those exchanges,
keyed by the request's label (`<case>/turn-03`, `<case>/judge`) and the sha256 of its exact
body; the recording transport, given them through `models.transport.ReplaySink`, answers an
identical request from the record instead of sending it, and the attempt says so in its notes.
Only 2xx responses are kept (a failed attempt was no answer, and a retry is what a resumed case
is for); a damaged record is skipped (the request is then sent again).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from parquet_agent.errors import RunError
from parquet_agent.transcript import ModelAttempt

# raw/<label>.attempt-NN.request.json, a repeat of the same name stored as ...json~2
_NAME = re.compile(r"^raw/(?P<exchange>(?P<label>.+)\.attempt-\d+)"
                   r"\.(?P<kind>request|response)\.json(?:~\d+)?$")


@dataclass(frozen=True)
class RecordedExchange:
    """One successful HTTP exchange on disk: its two records and the response record's bytes."""

    request_path: str
    response_path: str
    response: bytes  # the response record as stored (status, headers, body)


def unclaimed_exchanges(raw: Any, case_id: str,
                        events: Iterable[Any]) -> dict[tuple[str, str], RecordedExchange]:
    """`(label, request body sha256) -> RecordedExchange` for every 2xx response of `case_id`
    in `raw` that no journaled attempt in `events` refers to. A response pairs with the request
    of the same exchange name written just before it (one exchange runs on one thread)."""
    claimed = {e.payload.attempt.response_path for e in events
               if isinstance(e.payload, ModelAttempt)}  # judge attempts are ModelAttempts too
    prefix = f"raw/{case_id}/"
    pending: dict[str, str] = {}
    found: dict[tuple[str, str], RecordedExchange] = {}
    for path in raw.names():
        match = _NAME.match(path) if path.startswith(prefix) else None
        if match is None:
            continue
        if match["kind"] == "request":
            pending[match["exchange"]] = path
            continue
        request_path = pending.pop(match["exchange"], None)
        if request_path is None or path in claimed:
            continue
        try:
            response = raw.read(path)
            status = json.loads(response).get("status")
            body_sha256 = json.loads(raw.read(request_path))["body_sha256"]
        except (RunError, KeyError, ValueError, TypeError):
            continue  # damaged (Run.verify() names it): the request is sent again
        if isinstance(status, int) and 200 <= status < 300:
            found[(match["label"], body_sha256)] = RecordedExchange(request_path, path, response)
    return found
