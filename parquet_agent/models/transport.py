"""The recording transport: every HTTP exchange is on disk before anything interprets it.

`RecordingTransport(inner, secrets=...)` wraps an `httpx2` transport and is passed to the SDK
client (`httpx2.Client(transport=...)`). An adapter opens `transport.exchange(sink, name)`
around one SDK call (one attempt; SDK retries are off); inside it, each HTTP request is

1. scrubbed (`scrub.Scrubber`: a known key in the body, in any spelling it matches, is
   replaced before the request leaves the process, so no provider gets another's key) and
   written to `sink` as `<name>.request.json` (method, URL, headers and the exact body as sent)
   with credential headers and parameters removed, **before** it is sent;
2. sent through `inner`; the response body is read in full;
3. written as `<name>.response.json` (status, headers, body) **before** the SDK sees it. A
   transport failure (timeout, dropped connection) is written there too, as `error`.

The SDK then parses exactly the bytes that were written (content-decoded; a credential echoed in
the body is replaced by `REDACTED` in both, in every spelling `scrub.Scrubber` matches: JSON
escapes at any depth, percent, base64, hex, split across adjacent JSON strings; so the SDK's
decoded error text, journals, case records and reports never see it). Credentials are: `Authorization`, `x-api-key`,
`x-goog-api-key`, `api-key` and similar headers, `key=`-style query parameters, and every
`secrets` value wherever it appears. A request outside an `exchange` raises: nothing goes out
unrecorded. The open exchange is per thread, so one transport serves concurrent calls.

Replay: when the sink is a `ReplaySink` (a case running again after it stopped between a paid
response and its journal line; see `store.unclaimed`), a request whose label and exact body match
such a recorded exchange is answered from the record: nothing is sent, nothing new is written,
the attempt points at the old records and `Exchange.replayed` is set.

Bodies are stored as UTF-8 text when they decode strictly (JSON escaping keeps them exact),
else base64; `body_sha256` is over the bytes as sent / as parsed.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Sequence

import httpx2

from parquet_agent.files import utc_now
from parquet_agent.models.protocol import RawSink
from parquet_agent.models.scrub import REDACTED, Scrubber

SCHEMA_VERSION = 1
_CREDENTIAL_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "x-goog-api-key",
        "api-key",
        "openai-api-key",
        "anthropic-api-key",
        "cookie",
        "set-cookie",
    }
)
_CREDENTIAL_PARAMS = frozenset({"key", "api_key", "apikey", "api-key", "access_token", "token"})


@dataclass
class Exchange:
    """What the transport saw during one attempt. Mutable scratch owned by one thread; the
    adapter turns it into a frozen `Attempt`."""

    sink: RawSink
    name: str
    request_path: str | None = None
    response_path: str | None = None
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    error: str | None = None  # transport-level failure (timeout, dropped connection)
    error_kind: str | None = None  # "timeout" | "network"
    http_count: int = 0
    sent_at: float | None = None  # perf_counter of the first send
    # the machine refused a record (disk full, read-only): the SDK would wrap it as a connection
    # error and the adapter retry; the adapter raises this instead
    fault: OSError | None = None
    replayed: bool = False  # answered from a recorded exchange (see ReplaySink)


class ReplaySink:
    """A RawSink over `sink` that also holds the recorded exchanges a stopped case left
    unjournaled (`store.unclaimed`: `(label, request body sha256) -> exchange` with
    `request_path`, `response_path`, `response`). Each is handed out once."""

    def __init__(self, sink: RawSink, recorded: dict):
        self.sink = sink
        self._recorded = dict(recorded)
        self._lock = threading.Lock()

    def write(self, name: str, data: bytes) -> str:
        return self.sink.write(name, data)

    def take_recorded(self, label: str, body_sha256: str):
        with self._lock:
            return self._recorded.pop((label, body_sha256), None)


class UnrecordedRequestError(RuntimeError):
    """An SDK sent a request outside `RecordingTransport.exchange`: a bug in the caller."""


class RecordingTransport(httpx2.BaseTransport):
    """Wrap `inner`, recording each request and response into the open exchange's sink."""

    def __init__(self, inner: httpx2.BaseTransport, *, secrets: Sequence[str] = ()):
        self._inner = inner
        # Short values would redact ordinary words; real keys are long (see Scrubber).
        self.scrubber = Scrubber(secrets)
        self._local = threading.local()

    @contextmanager
    def exchange(self, sink: RawSink, name: str) -> Iterator[Exchange]:
        """Record every request made by this thread inside the block under `name`."""
        previous = getattr(self._local, "current", None)
        current = Exchange(sink=sink, name=name)
        self._local.current = current
        try:
            yield current
        finally:
            self._local.current = previous

    # -- httpx2 transport API -------------------------------------------------------------

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        ex: Exchange | None = getattr(self._local, "current", None)
        if ex is None:
            raise UnrecordedRequestError(
                f"{request.method} {request.url.copy_with(query=None)} was attempted outside a "
                "recorded exchange; wrap the SDK call in RecordingTransport.exchange(...)"
            )
        ex.http_count += 1
        name = ex.name if ex.http_count == 1 else f"{ex.name}.http-{ex.http_count}"
        original = request.read()
        body = self._scrub(original)
        if body != original:  # a key in the body never leaves the process
            request = _with_body(request, body)
        recorded = _recorded_for(ex, body) if ex.http_count == 1 else None
        if recorded is not None:
            return self._replay(request, ex, recorded)
        ex.request_path = _write(ex, f"{name}.request.json",
                                 self._request_record(request, body, body != original))
        ex.sent_at = ex.sent_at or time.perf_counter()
        try:
            response = self._inner.handle_request(request)
            try:
                data = response.read()  # content-decoded bytes: what the SDK will parse
            finally:
                response.close()
        except httpx2.TransportError as exc:
            ex.error = f"{type(exc).__name__}: {exc}"
            ex.error_kind = "timeout" if isinstance(exc, httpx2.TimeoutException) else "network"
            ex.response_path = _write(
                ex, f"{name}.response.json", self._failure_record(request, ex.error, ex.error_kind)
            )
            raise
        data = self._scrub(data)
        headers = [
            (k, v)
            for k, v in response.headers.multi_items()
            if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
        ]
        headers.append(("content-length", str(len(data))))
        ex.status = response.status_code
        ex.headers = {k.lower(): v for k, v in headers}
        ex.body = data
        ex.error = ex.error_kind = None
        ex.response_path = _write(
            ex, f"{name}.response.json", self._response_record(request, response, headers, data)
        )
        extensions = {
            k: v for k, v in response.extensions.items() if k in ("http_version", "reason_phrase")
        }
        return httpx2.Response(
            response.status_code,
            headers=headers,
            content=data,
            request=request,
            extensions=extensions,
        )

    def close(self) -> None:
        self._inner.close()

    def _replay(self, request: httpx2.Request, ex: Exchange, recorded) -> httpx2.Response:
        """The recorded response, as the SDK would have received it."""
        record = json.loads(recorded.response)
        data = read_body(record)
        headers = [(k, v) for k, v in record.get("headers", [])]
        ex.request_path, ex.response_path = recorded.request_path, recorded.response_path
        ex.status, ex.headers, ex.body = record["status"], {k.lower(): v for k, v in headers}, data
        ex.sent_at = ex.sent_at or time.perf_counter()
        ex.replayed = True
        return httpx2.Response(record["status"], headers=headers, content=data, request=request)

    # -- records ------------------------------------------------------------------------

    def _scrub(self, data: bytes) -> bytes:
        return self.scrubber.bytes(data)

    def _scrub_text(self, text: str) -> str:
        return self.scrubber.text(text)

    def _headers(self, items: list[tuple[str, str]]) -> list[list[str]]:
        out = []
        for k, v in items:
            if k.lower() in _CREDENTIAL_HEADERS:
                v = REDACTED
            out.append([k, self._scrub_text(v)])
        return out

    def _url(self, url: httpx2.URL) -> str:
        params = [
            (k, REDACTED if k.lower() in _CREDENTIAL_PARAMS else v)
            for k, v in url.params.multi_items()
        ]
        clean = url.copy_with(query=None) if not params else url.copy_with(params=params)
        return self._scrub_text(str(clean))

    def _request_record(self, request: httpx2.Request, body: bytes, redacted: bool) -> bytes:
        record = {
            "schema_version": SCHEMA_VERSION,
            "kind": "http_request",
            "recorded_at": utc_now(),
            "method": request.method,
            "url": self._url(request.url),
            "headers": self._headers(request.headers.multi_items()),
            "body_sha256": hashlib.sha256(body).hexdigest(),
            **_body_fields(body),
        }
        if redacted:
            record["note"] = ("a credential value inside the request body was redacted before "
                              "the request was sent")
        return _dump(record)

    def _response_record(self, request, response, headers, data: bytes) -> bytes:
        return _dump(
            {
                "schema_version": SCHEMA_VERSION,
                "kind": "http_response",
                "recorded_at": utc_now(),
                "method": request.method,
                "url": self._url(request.url),
                "status": response.status_code,
                "http_version": response.extensions.get("http_version", b"").decode() or None,
                "headers": self._headers(headers),
                "body_sha256": hashlib.sha256(data).hexdigest(),
                **_body_fields(data),
            }
        )

    def _failure_record(self, request, error: str, kind: str) -> bytes:
        return _dump(
            {
                "schema_version": SCHEMA_VERSION,
                "kind": "http_response",
                "recorded_at": utc_now(),
                "method": request.method,
                "url": self._url(request.url),
                "status": None,
                "error": self._scrub_text(error),
                "error_kind": kind,
            }
        )


