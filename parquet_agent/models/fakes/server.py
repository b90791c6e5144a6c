"""A scripted HTTP server on 127.0.0.1 speaking one provider's wire format, for tests.

`FakeServer(wire, script)` is a context manager: entering starts a `ThreadingHTTPServer` on a
random port in a daemon thread, leaving stops it. `base_url` is what to give the SDK (see each
wire module's `base_url(server)`). The script is a list of items consumed one per model request,
or a function `script(ReceivedRequest) -> item`. An item is:

- `FakeReply(...)`: a normal reply, rendered by the wire format (text and/or tool calls, usage,
  gateway fields);
- a `dict`: sent verbatim as the JSON body with status 200;
- a `RawResponse(status, body, content_type)`: exactly these bytes (a recorded real reply, an
  HTML page from a wrong base_url, ...);
- a `Fault(...)`: `http_error(429, retry_after="1")`, `http_error(500)`, `http_error(529)`,
  `DROP` (connection closed without a response), `MALFORMED` (200 with invalid JSON), `EMPTY`
  (no choices / content / candidates), `slow(seconds, reply)`, `echo_key()` (a body echoing the
  request's API key).

Every request received, metadata GETs included, is kept in `requests` (in order) before it is
answered. When a list script runs out the server answers 500 `fake script exhausted`, and
`exhausted` counts such requests so a test can fail on them.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Protocol, Union


@dataclass(frozen=True)
class FakeToolCall:
    name: str
    arguments: dict[str, Any] | str  # a str is sent as-is (OpenAI), e.g. to inject invalid JSON
    id: str | None = None


@dataclass(frozen=True)
class FakeReply:
    text: str | None = None
    tool_calls: tuple[FakeToolCall, ...] = ()
    finish_reason: str | None = None  # default: the wire format's own for text / tool calls
    model: str | None = None  # default: echo the requested model
    provider: str | None = "FakeUpstream"  # OpenAI gateway `provider`; None leaves it out
    input_tokens: int = 12
    output_tokens: int = 7
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    cost: float | None = None  # OpenRouter `usage.cost`
    thought_signature: str | None = None  # Gemini: sent beside each functionCall part
    # real shapes seen in tests/models/fixtures/wire_replay (OpenAI wire unless said otherwise):
    cache_write_tokens: int = 0  # prompt_tokens_details.cache_write_tokens; Anthropic writes
    hidden_tokens: int = 0  # counted only in total_tokens (Gemini's OpenAI endpoint)
    upstream_cost: float | None = None  # OpenRouter BYOK: is_byok and the upstream's cost
    message_extra: dict[str, Any] | None = None  # e.g. DeepSeek reasoning_content


@dataclass(frozen=True)
class RawResponse:
    """A reply sent byte for byte: status, body and content type as given."""

    status: int
    body: bytes
    content_type: str = "application/json"


@dataclass(frozen=True)
class Fault:
    kind: str  # status | drop | malformed | slow | empty | echo_key
    status: int = 500
    retry_after: str | None = None
    delay_s: float = 0.0
    reply: FakeReply | None = None


def http_error(status: int, retry_after: str | None = None) -> Fault:
    return Fault("status", status=status, retry_after=retry_after)


def slow(delay_s: float, reply: FakeReply | None = None) -> Fault:
    return Fault("slow", delay_s=delay_s, reply=reply or FakeReply(text="slow but fine"))


def echo_key(status: int = 200) -> Fault:
    return Fault("echo_key", status=status)


DROP = Fault("drop")
MALFORMED = Fault("malformed", status=200)
EMPTY = Fault("empty", status=200)

Item = Union[FakeReply, Fault, RawResponse, dict]


@dataclass(frozen=True)
class ReceivedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    json: Any = None


class WireFormat(Protocol):
    """What a wire module supplies to the server."""

    name: str

    def is_model_call(self, method: str, path: str) -> bool: ...
    def render(self, reply: FakeReply, request: ReceivedRequest) -> dict: ...
    def render_empty(self, request: ReceivedRequest) -> dict: ...
    def render_error(self, status: int, message: str) -> dict: ...
    def render_get(self, request: ReceivedRequest) -> tuple[int, dict]: ...
    def api_key(self, request: ReceivedRequest) -> str: ...


class FakeServer:
    """`batches`: a `FakeBatches` that serves the wire format's batch routes (see batches.py)."""

    def __init__(self, wire: WireFormat, script: list[Item] | Callable[[ReceivedRequest], Item],
                 batches=None):
        self.wire = wire
        self.batches = batches
        self._script = script if callable(script) else list(script)
        self._lock = threading.Lock()
        self.requests: list[ReceivedRequest] = []
        self.exhausted = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def model_calls(self) -> list[ReceivedRequest]:
        return [r for r in self.requests if self.wire.is_model_call(r.method, r.path)]

    def __enter__(self) -> "FakeServer":
        server = self

        class Handler(_Handler):
            fake = server

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        httpd.block_on_close = False
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, args=(0.02,),
                                        name=f"fake-{self.wire.name}",
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    # -- called from handler threads ----------------------------------------------------

    def _record(self, req: ReceivedRequest) -> None:
        with self._lock:
            self.requests.append(req)

    def _next(self, req: ReceivedRequest) -> Item | None:
        if callable(self._script):
            return self._script(req)
        with self._lock:
            if not self._script:
                self.exhausted += 1
                return None
            return self._script.pop(0)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeServer
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; without TCP_NODELAY, Nagle plus the
        # peer's delayed ACK adds ~40 ms to some replies and would swamp overhead benchmarks.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def _batch_route(self, req: ReceivedRequest) -> bool:
        if self.fake.batches is None:
            return False
        answer = self.fake.batches.route(self.fake.wire, req)
        if answer is None:
            return False
        status, body, content_type = answer
        self._send(status, body, content_type=content_type)
        return True

    def do_GET(self) -> None:
        req = self._read()
        if self._batch_route(req):
            return
        status, body = self.fake.wire.render_get(req)
        self._send(status, json.dumps(body).encode())

    def do_POST(self) -> None:
        req = self._read()
        if self._batch_route(req):
            return
        wire = self.fake.wire
        if not wire.is_model_call(req.method, req.path):
            self._send(404, json.dumps(wire.render_error(404, f"no route {req.path}")).encode())
            return
        item = self.fake._next(req)
        if item is None:
            self._send(500, json.dumps(wire.render_error(500, "fake script exhausted")).encode())
        elif isinstance(item, dict):
            self._send(200, json.dumps(item).encode())
        elif isinstance(item, RawResponse):
            self._send(item.status, item.body, content_type=item.content_type)
        elif isinstance(item, FakeReply):
            self._send(200, json.dumps(wire.render(item, req)).encode())
        else:
            self._fault(item, req)

    def _fault(self, fault: Fault, req: ReceivedRequest) -> None:
        wire = self.fake.wire
        if fault.kind == "status":
            headers = {"retry-after": fault.retry_after} if fault.retry_after else {}
            # a request id, as real providers put in error bodies: two faults are two bodies
            body = wire.render_error(fault.status, f"injected HTTP {fault.status} "
                                     f"(request {len(self.fake.requests)})")
            self._send(fault.status, json.dumps(body).encode(), headers)
        elif fault.kind == "drop":
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        elif fault.kind == "malformed":
            self._send(200, b'{"id": "broken", "choices": [ {"message": ')
        elif fault.kind == "empty":
            self._send(200, json.dumps(wire.render_empty(req)).encode())
        elif fault.kind == "slow":
            time.sleep(fault.delay_s)
            self._send(200, json.dumps(wire.render(fault.reply or FakeReply(text="ok"), req)).encode())
        elif fault.kind == "echo_key":
            key = wire.api_key(req)
            if fault.status == 200:
                body = wire.render(FakeReply(text=f"your key is {key}"), req)
            else:
                body = wire.render_error(fault.status, f"Incorrect API key provided: {key}")
            self._send(fault.status, json.dumps(body).encode(), {"x-echo": key})
        else:
            raise ValueError(f"unknown fault kind {fault.kind!r}")

    def _read(self) -> ReceivedRequest:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        req = ReceivedRequest(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            json=parsed,
        )
        self.fake._record(req)
        return req

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None, *,
              content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
