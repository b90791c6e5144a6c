"""One codec for journal lines: typed payload -> JSON line, JSON line -> typed `Event`.

    line, chain = encode_line(payload, at=utc_now(), seq=3, prev=chain)  # bytes ending in "\n"
    chain, problem = check_line(line_without_newline, prev)              # tamper evidence
    event = decode_line(record)                           # Event(at, seq, payload, version)
    events = upgrade(events)                              # whole-file fixes for old versions

Every line carries `schema_version`, and since version 2 ends in its `chain`: the BLAKE2b-128 of
the previous line's chain and this line's bytes without it, so each line carries its own
checksum and commits to everything before it (an edited line fails its own check; a deleted,
inserted or reordered line fails the next one's). Version 3 (written now) adds an attempt's
`role` and keeps a turn's cost in `cost_usd`. Older lines still read: version 1 (no chain) and
version 2 (chained, untyped) are upgraded, taking `role` from the event kind and the attempt's
purpose, and marking the attempts of a turn journaled as `final` as `final_answer` (`upgrade`,
which sees the whole file); the attempts of a final request that failed outright cannot be told
apart before version 3 and read as `answer`. A line of an unknown kind (a newer writer, or
another event family such as the audit's) reads as `UnknownEvent`, never dropped.

The case's events are one `EventFamily` (`CASE_EVENTS`, the default); a journal of another
piece passes its own when it reads (`decode_line(record, family)`; the audit's is
`audit.events.AUDIT_EVENTS`), so its lines decode to its typed payloads through this codec
while the transcript never imports that piece.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields, is_dataclass, replace
from types import MappingProxyType
from typing import Any

from parquet_agent.models.protocol import (
    UNVERIFIED,
    AssistantMessage,
    Attempt,
    Cost,
    Reply,
    ToolCall,
    Usage,
)
from parquet_agent.tools.result import Timings
from parquet_agent.transcript.events import (
    PAYLOAD_TYPES,
    JudgeAttempt,
    ModelAttempt,
    ModelTurn,
    ToolCallEvent,
    UnknownEvent,
)

SCHEMA_VERSION = 3  # 3: typed (attempt roles, a turn's cost_usd); 2: chained lines; 1: neither
READABLE_VERSIONS = (1, 2, 3)
CHAINED = 2  # the first version whose lines end in their chain
TYPED = 3  # the first version that records roles and a turn's cost outside its reply
ENVELOPE = ("schema_version", "event", "at", "seq", "chain")
_CHAIN_SUFFIX = re.compile(rb',"chain":"([0-9a-f]{32})"}$')


@dataclass(frozen=True)
class Event:
    """One journal line as read back: the envelope and the typed payload."""

    at: str
    seq: int
    payload: Any
    schema_version: int = SCHEMA_VERSION

    @property
    def event(self) -> str:
        """The event kind as written in the line (for display; test types, not this)."""
        p = self.payload
        return p.event if isinstance(p, UnknownEvent) else type(p).EVENT

    @property
    def data(self) -> dict[str, Any]:
        """The line's fields as JSON values: what a journal of another event family (the
        audit's, read back as `UnknownEvent`) works with. A case's readers use `payload`."""
        p = self.payload
        return dict(p.data) if isinstance(p, UnknownEvent) else plain(p)


@dataclass(frozen=True)
class EventFamily:
    """The payload types of one kind of journal, by event name: what its lines decode to.

    A case's journal (and the run's) is `CASE_EVENTS`. A journal of another piece brings its
    own family when it reads (`read_journal(path, family=...)`): the data-quality audit passes
    its payload types, so its lines read back typed while the transcript never imports the
    audit. A line whose kind is not in the reader's family reads as `UnknownEvent`. A payload
    type is a frozen dataclass naming its kind in `EVENT`; outside the case family its fields
    are decoded as the JSON values they were written as."""

    name: str
    types: Mapping[str, type]
    field_names: Mapping[type, frozenset[str]]

    @classmethod
    def of(cls, name: str, *types: type) -> EventFamily:
        by_kind: dict[str, type] = {}
        for t in types:
            kind = getattr(t, "EVENT", None)
            if not (is_dataclass(t) and isinstance(kind, str)
                    # typeshed's DataclassInstance omits the params every dataclass has
                    and t.__dataclass_params__.frozen):  # type: ignore[attr-defined]
                raise TypeError(f"{t!r} is not a journal payload type (a frozen dataclass "
                                "with an EVENT name)")
            if kind in by_kind:
                raise ValueError(f"event {kind!r} is named by both {by_kind[kind].__name__} "
                                 f"and {t.__name__} in the {name} family")
            by_kind[kind] = t
        names = {t: frozenset(f.name for f in fields(t)) for t in types}
        return cls(name, MappingProxyType(by_kind), MappingProxyType(names))

    def known(self, cls: type, data: dict[str, Any]) -> dict[str, Any]:
        """The fields of `data` that `cls` has (envelope keys and a newer writer's dropped)."""
        names = self.field_names[cls]
        return {k: v for k, v in data.items() if k in names}


CASE_EVENTS = EventFamily.of("case", *PAYLOAD_TYPES)


# -- records the models piece defines -----------------------------------------------------------


def _tool_call(d: dict[str, Any]) -> ToolCall:
    return ToolCall(id=d["id"], name=d["name"], arguments=d.get("arguments") or {},
                    raw_arguments=d.get("raw_arguments"), wire_id=d.get("wire_id"),
                    arguments_error=d.get("arguments_error"))


_UNRECORDED = "_unrecorded"  # an instance attribute, not a field: never compared, never in asdict
_USAGE_FIELDS = frozenset(f.name for f in fields(Usage))


def usage_from_dict(d: dict[str, Any] | None) -> Usage:
    """A `Usage` from its JSON form. A field the journal did not record (a line written before
    the field existed: schema 1 has no `cache_write_tokens`) reads as None like one the provider
    did not report, but the record remembers it was absent (`unrecorded`), so `plain` writes
    it back without the key and "not recorded" stays apart from null."""
    d = d or {}
    usage = Usage(**d)
    missing = _USAGE_FIELDS.difference(d)
    if missing:
        object.__setattr__(usage, _UNRECORDED, frozenset(missing))  # frozen: set it as init would
    return usage


def unrecorded(record: Any) -> frozenset[str]:
    """The fields of a record read from a journal that the journal did not record."""
    return vars(record).get(_UNRECORDED, frozenset())


def _provider(value: Any) -> str:
    """A reply's provider as recorded; a line that names none is unverified."""
    return value if isinstance(value, str) else UNVERIFIED


def reply_from_dict(d: dict[str, Any]) -> Reply:
    """A `Reply` from its JSON form (nested records included)."""
    message = d.get("message") or {}
    return Reply(
        text=d.get("text"),
        tool_calls=tuple(_tool_call(c) for c in d.get("tool_calls") or ()),
        finish_reason=d.get("finish_reason"),
        response_id=d.get("response_id"),
        model=d.get("model"),
        provider=_provider(d.get("provider")),
        usage=usage_from_dict(d.get("usage")),
        message=AssistantMessage(
            text=message.get("text"),
            tool_calls=tuple(_tool_call(c) for c in message.get("tool_calls") or ()),
            provider_data=message.get("provider_data"),
        ),
        block_reason=d.get("block_reason"),
        block_message=d.get("block_message"),
    )


_ATTEMPT_FIELDS = tuple(f.name for f in fields(Attempt))
_ATTEMPT_TUPLES = frozenset(f.name for f in fields(Attempt) if "tuple" in str(f.type))


def attempt_from_dict(d: dict[str, Any]) -> Attempt:
    """An `Attempt` from its JSON form. Keys the record does not have (a newer writer) are
    dropped; JSON lists become the tuples the record declares."""
    values: dict[str, Any] = {}
    for name in _ATTEMPT_FIELDS:
        if name not in d:
            continue
        value = d[name]
        if name in _ATTEMPT_TUPLES and isinstance(value, list):
            value = tuple(value)
        values[name] = value
    values["usage"] = usage_from_dict(d.get("usage"))
    values["cost"] = Cost(**(d.get("cost") or {"usd": None, "source": "unknown"}))
    return Attempt(**values)


# -- encoding -----------------------------------------------------------------------------------


_LEAVES = (str, int, float, bool, type(None))


def plain(record: Any) -> Any:
    """A record as the JSON value it is written as (dicts and lists; tuples become lists), so
    a value built in memory compares equal to the same value read back from a file.

    `dataclasses.asdict` would do, but it deep-copies every leaf: ten times slower on the
    thousands of events an export reads. The records here are plain frozen dataclasses (no
    slots, no init=False fields), so `vars()` holds exactly their fields, in order; less the
    fields a journal did not record (`usage_from_dict`), so a record reads back as written."""
    if type(record) in _LEAVES:
        return record
    if hasattr(record, "__dataclass_fields__"):
        record = vars(record)
        if _UNRECORDED in record:
            left_out = record[_UNRECORDED] | {_UNRECORDED}
            record = {k: v for k, v in record.items() if k not in left_out}
    if isinstance(record, dict):
        return {k: v if type(v) in _LEAVES else plain(v) for k, v in record.items()}
    if isinstance(record, (list, tuple)):
        return [v if type(v) in _LEAVES else plain(v) for v in record]
    return record


def encode(payload: Any) -> tuple[str, dict[str, Any]]:
    """(event kind, JSON-able fields) of a payload."""
    if isinstance(payload, UnknownEvent):
        return payload.event, dict(payload.data)
    kind = getattr(type(payload), "EVENT", None)
    # a case's events are PAYLOAD_TYPES; other journals (the data-quality audit's) bring their
    # own frozen records with an EVENT name, written the same way and read back as UnknownEvent
    if not isinstance(kind, str) or not hasattr(payload, "__dataclass_fields__"):
        raise TypeError(f"{type(payload).__name__} is not a journal event payload")
    return kind, plain(payload)


def _chain(prev: str, body: bytes) -> str:
    return hashlib.blake2b(prev.encode("ascii") + b"\n" + body, digest_size=16).hexdigest()


def frame_line(record: dict[str, Any], prev: str) -> tuple[bytes, str]:
    """One journal line (without its newline) for `record`, ending in its chain over `prev`
    (the chain of the line before; "" for the first); and that chain."""
    body = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str).encode()
    chain = _chain(prev, body)
    return body[:-1] + b',"chain":"' + chain.encode("ascii") + b'"}', chain


