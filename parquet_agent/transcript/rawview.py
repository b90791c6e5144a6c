"""Read raw request/response files of a run for the exports, without interpreting them away.

    view = raw_file(store, "raw/Q001__m__sql/turn-02.attempt-01.request.json")
    view.inline()              # {"path", "bytes", "sha256", "kind", "text"}: exact, for case JSON
    wire_body(view)            # the provider's JSON body (HTTP envelope) or the offline request
    first_user_text(body)      # the question as the model got it (any of the wire formats)
    judge_input(body)          # the JUDGE_INPUT_JSON block of a judge request, parsed
    sent_tool_results(body)    # call ids of tool results a request carried, and id-less ones

Raw files are JSON records written by `models.transport` (HTTP envelopes: method, url, headers
without credentials and the exact body as UTF-8 text or base64) or by the offline models
(`models.scripted`: the request/reply as plain JSON). `text` in `inline()` is the file decoded
as UTF-8, so `text.encode()` gives back the exact stored bytes (the sha256 proves it); a file
that is not UTF-8 gets `text = None` and `base64` instead.

Wire formats differ per provider; the helpers here walk the JSON generically (OpenAI `messages`
with `role`, Anthropic content blocks, Gemini `contents`/`parts`, offline `request.messages`),
so a new adapter that keeps these shapes needs no change here.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Iterator

JUDGE_MARKER = "JUDGE_INPUT_JSON"  # parquet_agent.judge writes it before the judge's JSON block


@dataclass(frozen=True)
class RawFile:
    """One raw file as stored: exact bytes plus its parsed JSON record (None when not JSON)."""

    path: str
    data: bytes
    record: dict[str, Any] | None

    @property
    def kind(self) -> str:
        if isinstance(self.record, dict) and isinstance(self.record.get("kind"), str):
            return self.record["kind"]
        return "unknown"

    @property
    def sha256(self) -> str:
        return "sha256:" + hashlib.sha256(self.data).hexdigest()

    def inline(self) -> dict[str, Any]:
        """The exact file for a case record: text when UTF-8, else base64."""
        out: dict[str, Any] = {"path": self.path, "bytes": len(self.data), "sha256": self.sha256,
                               "kind": self.kind}
        try:
            out["text"] = self.data.decode("utf-8")
        except UnicodeDecodeError:
            out["text"] = None
            out["base64"] = base64.b64encode(self.data).decode("ascii")
        return out


def parse_record(path: str, data: bytes) -> RawFile:
    try:
        record = json.loads(data)
    except ValueError:
        record = None
    return RawFile(path, data, record if isinstance(record, dict) else None)


def wire_body(raw: RawFile) -> Any:
    """The JSON the model saw or sent: an HTTP envelope's body, or an offline request/reply."""
    record = raw.record
    if record is None:
        return None
    if "body" in record and record.get("kind", "").startswith("http_"):
        body = record.get("body")
        if body is None:
            return None
        if record.get("body_encoding") == "base64":
            try:
                body = base64.b64decode(body).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                return None
        try:
            return json.loads(body)
        except ValueError:
            return body
    for key in ("request", "reply", "response"):
        if key in record:
            return record[key]
    return record


def _walk(value: Any) -> Iterator[dict[str, Any]]:
    """Every dict in a JSON value, depth first, in document order."""
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item)


def _text_of(message: dict[str, Any]) -> str | None:
    """Text of one message in any of the wire shapes (str content, content blocks, parts)."""
    for key in ("content", "text", "parts"):
        value = message.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list):
            texts = [p["text"] for p in value if isinstance(p, dict)
                     and isinstance(p.get("text"), str)]
            if texts:
                return "\n".join(texts)
    return None


def first_user_text(body: Any) -> str | None:
    """The first user message's text in a request body: the question an agent was asked."""
    for item in _walk(body):
        if item.get("role") == "user":
            text = _text_of(item)
            if text is not None:
                return text
    return None


def judge_input(body: Any) -> dict[str, Any] | None:
    """The judge's input block (question, reference, gold and tool evidence), or None."""
    for item in _walk(body):
        for value in item.values():
            if isinstance(value, str) and JUDGE_MARKER in value:
                try:
                    block = value.split("```json", 1)[1].rsplit("```", 1)[0]
                    data = json.loads(block)
                except (IndexError, ValueError):
                    continue
                if isinstance(data, dict):
                    return data
    return None


def sent_tool_results(body: Any) -> tuple[set[str], int]:
    """Call ids of the tool results in a request, and how many results carry no id (Gemini
    `functionResponse` parts are matched by position)."""
    ids: set[str] = set()
    anonymous = 0
    for item in _walk(body):
        if item.get("role") == "tool":
            call_id = item.get("tool_call_id", item.get("call_id"))
            if isinstance(call_id, str):
                ids.add(call_id)
            else:
                anonymous += 1
        elif item.get("type") == "tool_result" and isinstance(item.get("tool_use_id"), str):
            ids.add(item["tool_use_id"])
        elif isinstance(item.get("functionResponse"), dict):
            call_id = item["functionResponse"].get("id")
            if isinstance(call_id, str):
                ids.add(call_id)
            else:
                anonymous += 1
    return ids, anonymous


# -- raw names --------------------------------------------------------------------------------

# Requests are journaled with their attempt, after the bytes are durable. A process killed in
# between leaves a request that only the raw store knows, under the name `models.transport`
# gives it: `<label>.attempt-NN.request.json` (`~N` for a rewrite). This is the one place that
# reads those names; everything the journal holds is read from the journal.
_REQUEST_NAME = re.compile(r"^(?:raw/)?(?P<label>.+)\.attempt-(?P<number>\d+)\.request\.json"
                           r"(?:~\d+)?$")
_ANSWER_LABEL = re.compile(r"/turn-(\d+)$")


@dataclass(frozen=True)
class RequestName:
    path: str
    label: str
    number: int  # attempt number
    turn: int | None  # answer turn number; None for judge and health requests


def request_name(path: str) -> RequestName | None:
    """What a raw request's name says (None for anything that is not a request)."""
    m = _REQUEST_NAME.match(path)
    if m is None:
        return None
    turn = _ANSWER_LABEL.search(m.group("label"))
    return RequestName(path, m.group("label"), int(m.group("number")),
                       int(turn.group(1)) if turn else None)
