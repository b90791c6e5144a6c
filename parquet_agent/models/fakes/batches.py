"""The three providers' batch protocols, for `FakeServer(..., batches=FakeBatches(...))`.

    batches = FakeBatches(reply=lambda custom_id, body: FakeReply(text="..."), polls=2,
                          failed={"Q7/judge"}, expire_after=None)
    with openai_server([], batches=batches) as server: ...

- OpenAI Batch: `POST /v1/files` (multipart, purpose `batch`), `POST /v1/batches`,
  `GET /v1/batches/{id}`, `POST /v1/batches/{id}/cancel`, `GET /v1/files/{id}/content`: results
  in an output file, failed and expired requests in an error file (JSONL, `custom_id` per line).
- Anthropic Message Batches: `POST /v1/messages/batches`, `GET /v1/messages/batches/{id}`,
  `GET .../results` (JSONL: `result.type` succeeded / errored / expired / canceled).
- Gemini batch mode: `POST /{version}/models/{model}:batchGenerateContent` (inlined requests,
  `metadata.key`), `GET /{version}/batches/{id}`: `metadata.state` `BATCH_STATE_*` and, once
  done, `metadata.output.inlinedResponses.inlinedResponses` (a `response` or an `error` each).

A batch answers `polls` status requests as still running, then ends. `failed` custom ids get a
per-request error (HTTP 400 inside the batch); `expire_after=n`: only the first n requests are
processed and the batch ends as expired (OpenAI, Anthropic: the rest expired per request;
Gemini: the whole job is `BATCH_STATE_EXPIRED` with no output). Each request is answered by
`reply(custom_id, body)` rendered by the server's own wire format, so usage is per request.
`created` counts batches created (a resume that pays twice shows up here).
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any, Callable

from parquet_agent.models.fakes.server import FakeReply, ReceivedRequest

Response = tuple[int, bytes, str]  # status, body, content type
_Result = tuple[str, dict | None, str | None]  # custom_id, reply body, error
_JSON = "application/json"


@dataclass
class _Batch:
    id: str
    items: list[tuple[str, dict]]  # custom_id, request body
    polls_left: int
    created_at: int
    extra: dict[str, Any] = field(default_factory=dict)
    results: list[_Result] = field(default_factory=list)  # set when the batch leaves `running`
    state: str = "running"  # running | ended | expired | cancelled


class FakeBatches:
    def __init__(self, reply: Callable[[str, dict], FakeReply], *, polls: int = 1,
                 failed: frozenset[str] | set[str] = frozenset(),
                 expire_after: int | None = None):
        self.reply = reply
        self.polls = polls
        self.failed = frozenset(failed)
        self.expire_after = expire_after
        self.batches: dict[str, _Batch] = {}
        self.files: dict[str, bytes] = {}
        self.created = 0
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def route(self, wire, req: ReceivedRequest) -> Response | None:
        """The answer to a batch route of `wire` (None: not a batch route)."""
        handler = {"openai": _openai, "anthropic": _anthropic, "gemini": _gemini}[wire.name]
        with self._lock:
            return handler(self, wire, req)

    # -- shared by the three protocols ------------------------------------------------------

    def create(self, prefix: str, items: list[tuple[str, dict]], **extra) -> _Batch:
        self.created += 1
        batch = _Batch(f"{prefix}{next(self._ids):04d}", items, self.polls, int(time.time()),
                       extra)
        self.batches[batch.id] = batch
        return batch

    def poll(self, batch: _Batch, wire, render_request) -> None:
        """One status request: counts down, then processes the batch."""
        if batch.state != "running":
            return
        if batch.polls_left > 0:
            batch.polls_left -= 1
            return
        results: list[_Result] = []
        for i, (custom_id, body) in enumerate(batch.items):
            if self.expire_after is not None and i >= self.expire_after:
                results.append((custom_id, None, "expired"))
            elif custom_id in self.failed:
                results.append((custom_id, None, f"injected failure of {custom_id}"))
            else:
                reply = self.reply(custom_id, body)
                results.append((custom_id, wire.render(reply, render_request(body)), None))
        batch.results = results
        batch.state = "expired" if self.expire_after is not None else "ended"

    def file(self, content: bytes) -> str:
        file_id = f"file-fake{next(self._ids):04d}"
        self.files[file_id] = content
        return file_id


def _json(status: int, body: Any) -> Response:
    return status, json.dumps(body).encode(), _JSON


def _jsonl(lines: list[dict]) -> bytes:
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def _not_found(wire, req: ReceivedRequest) -> Response:
    return _json(404, wire.render_error(404, f"no batch or file at {req.path}"))


# -- OpenAI Batch ----------------------------------------------------------------------------


def _openai(fb: FakeBatches, wire, req: ReceivedRequest) -> Response | None:
    path = req.path.split("?")[0]
    if req.method == "POST" and path.endswith("/v1/files"):
        content = _multipart_file(req)
        file_id = fb.file(content)
        return _json(200, {"id": file_id, "object": "file", "bytes": len(content),
                           "created_at": int(time.time()), "filename": "batch.jsonl",
                           "purpose": "batch", "status": "processed"})
    if req.method == "POST" and path.endswith("/v1/batches"):
        body = req.json or {}
        lines = [json.loads(x) for x in fb.files.get(str(body.get("input_file_id")), b"").splitlines()
                 if x.strip()]
        batch = fb.create("batch_fake", [(x["custom_id"], x["body"]) for x in lines],
                          input_file_id=body.get("input_file_id"), endpoint=body.get("endpoint"))
        return _json(200, _openai_batch(batch, "validating"))
    m = re.search(r"/v1/batches/([^/]+)(/cancel)?$", path)
    if m and m.group(1) in fb.batches:
        batch = fb.batches[m.group(1)]
        if m.group(2):
            batch.state, batch.results = "cancelled", [(c, None, "cancelled")
                                                       for c, _ in batch.items]
        else:
            fb.poll(batch, wire, lambda body: ReceivedRequest("POST", "/v1/chat/completions",
                                                              {}, b"", body))
        return _json(200, _openai_batch(batch, None, fb))
    m = re.search(r"/v1/files/([^/]+)/content$", path)
    if m:
        if m.group(1) not in fb.files:
            return _not_found(wire, req)
        return 200, fb.files[m.group(1)], "application/octet-stream"
    return None


def _openai_batch(batch: _Batch, status: str | None, fb: FakeBatches | None = None) -> dict:
    n = len(batch.items)
    out = {"id": batch.id, "object": "batch", "endpoint": batch.extra["endpoint"],
           "input_file_id": batch.extra["input_file_id"], "completion_window": "24h",
           "created_at": batch.created_at, "expires_at": batch.created_at + 86400,
           "request_counts": {"total": n, "completed": 0, "failed": 0}}
    if batch.state == "running":
        out["status"] = status or "in_progress"
        return out
    done = [(c, r) for c, r, e in batch.results if e is None]
    errors = [(c, e) for c, r, e in batch.results if e is not None]
    out["status"] = {"ended": "completed", "expired": "expired",
                     "cancelled": "cancelled"}[batch.state]
    out["request_counts"] = {"total": n, "completed": len(done), "failed": len(errors)}
    if fb is not None and "output_file_id" not in batch.extra:
        batch.extra["output_file_id"] = fb.file(_jsonl([
            {"id": f"batch_req_{i}", "custom_id": c, "error": None,
             "response": {"status_code": 200, "request_id": f"req_{i}", "body": r}}
            for i, (c, r) in enumerate(done)])) if done else None
        batch.extra["error_file_id"] = fb.file(_jsonl([
            {"id": f"batch_req_e{i}", "custom_id": c,
             "response": None if e in ("expired", "cancelled") else {
                 "status_code": 400, "request_id": f"req_e{i}",
                 "body": {"error": {"message": e, "type": "invalid_request_error"}}},
             "error": {"code": "batch_expired", "message": "This request could not be "
                       "executed before the completion window expired."} if e == "expired"
             else ({"code": "batch_cancelled", "message": "cancelled"} if e == "cancelled"
                   else None)}
            for i, (c, e) in enumerate(errors)])) if errors else None
    out["output_file_id"] = batch.extra.get("output_file_id")
    out["error_file_id"] = batch.extra.get("error_file_id")
    return out


def _multipart_file(req: ReceivedRequest) -> bytes:
    head = f"Content-Type: {req.headers.get('content-type', '')}\r\n\r\n".encode()
    message = BytesParser(policy=HTTP).parsebytes(head + req.body)
    for part in message.iter_parts():
        if part.get_param("name", header="content-disposition") == "file":
            payload = part.get_payload(decode=True)  # bytes for a part that is not multipart
            return payload if isinstance(payload, bytes) else b""
    return b""


# -- Anthropic Message Batches ---------------------------------------------------------------


def _anthropic(fb: FakeBatches, wire, req: ReceivedRequest) -> Response | None:
    path = req.path.split("?")[0]
    if req.method == "POST" and path.endswith("/v1/messages/batches"):
        items = [(r["custom_id"], r["params"]) for r in (req.json or {}).get("requests", [])]
        return _json(200, _anthropic_batch(fb.create("msgbatch_fake", items), req))
    m = re.search(r"/v1/messages/batches/([^/]+)(/results|/cancel)?$", path)
    if not m or m.group(1) not in fb.batches:
        return None if not m else _not_found(wire, req)
    batch = fb.batches[m.group(1)]
    if m.group(2) == "/results":
        return 200, _jsonl([_anthropic_result(c, r, e) for c, r, e in batch.results or ()]), \
            "application/binary"
    if m.group(2) == "/cancel":
        batch.state, batch.results = "cancelled", [(c, None, "cancelled") for c, _ in batch.items]
    else:
        fb.poll(batch, wire, lambda body: ReceivedRequest("POST", "/v1/messages", {}, b"", body))
    return _json(200, _anthropic_batch(batch, req))


def _anthropic_batch(batch: _Batch, req: ReceivedRequest) -> dict:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(batch.created_at))
    counts = {"processing": len(batch.items), "succeeded": 0, "errored": 0, "canceled": 0,
              "expired": 0}
    out = {"id": batch.id, "type": "message_batch", "created_at": stamp,
           "expires_at": stamp, "processing_status": "in_progress", "request_counts": counts,
           "results_url": None, "ended_at": None, "archived_at": None,
           "cancel_initiated_at": None}
    if batch.state != "running":
        counts["processing"] = 0
        for _, _, error in batch.results:
            key = {None: "succeeded", "expired": "expired", "cancelled": "canceled"}.get(
                error, "errored")
            counts[key] += 1
        host = req.headers.get("host", "127.0.0.1")
        out.update(processing_status="ended", ended_at=stamp,
                   results_url=f"http://{host}/v1/messages/batches/{batch.id}/results")
    return out


def _anthropic_result(custom_id: str, reply: dict | None, error: str | None) -> dict:
    if error is None:
        return {"custom_id": custom_id, "result": {"type": "succeeded", "message": reply}}
    if error in ("expired", "cancelled"):
        return {"custom_id": custom_id, "result": {"type": {"cancelled": "canceled"}.get(
            error, error)}}
    return {"custom_id": custom_id, "result": {"type": "errored", "error": {
        "type": "error", "error": {"type": "invalid_request_error", "message": error}}}}


# -- Gemini batch mode -----------------------------------------------------------------------

_GEMINI_CREATE = re.compile(r"^/(v1(?:beta|alpha)?)/models/([^/:]+):batchGenerateContent$")
_GEMINI_GET = re.compile(r"^/(v1(?:beta|alpha)?)/batches/([^/:]+)$")


def _gemini(fb: FakeBatches, wire, req: ReceivedRequest) -> Response | None:
    path = req.path.split("?")[0]
    m = _GEMINI_CREATE.match(path)
    if m and req.method == "POST":
        requests = (((req.json or {}).get("batch") or {}).get("inputConfig") or {}).get(
            "requests", {}).get("requests", [])
        items = [(r.get("metadata", {}).get("key", str(i)), r["request"])
                 for i, r in enumerate(requests)]
        batch = fb.create("fakebatch", items, model=m.group(2))
        return _json(200, _gemini_batch(batch))
    m = _GEMINI_GET.match(path)
    if m and req.method == "GET":
        found = fb.batches.get(m.group(2))
        if found is None:
            return _not_found(wire, req)
        model = found.extra["model"]
        fb.poll(found, wire, lambda body: ReceivedRequest(
            "POST", f"/v1/models/{model}:generateContent", {}, b"", body))
        return _json(200, _gemini_batch(found))
    return None


def _gemini_batch(batch: _Batch) -> dict:
    state = {"running": "BATCH_STATE_RUNNING" if batch.polls_left < 1 else "BATCH_STATE_PENDING",
             "ended": "BATCH_STATE_SUCCEEDED", "expired": "BATCH_STATE_EXPIRED",
             "cancelled": "BATCH_STATE_CANCELLED"}[batch.state]
    metadata: dict[str, Any] = {
        "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
        "name": f"batches/{batch.id}", "model": f"models/{batch.extra['model']}",
        "displayName": batch.id, "state": state,
        "createTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(batch.created_at))}
    if batch.state == "ended":
        metadata["output"] = {"inlinedResponses": {"inlinedResponses": [
            {"metadata": {"key": c}, **({"response": r} if e is None else
                                        {"error": {"code": 400, "message": e,
                                                   "status": "INVALID_ARGUMENT"}})}
            for c, r, e in batch.results]}}
    return {"name": f"batches/{batch.id}", "metadata": metadata,
            **({"done": True} if batch.state != "running" else {})}