def encode_line(payload: Any, *, at: str, seq: int, prev: str) -> tuple[bytes, str]:
    """One journal line (ending in "\n"): envelope, the payload's fields, then its chain; and
    that chain."""
    kind, data = encode(payload)
    record = {"schema_version": SCHEMA_VERSION, "event": kind, "at": at, "seq": seq}
    record.update(data)
    line, chain = frame_line(record, prev)
    return line + b"\n", chain


def stored_chain(line: bytes) -> str | None:
    """The chain a line ends in, read from its form only (None: it has none)."""
    found = _CHAIN_SUFFIX.search(line)
    return found.group(1).decode("ascii") if found else None


def check_line(line: bytes, prev: str | None) -> tuple[str | None, str | None]:
    """(this line's chain, the problem with it or None), for a line without its newline.
    `prev` None: the line before was unreadable, so only the line's own form can be checked."""
    found = _CHAIN_SUFFIX.search(line)
    if found is None:
        return None, "has no chain (edited, or written by another program)"
    chain = found.group(1).decode("ascii")
    if prev is not None and _chain(prev, line[: found.start()] + b"}") != chain:
        return chain, ("does not match its chain: it was edited, or a line before it was "
                       "removed, inserted or reordered")
    return chain, None


# -- decoding -----------------------------------------------------------------------------------


