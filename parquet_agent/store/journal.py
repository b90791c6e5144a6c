"""Append-only journal files: one JSON-lines file per case, plus one for the run.

    journal = run.journal(case_id)                    # a Journal, thread-safe
    journal.append(CaseStarted(case_id=..., question_id=..., model=..., strategy=...))
    events = read_journal(path)                       # JournalRead(events, torn, damaged, ...)

Each line is one event: `{"schema_version", "event", "at" (UTC), "seq" (0, 1, ... per file),
...payload, "chain"}`, written with one `write` and `fdatasync` before `append` returns. The
payloads and the line codec (its chain, and its reader of older schema versions) are
`parquet_agent.transcript`'s; this module owns the files. A process killed mid-append leaves at
most a torn last line: readers skip it and report it in `JournalRead.torn`; opening the journal
for writing again moves it to `<file>.torn` and truncates, so new events never follow a broken
line.

Tamper evidence: `read_journal` skips a line that does not parse, does not decode or whose chain
does not match, and names it in `JournalRead.damaged`: the rest of the journal still reads. A
torn write is never whole JSON, so a whole last line that does not decode is damage, not a torn
write. `head` (the last chain) is recorded in the run journal when a case is sealed
(`CaseSealed`), so rewriting a whole case journal with a new valid chain still differs from the
recorded head. Lines of schema_version 1 (runs written before the chain) read unchecked.

The run journal `journal/_run.jsonl` holds `run_started`, `model_attempt` (health checks, role
`health`), `corpus_drift`, `case_sealed` (a case journal's line count and chain head) and
`run_finished`.
"""

from __future__ import annotations

import json
import threading
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parquet_agent.files import (
    DurableAppender,
    atomic_write_bytes,
    fsync_dir,
    truncate_torn_tail,
    utc_now,
)
from parquet_agent.store.bitflip import flip_bit
from parquet_agent.store.sealing import seal, unseal
from parquet_agent.transcript import (
    CASE_EVENTS,
    Event,
    EventFamily,
    decode_line,
    encode,
    encode_line,
    upgrade,
)
from parquet_agent.transcript.codec import (
    CHAINED,
    SCHEMA_VERSION,
    check_line,
    stored_chain,
)

RUN_JOURNAL = "_run"  # journal/_run.jsonl; case ids always contain "__", so no clash


@dataclass(frozen=True)
class JournalRead:
    events: tuple[Event, ...]
    torn: str | None  # the torn last line's text (None when the file ended cleanly)
    path: Path | None = None
    damaged: tuple[str, ...] = ()  # "<file>: line N ..." for each line skipped as damaged
    head: str | None = None  # the chain of the last line (None: no chained line)
    lines: int = 0  # whole lines in the file, damaged ones included
    chains: tuple[str | None, ...] = ()  # each whole line's stored chain (None: none readable)


@dataclass
class _Parsed:
    events: list[Event] = field(default_factory=list)
    torn: str | None = None
    good: int = 0  # byte length of the whole lines (what a writer keeps)
    damaged: list[str] = field(default_factory=list)
    head: str | None = None
    lines: int = 0
    last_chain: str = ""  # the chain the next line written continues from
    chains: list[str | None] = field(default_factory=list)


_NOT_JSON = "is not JSON"


def _decode(line: bytes, family: EventFamily = CASE_EVENTS) -> tuple[Event | None, str | None]:
    """(the event of one line, or None and why it is not one)."""
    try:
        record = json.loads(line)
    except ValueError:
        return None, _NOT_JSON
    version = record.get("schema_version", 1) if isinstance(record, dict) else None
    if isinstance(version, int) and version > SCHEMA_VERSION:
        return None, (f"was written by a newer version (journal schema_version {version}; this "
                      f"reader knows up to {SCHEMA_VERSION}): upgrade parquet_agent to read it")
    try:
        return decode_line(record, family), None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return None, f"is not a valid journal event ({type(exc).__name__}: {exc})"


