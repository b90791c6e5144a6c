"""`run_batch`: send many requests of one model through its provider's batch API and map each
result back to its request as an ordinary `ModelResult`.

    outcome = run_batch(batch_api(model), {"Q1__m__sql/judge": request, ...}, sink, ledger,
                        name="judge-batch")
    outcome.results["Q1__m__sql/judge"]   # ModelResult: reply and one Attempt at batch price
    outcome.pending["Q7__m__sql/judge"]   # why there is none (errored, expired, still running)

Audit: the input file is written to the sink (`batch/<key>/input…`) before anything is
uploaded; every upload, create, status poll and result download goes through the model's
recording transport (request before sending, response before parsing). Each item becomes one
`Attempt` (label and purpose of its request; request path = the input file, response path = the
result file; usage as the provider reported it; cost at the batch price of the price table;
a note naming the batch id and custom id).

Resume: the batch's key is the hash of its input file. The ledger holds each batch created
(written before the first poll) and each seen to end; a call with the same requests finds the
batch id there and polls or fetches it instead of creating (paying for) another one. A batch
that expires, is cancelled or fails leaves its unanswered items in `pending` with the reason;
sending those again is a new input file, so a new batch for them only; the same input file
after a batch that expired, was cancelled or failed is a new batch too. `batch_groups` splits a
caller's pending requests back into the batches that hold them.

Polling backs off from `poll_s` doubling to `max_poll_s`; after `max_wait_s` the still-running
items are pending ("still running") and a later call picks the same batch up.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from parquet_agent.errors import ModelCallError
from parquet_agent.files import utc_now
from parquet_agent.models.batch.records import BatchItem, BatchLedger, BatchStatus, ItemResult
from parquet_agent.models.http_model import CallOutcome
from parquet_agent.models.protocol import Attempt, Cost, ModelRequest, ModelResult, RawSink, Usage


GONE = ("expired", "cancelled", "failed")  # batch states with nothing more to fetch


@dataclass(frozen=True)
class BatchOutcome:
    results: dict[str, ModelResult] = field(default_factory=dict)  # by the caller's key
    pending: dict[str, str] = field(default_factory=dict)  # key -> why there is no result
    batch_id: str | None = None
    state: str | None = None
    resumed: bool = False  # the batch was found in the ledger, not created now
    polls: int = 0


@dataclass(frozen=True)
class Polling:
    poll_s: float = 5.0
    max_poll_s: float = 300.0
    max_wait_s: float = 24 * 3600.0
    sleep: Callable[[float], None] = time.sleep


def run_batch(api: Any, requests: Mapping[str, ModelRequest], sink: RawSink,
              ledger: BatchLedger, *, name: str = "batch",
              polling: Polling = Polling()) -> BatchOutcome:
    """See the module docstring. `api` is `batch_api(model)`; keys name the requests."""
    items = [BatchItem(f"r{i:05d}", key, requests[key])
             for i, key in enumerate(sorted(requests), start=1)]
    if not items:
        return BatchOutcome()
    data = api.input_file(items)
    key = "sha256:" + hashlib.sha256(data).hexdigest()
    short = key[7:19]
    known = _known(ledger, key)
    resumed = known is not None
    if known is None:
        input_path = sink.write(f"batch/{name}-{short}/input.jsonl", data)
        submitted_at = utc_now()
        batch_id = api.submit(data, sink, f"batch/{name}-{short}")
        known = {"event": "batch_submitted", "key": key, "provider": api.provider,
                 "model": api.model.model, "batch_id": batch_id, "input_path": input_path,
                 "submitted_at": submitted_at, "items": {i.custom_id: i.key for i in items}}
        ledger.append(known)
    batch_id, t0 = known["batch_id"], time.monotonic()
    status, polls = _wait(api, batch_id, sink, f"batch/{name}-{short}", polling, t0)
    if status.state == "running":
        reason = (f"{api.provider} batch {batch_id} still running after "
                  f"{polling.max_wait_s:g} s ({status.detail}); resuming picks it up")
        return BatchOutcome({}, {i.key: reason for i in items}, batch_id, "running", resumed,
                            polls)
    ledger.append({"event": "batch_ended", "key": key, "batch_id": batch_id,
                   "state": status.state, "detail": status.detail, "at": utc_now()})
    fetched = {} if status.state == "failed" else {
        r.custom_id: r for r in api.fetch(batch_id, status, sink, f"batch/{name}-{short}")}
    results, pending = {}, {}
    ended_at = utc_now()
    for item in items:
        got = fetched.get(item.custom_id)
        if got is None or got.outcome is None:
            why = got.error if got is not None else f"no result ({status.detail})"
            pending[item.key] = f"{api.provider} batch {batch_id} {status.state}: {why}"
            continue
        attempt = _attempt(api, item, got, got.outcome, batch_id, known, ended_at)
        results[item.key] = ModelResult(got.outcome.reply, (attempt,))
    return BatchOutcome(results, pending, batch_id, status.state, resumed, polls)


def _known(ledger: BatchLedger, key: str) -> dict[str, Any] | None:
    """The batch created for this input file earlier, if any (the latest), unless it ended
    with nothing more to give (expired, cancelled, failed): polling that one again would leave
    its requests pending for ever, so they go into a new batch."""
    records = ledger.records()
    gone = {r.get("batch_id") for r in records if r.get("event") == "batch_ended"
            and r.get("key") == key and r.get("state") in GONE}
    found = [r for r in records if r.get("event") == "batch_submitted"
             and r.get("key") == key and r.get("batch_id") not in gone]
    return found[-1] if found else None


def batch_groups(ledger: BatchLedger, keys: Iterable[str]) -> list[list[str]]:
    """`keys` split so that each batch still worth polling gets back exactly its own pending
    requests (the same input file, so `run_batch` finds it in the ledger instead of paying
    again): first each earlier batch's keys, in the order they were submitted (a key belongs to
    the first batch that held it; a batch that expired, was cancelled or failed holds none),
    then the keys no batch holds, together."""
    records = ledger.records()
    gone = {r.get("batch_id") for r in records if r.get("event") == "batch_ended"
            and r.get("state") in GONE}
    left, groups = set(keys), []
    for record in records:
        if record.get("event") != "batch_submitted" or record.get("batch_id") in gone:
            continue
        mine = left & set((record.get("items") or {}).values())
        if mine:
            groups.append(sorted(mine))
            left -= mine
    return groups + ([sorted(left)] if left else [])


def _wait(api: Any, batch_id: str, sink: RawSink, name: str, polling: Polling,
          t0: float) -> tuple[BatchStatus, int]:
    delay, polls = polling.poll_s, 0
    while True:
        polls += 1
        try:
            status = api.poll(batch_id, sink, f"{name}/poll-{polls:03d}")
        except ModelCallError as exc:
            if not exc.retryable:
                raise
            status = BatchStatus("running", f"poll failed: {exc}")
        if status.state != "running" or time.monotonic() - t0 + delay > polling.max_wait_s:
            return status, polls
        polling.sleep(delay)
        delay = min(delay * 2, polling.max_poll_s)


def _attempt(api: Any, item: BatchItem, got: ItemResult, outcome: CallOutcome, batch_id: str,
             known: dict[str, Any], ended_at: str) -> Attempt:
    """The attempt record of `got`, whose parsed reply is `outcome`."""
    model, request = api.model, item.request
    sent = model.sent_settings(request)
    reply = outcome.reply
    usage: Usage = reply.usage
    cost: Cost = model.cost_of(usage, reply.model, gateway_usd=outcome.gateway_usd,
                               batch=True)
    return Attempt(
        label=request.label, number=1, purpose=request.purpose,
        requested_model=model.model, requested_provider=model.provider,
        actual_model=reply.model, actual_provider=reply.provider,
        temperature=sent.temperature, reasoning_effort=sent.reasoning_effort,
        started_at=known["submitted_at"], ended_at=ended_at, queue_ms=0.0,
        duration_ms=_ms_between(known["submitted_at"], ended_at),
        http_status=got.http_status, outcome="ok", error=None,
        response_id=reply.response_id, finish_reason=reply.finish_reason, usage=usage,
        cost=cost, request_path=known["input_path"], response_path=got.response_path,
        notes=sent.notes + tuple(outcome.notes) + (
            f"sent in {api.provider} batch {batch_id} as {item.custom_id}",))


def _ms_between(start: str, end: str) -> float:
    from datetime import datetime

    return round((datetime.fromisoformat(end.replace("Z", "+00:00"))
                  - datetime.fromisoformat(start.replace("Z", "+00:00"))).total_seconds()
                 * 1000.0, 3)