_TIMINGS_FIELDS = frozenset(f.name for f in fields(Timings))


def _attempt_event(cls: type, data: dict[str, Any], version: int) -> ModelAttempt:
    attempt = attempt_from_dict(data.get("attempt") or {})
    role = data.get("role")
    if version < TYPED or role is None:
        role = ("judge" if cls is JudgeAttempt else
                "health" if attempt.purpose == "health" else "answer")
    carried = data.get("tool_results")
    return cls(label=data.get("label") or attempt.label, attempt=attempt, role=role,
               tool_results=tuple(carried) if isinstance(carried, list) else None)


def _turn_event(data: dict[str, Any], version: int) -> ModelTurn:
    values = CASE_EVENTS.known(ModelTurn, data)
    reply = dict(data.get("reply") or {})
    if version < TYPED:  # versions 1 and 2 kept the turn's cost inside the reply
        values["cost_usd"] = reply.pop("_cost_usd", None)
    values["reply"] = reply_from_dict(reply)
    return ModelTurn(**values)


def _tool_event(data: dict[str, Any]) -> ToolCallEvent:
    values = CASE_EVENTS.known(ToolCallEvent, data)
    timings = data.get("timings")
    values["timings"] = (Timings(**{k: v for k, v in timings.items() if k in _TIMINGS_FIELDS})
                         if timings else None)
    return ToolCallEvent(**values)