def _parse(path: Path, raw: bytes, family: EventFamily = CASE_EVENTS) -> _Parsed:
    """Events, torn tail, damaged lines and chain head of one journal's bytes."""
    out = _Parsed()
    lines = raw.split(b"\n")
    tail = lines.pop()  # after the last "\n": empty for a clean file
    lines, tail, out.damaged = _undo_flips(path.name, lines, tail)
    prev: str | None = ""
    for number, line in enumerate(lines, 1):
        event, why = _decode(line, family)
        if event is None:
            if number == len(lines) and not tail and why == _NOT_JSON:
                # a torn write can end in a newline only if the newline was part of it; treat a
                # last line that is not JSON the same as a line cut short (a torn write is never
                # whole JSON: a whole last line that does not decode is damage)
                out.torn = line.decode("utf-8", "replace")
                break
            out.damaged.append(f"{path.name}: line {number} {why}; skipped")
            prev = stored_chain(line)
            out.chains.append(prev)
            out.good += len(line) + 1
            out.lines += 1
            continue
        out.good += len(line) + 1
        out.lines += 1
        if event.schema_version >= CHAINED:
            chain, problem = check_line(line, prev)
            prev = chain
            out.chains.append(chain)
            if problem is not None:
                out.damaged.append(f"{path.name}: line {number} ({event.event}, seq {event.seq}) "
                                   f"{problem}; skipped")
                continue
            out.head = chain
        else:
            out.chains.append(None)
        out.events.append(event)
    if tail:
        out.torn = tail.decode("utf-8", "replace")
    out.events = upgrade(out.events)
    out.last_chain = prev or out.head or ""
    return out


_REPAIR_MAX = 16 * 1024  # longer lines: only a newline turned into another byte is looked for
_NEAR_NEWLINE = {0x0A ^ 1 << k: k for k in range(8)}  # byte -> the bit that makes it a newline


def _undo_flips(name: str, lines: list[bytes], tail: bytes) -> tuple[list[bytes], bytes, list]:
    """The lines (and torn tail) as written, where one flipped bit in a chained line (or in
    the newline after it) explains why its chain fails: each candidate flip is checked against
    the chain, which a wrong guess matches with probability 2^-128. Notes name each repair."""
    out: list[bytes] = []
    notes: list[str] = []
    prev: str | None = ""
    i = 0
    while i < len(lines) or (i == len(lines) and tail):
        line = lines[i] if i < len(lines) else tail
        chain, problem = check_line(line, prev)
        fixed = (None if problem is None or prev is None or _unchained(line)
                 else _one_flip(lines, tail, i, prev))
        if fixed is None:
            if i == len(lines):
                break  # the tail stays a torn write
            out.append(line)
            prev = chain if problem is None else stored_chain(line)
            i += 1
            continue
        pieces, used, byte = fixed
        notes.append(f"{name}: line {i + 1} had one flipped bit (its byte {byte}): repaired on "
                     "read; the file on disk is still damaged (restore it from a copy)")
        out += pieces
        prev = stored_chain(pieces[-1])
        if i + used > len(lines):
            return out, b"", notes
        i += used
    return out, tail, notes


def _unchained(line: bytes) -> bool:
    """A line written before the chain (schema 1): nothing to check a repair against. (A line
    that still ends in a chain was chained, whatever its damaged schema_version says.)"""
    if stored_chain(line) is not None:
        return False
    try:
        record = json.loads(line)
    except ValueError:
        return False
    version = record.get("schema_version", 1) if isinstance(record, dict) else None
    return isinstance(version, int) and version < CHAINED


def _one_flip(lines: list[bytes], tail: bytes, i: int, prev: str):
    """(the lines line `i` was, how many stored lines they replace, the byte) or None."""
    for candidate, used, byte in _candidates(lines, tail, i):
        pieces = candidate.split(b"\n")
        chain: str | None = prev
        for piece in pieces:
            chain, problem = check_line(piece, chain)
            if problem is not None or chain is None:
                break
        else:
            return pieces, used, byte
    return None


def _candidates(lines: list[bytes], tail: bytes, i: int):
    """Line `i` (the tail when i == len(lines)) with one bit flipped, each way that can
    matter: (candidate bytes, stored lines it replaces, the byte flipped)."""
    if i == len(lines):  # a torn tail is whole only if its last byte was the newline
        if tail[-1] in _NEAR_NEWLINE:
            yield tail[:-1], 1, len(tail) - 1
        return
    line = lines[i]
    following = lines[i + 1] if i + 1 < len(lines) else None
    if following is not None:  # a flip made a newline: this line and the next were one
        for k in range(8):
            yield line + bytes([0x0A ^ 1 << k]) + following, 2, len(line)
    if len(line) <= _REPAIR_MAX:
        for bit in range(8 * len(line)):
            yield flip_bit(line, bit), 1, bit >> 3
        return
    for at, byte in enumerate(line):  # only a newline that became another byte
        if byte in _NEAR_NEWLINE:
            yield flip_bit(line, 8 * at + _NEAR_NEWLINE[byte]), 1, at


def sealed_path(path: Path) -> Path:
    return path.with_name(path.name + ".gz")