def _recorded_for(ex: Exchange, body: bytes):
    """The recorded exchange a ReplaySink holds for this request, if any."""
    take = getattr(ex.sink, "take_recorded", None)
    label, dot, _ = ex.name.rpartition(".attempt-")
    if take is None or not dot:
        return None
    return take(label, hashlib.sha256(body).hexdigest())


def _write(ex: Exchange, name: str, data: bytes) -> str:
    try:
        return ex.sink.write(name, data)
    except OSError as exc:
        ex.fault = exc
        raise


def _with_body(request: httpx2.Request, body: bytes) -> httpx2.Request:
    """`request` carrying `body` instead (its content-length follows)."""
    headers = [(k, v) for k, v in request.headers.multi_items() if k.lower() != "content-length"]
    return httpx2.Request(request.method, request.url, headers=headers, content=body,
                          extensions=request.extensions)


def _body_fields(data: bytes) -> dict:
    try:
        return {"body_encoding": "utf-8", "body": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"body_encoding": "base64", "body": base64.b64encode(data).decode("ascii")}


def _dump(record: dict) -> bytes:
    return json.dumps(record, ensure_ascii=False, indent=1).encode("utf-8")



def read_body(record: dict) -> bytes:
    """The exact body bytes of a request/response record written by this module."""
    if record.get("body") is None:
        return b""
    if record.get("body_encoding") == "base64":
        return base64.b64decode(record["body"])
    return record["body"].encode("utf-8")