def decode_payload(kind: str, data: dict[str, Any], version: int = SCHEMA_VERSION,
                   family: EventFamily = CASE_EVENTS) -> Any:
    """The typed payload of one line's fields (envelope keys, if still there, are ignored):
    `family`'s type for `kind`, or `UnknownEvent` when the family has none."""
    cls = family.types.get(kind)
    if cls is None:
        return UnknownEvent(kind, {k: v for k, v in data.items() if k not in ENVELOPE})
    if family is CASE_EVENTS:  # records nested in a case's events, and older versions' forms
        if issubclass(cls, ModelAttempt):
            return _attempt_event(cls, data, version)
        if cls is ModelTurn:
            return _turn_event(data, version)
        if cls is ToolCallEvent:
            return _tool_event(data)
    return cls(**family.known(cls, data))


def decode_line(record: dict[str, Any], family: EventFamily = CASE_EVENTS) -> Event:
    """A parsed JSON line -> `Event` whose payload is of `family` (or `UnknownEvent`); raises
    KeyError/TypeError/ValueError when malformed."""
    version = record.get("schema_version", 1)
    if version not in READABLE_VERSIONS:
        raise ValueError(f"journal schema_version {version!r} is newer than this reader "
                         f"({max(READABLE_VERSIONS)}): upgrade parquet_agent to read this run")
    # no payload has a field named like an envelope key: the payload decoders skip them
    return Event(at=record["at"], seq=record["seq"],
                 payload=decode_payload(record["event"], record, version, family),
                 schema_version=version)


def upgrade(events: list[Event]) -> list[Event]:
    """Fixes that need the whole file: untyped (version 1 and 2) attempts of a final turn get
    role `final_answer` (the turn, journaled after its attempts, is what says it was final)."""
    final_labels = {e.payload.label for e in events
                    if e.schema_version < TYPED and isinstance(e.payload, ModelTurn)
                    and e.payload.final}
    if not final_labels:
        return events
    return [replace(e, payload=replace(e.payload, role="final_answer"))
            if (e.schema_version < TYPED and type(e.payload) is ModelAttempt
                and e.payload.role == "answer" and e.payload.label in final_labels) else e
            for e in events]