def read_journal(path: str | Path, *, family: EventFamily = CASE_EVENTS) -> JournalRead:
    """Every event of one journal (`x.jsonl`, or its sealed `x.jsonl.gz`), skipping (and
    reporting) a torn last line. `family`: the payload types its lines decode to (a case's by
    default; another piece's journal passes its own, e.g. the audit's)."""
    path = Path(path)
    if path.suffix == ".gz":
        path = path.with_suffix("")
    if path.exists():
        raw = path.read_bytes()
    elif sealed_path(path).exists():
        try:
            raw, repaired = unseal(sealed_path(path).read_bytes())
        except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError
            raw, problem = _salvage_gzip(sealed_path(path).read_bytes())
            repaired = f"the compressed file is damaged ({exc}); {problem}"
        if repaired is not None:
            parsed = _parse(path, raw, family)
            damage = f"{sealed_path(path).name}: {repaired}"
            return JournalRead(tuple(parsed.events), None, path, (damage, *parsed.damaged),
                               parsed.head, parsed.lines, tuple(parsed.chains))
    else:
        return JournalRead((), None, path)
    parsed = _parse(path, raw, family)
    return JournalRead(tuple(parsed.events), parsed.torn, path, tuple(parsed.damaged),
                       parsed.head, parsed.lines, tuple(parsed.chains))


def _salvage_gzip(data: bytes) -> tuple[bytes, str]:
    """The whole lines a damaged gzip stream still gives, and what was lost."""
    out = bytearray()
    try:
        decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
        for start in range(0, len(data), 4096):
            out += decoder.decompress(data[start:start + 4096])
    except zlib.error:
        pass
    kept = bytes(out[: out.rfind(b"\n") + 1])
    count = kept.count(b"\n")
    return kept, f"the {count} lines before the damage were read, the rest is lost"


class Journal:
    """Appends events to one journal file; thread-safe; repairs a torn tail when opened.

    `seal()` (called by `Run.journal` after `case_finished`) replaces `x.jsonl` by the same
    lines gzip-compressed in `x.jsonl.gz`: a finished case costs a third of the bytes. Appending
    to a sealed journal (re-judging) unseals it first. A crash between the two steps leaves both
    files; the plain one wins.
    """

    def __init__(self, path: str | Path, *, family: EventFamily = CASE_EVENTS):
        self.path = Path(path)
        self.family = family  # what the lines already there decode to
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._open()

    def _open(self) -> DurableAppender:
        sealed = sealed_path(self.path)
        self.was_sealed = sealed.exists()  # an append to a finished case seals it again
        if sealed.exists():
            if not self.path.exists():
                atomic_write_bytes(self.path, unseal(sealed.read_bytes())[0])
            sealed.unlink()
            fsync_dir(self.path.parent)
        parsed = _Parsed()
        if self.path.exists():
            raw = self.path.read_bytes()
            parsed = _parse(self.path, raw, self.family)
            if parsed.good < len(raw):  # keep the torn bytes for the audit, then cut them off
                cut = truncate_torn_tail(self.path, parsed.good)
                with open(self.path.with_name(self.path.name + ".torn"), "ab") as f:
                    f.write(cut + b"\n")
                fsync_dir(self.path.parent)
        events = parsed.events
        self._seq = max(events[-1].seq + 1 if events else 0, parsed.lines)
        self._prev = parsed.last_chain
        self.lines = parsed.lines
        out = DurableAppender(self.path)
        self._out: DurableAppender | None = out
        return out

    def append(self, payload: Any) -> Event:
        """Write one event durably and return it as read back would show it."""
        return self.append_many([payload])[0]

    def append_many(self, payloads: list[Any]) -> list[Event]:
        """Write several events with one write and one fdatasync (e.g. a turn's attempts and
        the turn itself). A crash keeps a prefix of them, never a hole."""
        for payload in payloads:
            encode(payload)  # raises TypeError for a non-payload before anything is written
        with self._lock:
            out = self._out if self._out is not None else self._open()  # sealed: unseal
            at, lines, events = utc_now(), [], []
            prev = self._prev
            for offset, payload in enumerate(payloads):
                seq = self._seq + offset
                line, prev = encode_line(payload, at=at, seq=seq, prev=prev)
                lines.append(line)
                events.append(Event(at, seq, payload))
            if lines:
                out.append(b"".join(lines))
                self._seq += len(lines)
                self._prev = prev
                self.lines += len(lines)
        return events

    @property
    def head(self) -> str:
        """The chain of the last line written (what `CaseSealed` records)."""
        return self._prev

    def seal(self) -> None:
        """Store the journal gzip-compressed (`.jsonl.gz`, see `store.sealing`) and close it."""
        with self._lock:
            if self._out is None:
                return
            self._out.close()
            self._out = None
            data = self.path.read_bytes()
            atomic_write_bytes(sealed_path(self.path), seal(data))
            self.was_sealed = True
            # no fsync after the unlink: if it is lost in a crash, both files exist and the
            # plain one wins, with the same lines
            self.path.unlink()

    def close(self) -> None:
        with self._lock:
            if self._out is not None:
                self._out.close()
                self._out = None
