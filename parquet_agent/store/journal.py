"""Append-only journals of typed events: one JSON-lines file per case, plus one for the run.

    journal = run.journal(case_id)                    # a Journal, thread-safe
    journal.append(CaseStarted(case_id=..., question_id=..., model=..., strategy=...))
    events = read_journal(path)                       # JournalRead(events, torn)

Each line is one event: `{"schema_version", "event", "at" (UTC), "seq" (0, 1, ... per file),
...payload, "chain"}`, written with one `write` and `fdatasync` before `append` returns. A process
killed mid-append leaves at most a torn last line: readers skip it and report it in
`JournalRead.torn`; opening the journal for writing again moves it to `<file>.torn` and
truncates, so new events never follow a broken line.

Tamper evidence (schema_version 2): `chain` is the BLAKE2b-128 of the previous line's `chain`
and this line's bytes without it (`frame_line`), so each line carries its own checksum and
commits to everything before it. `read_journal` skips a line that does not parse or whose chain
does not match, and names it in `JournalRead.damaged`: the rest of the journal still reads. An
edited line fails its own check; a deleted, inserted or reordered line fails the next one's.
`head` (the last chain) is recorded in the run journal when a case is sealed (`CaseSealed`),
so rewriting a whole case journal with a new valid chain still differs from the recorded head.
Lines of schema_version 1 (runs written before) carry no chain and read as before, unchecked.

Payloads are frozen dataclasses (below); `Event.data` holds the plain JSON dict read back and
`Event.payload()` rebuilds the dataclass. Events and their order for one case:

    case_started      case_id, question_id, model, strategy, manifest_hash, session, question,
                      reference_answer, gold_evidence
    model_attempt     one per answer-model HTTP attempt: `attempt` = Attempt record as a dict
    model_turn        a successful answer turn: number, request/response paths, `reply` dict
                      (Reply record), attempts used; replayed on resume instead of a new call
    tool_call         one per tool response produced (incl. validation errors, budget rejects)
    judge_attempt     one per judge HTTP attempt (same shape as model_attempt)
    judgment          scores (None = unscored, never 0), rationale, checks, provenance;
                      re-judging appends another; the last one counts
    case_failed       an exception stopped the case in this session (it is redone on resume)
    case_finished     the last event of a done case: status complete|incomplete|failed, reason

The run journal `journal/_run.jsonl` holds `run_started`, `model_attempt` (health checks,
purpose `health`), `corpus_drift`, `case_sealed` (a case journal's line count and chain head)
and `run_finished`.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import threading
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar
import zlib

from parquet_agent.errors import RunError
from parquet_agent.files import (
    DurableAppender,
    atomic_write_bytes,
    fsync_dir,
    truncate_torn_tail,
    utc_now,
)

SCHEMA_VERSION = 2  # 2: every line ends in its "chain" (1: no chain, still read)
RUN_JOURNAL = "_run"  # journal/_run.jsonl; case ids always contain "__", so no clash


# -- event payloads -----------------------------------------------------------------------------


@dataclass(frozen=True)
class CaseStarted:
    EVENT: ClassVar[str] = "case_started"
    case_id: str
    question_id: str
    model: str  # configured model name (slug)
    strategy: str
    manifest_hash: str | None = None
    session: int = 0  # 0 for the first run, n for the n-th resume
    # what the case is about, for audits of cases the judge never saw (the journal is never
    # sent to an agent; only `question` is what the agent gets)
    question: str | None = None
    reference_answer: str | None = None
    gold_evidence: list[dict[str, Any]] | None = None
    node: str | None = None  # the engine node that ran this session of the case (None: local)


@dataclass(frozen=True)
class ModelAttempt:
    """One HTTP attempt; `attempt` is `dataclasses.asdict(models.protocol.Attempt)`."""

    EVENT: ClassVar[str] = "model_attempt"
    label: str
    attempt: dict[str, Any]


@dataclass(frozen=True)
class JudgeAttempt(ModelAttempt):
    EVENT: ClassVar[str] = "judge_attempt"


@dataclass(frozen=True)
class ModelTurn:
    """A successful answer turn. `reply` is `asdict(Reply)`; enough to replay it unchanged."""

    EVENT: ClassVar[str] = "model_turn"
    turn: int  # 1-based
    label: str
    request_path: str | None
    response_path: str | None
    reply: dict[str, Any]
    attempt_count: int = 1
    final: bool = False  # the final-answer request (budget exhausted: best answer so far)


@dataclass(frozen=True)
class ToolCallEvent:
    """One tool response produced for a model-emitted call, exactly as the model received it."""

    EVENT: ClassVar[str] = "tool_call"
    turn: int
    call_id: str
    name: str
    arguments: dict[str, Any]
    ok: bool
    model_text: str | None  # the exact tool-message content sent back (None when offloaded)
    output: Any = None
    error_kind: str | None = None  # closed set of tools' error kinds; "budget" for rejections
    error_message: str | None = None
    budgeted: bool = True  # admitted under the tool budget
    dispatched: bool = True  # reached the executor (cache lookups included)
    cache_hit: bool = False
    timings: dict[str, float] = field(default_factory=dict)  # queue_ms, run_ms, total_ms
    worker_id: str | None = None
    peak_rss_bytes: int | None = None
    skip_index: dict[str, Any] | None = None  # whole-corpus sql: pruned or scanned, pages read
    # raw path of {"model_text", "output"} when they were large: `Run.journal` moves them into
    # the raw store (compressed against the case's requests); `Run.case_events` puts them back
    offloaded: str | None = None


@dataclass(frozen=True)
class Judgment:
    """Scores 0-100, or None when the judgment was unscored (malformed after retries)."""

    EVENT: ClassVar[str] = "judgment"
    judge: str  # judge name
    correctness: float | None
    citation_support: float | None
    rationale: str | None
    scored: bool
    unscored_reason: str | None = None
    request_path: str | None = None
    response_path: str | None = None
    checks: dict[str, Any] = field(default_factory=dict)  # deterministic checks
    provenance: dict[str, Any] = field(default_factory=dict)  # judge model, prompt hash, ...


@dataclass(frozen=True)
class CaseFailed:
    EVENT: ClassVar[str] = "case_failed"
    error_type: str
    message: str
    retryable: bool = False


@dataclass(frozen=True)
class CaseFinished:
    EVENT: ClassVar[str] = "case_finished"
    status: str  # complete | incomplete | failed
    reason: str | None = None
    answer: str | None = None
    tool_counts: dict[str, int] = field(default_factory=dict)  # DESIGN.md tool-count fields
    wall_ms: float | None = None

    def __post_init__(self) -> None:
        if self.status not in ("complete", "incomplete", "failed"):
            raise ValueError(f"case status {self.status!r} is not complete|incomplete|failed")


@dataclass(frozen=True)
class RunStarted:
    EVENT: ClassVar[str] = "run_started"
    session: int
    pid: int
    resume: bool = False
    # where this session's cases run: {"kind": "local"} or the Ray engine's address and nodes
    # (name, node id, corpus path, sandbox mode) and the nodes it refused, with why
    engine: dict[str, Any] | None = None
    # the config changes a resume allowed because they cannot change results (in words), and
    # whether it reran the cases that had failed
    allowed_changes: list[str] = field(default_factory=list)
    retry_failed: bool = False


@dataclass(frozen=True)
class CorpusDrift:
    EVENT: ClassVar[str] = "corpus_drift"
    excluded_new_files: list[str]


@dataclass(frozen=True)
class RunFinished:
    EVENT: ClassVar[str] = "run_finished"
    session: int
    wall_ms: float
    peak_rss_bytes: int | None = None  # whole process tree
    status: str = "finished"  # finished | interrupted | error
    # a non-local engine's figures: per-node cases and throughput, the write round trip to the
    # driver's store (None for the local engine)
    engine: dict[str, Any] | None = None


@dataclass(frozen=True)
class CaseSealed:
    """A case journal was sealed: its line count and the chain of its last line."""

    EVENT: ClassVar[str] = "case_sealed"
    case_id: str
    lines: int
    head: str


ATTEMPT_EVENTS = (ModelAttempt.EVENT, JudgeAttempt.EVENT)  # one HTTP (or offline) attempt each
EVENT_TYPES: dict[str, type] = {
    cls.EVENT: cls for cls in (CaseStarted, ModelAttempt, JudgeAttempt, ModelTurn, ToolCallEvent,
                               Judgment, CaseFailed, CaseFinished, RunStarted, CorpusDrift,
                               RunFinished, CaseSealed)
}
_ENVELOPE = ("schema_version", "event", "at", "seq", "chain")
_CHAIN_SUFFIX = re.compile(rb',"chain":"([0-9a-f]{32})"}$')


def _chain(prev: str, body: bytes) -> str:
    return hashlib.blake2b(prev.encode("ascii") + b"\n" + body, digest_size=16).hexdigest()


def frame_line(record: dict[str, Any], prev: str) -> tuple[bytes, str]:
    """One journal line (without its newline) for `record`, ending in its chain; and that chain."""
    body = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str).encode()
    chain = _chain(prev, body)
    return body[:-1] + b',"chain":"' + chain.encode("ascii") + b'"}', chain


def check_line(line: bytes, prev: str | None) -> tuple[str | None, str | None]:
    """(this line's chain, the problem with it or None). `prev` None: the line before was
    unreadable, so only the line's own form can be checked."""
    found = _CHAIN_SUFFIX.search(line)
    if found is None:
        return None, "has no chain (edited, or written by another program)"
    chain = found.group(1).decode("ascii")
    if prev is not None and _chain(prev, line[: found.start()] + b"}") != chain:
        return chain, ("does not match its chain: it was edited, or a line before it was "
                       "removed, inserted or reordered")
    return chain, None


@dataclass(frozen=True)
class Event:
    """One journal line as read back: envelope fields plus the payload as a plain dict."""

    event: str
    at: str
    seq: int
    data: dict[str, Any]
    schema_version: int = SCHEMA_VERSION

    def payload(self) -> Any:
        """The payload dataclass (unknown event names from newer writers stay a dict)."""
        cls = EVENT_TYPES.get(self.event)
        if cls is None:
            return dict(self.data)
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in self.data.items() if k in names})


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


def _parse(path: Path, raw: bytes) -> _Parsed:
    """Events, torn tail, damaged lines and chain head of one journal's bytes."""
    out = _Parsed()
    lines = raw.split(b"\n")
    tail = lines.pop()  # after the last "\n": empty for a clean file
    prev: str | None = ""
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
            event = Event(event=record["event"], at=record["at"], seq=record["seq"],
                          schema_version=record.get("schema_version", 1),
                          data={k: v for k, v in record.items() if k not in _ENVELOPE})
        except (ValueError, KeyError, TypeError) as exc:
            if number == len(lines) and not tail:
                # a torn write can end in a newline only if the newline was part of it; treat a
                # bad last line the same as a line cut short
                out.torn = line.decode("utf-8", "replace")
                break
            out.damaged.append(f"{path.name}: line {number} is not a valid journal event "
                               f"({type(exc).__name__}); skipped")
            found = _CHAIN_SUFFIX.search(line)
            prev = found.group(1).decode("ascii") if found else None
            out.chains.append(prev)
            out.good += len(line) + 1
            out.lines += 1
            continue
        out.good += len(line) + 1
        out.lines += 1
        if event.schema_version >= 2:
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
    out.last_chain = prev or out.head or ""
    return out


def sealed_path(path: Path) -> Path:
    return path.with_name(path.name + ".gz")


def read_journal(path: str | Path) -> JournalRead:
    """Every event of one journal (`x.jsonl`, or its sealed `x.jsonl.gz`), skipping (and
    reporting) a torn last line."""
    path = Path(path)
    if path.suffix == ".gz":
        path = path.with_suffix("")
    if path.exists():
        raw = path.read_bytes()
    elif sealed_path(path).exists():
        try:
            raw = gzip.decompress(sealed_path(path).read_bytes())
        except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError
            raw, problem = _salvage_gzip(sealed_path(path).read_bytes())
            parsed = _parse(path, raw)
            damage = f"{sealed_path(path).name}: the compressed file is damaged ({exc}); {problem}"
            return JournalRead(tuple(parsed.events), None, path, (damage, *parsed.damaged),
                               parsed.head, parsed.lines, tuple(parsed.chains))
    else:
        return JournalRead((), None, path)
    parsed = _parse(path, raw)
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

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._open()

    def _open(self) -> None:
        sealed = sealed_path(self.path)
        if sealed.exists():
            if not self.path.exists():
                atomic_write_bytes(self.path, gzip.decompress(sealed.read_bytes()))
            sealed.unlink()
            fsync_dir(self.path.parent)
        parsed = _Parsed()
        if self.path.exists():
            raw = self.path.read_bytes()
            parsed = _parse(self.path, raw)
            if parsed.good < len(raw):  # keep the torn bytes for the audit, then cut them off
                cut = truncate_torn_tail(self.path, parsed.good)
                with open(self.path.with_name(self.path.name + ".torn"), "ab") as f:
                    f.write(cut + b"\n")
                fsync_dir(self.path.parent)
        events = parsed.events
        self._seq = max(events[-1].seq + 1 if events else 0, parsed.lines)
        self._prev = parsed.last_chain
        self.lines = parsed.lines
        self._out: DurableAppender | None = DurableAppender(self.path)

    def append(self, payload: Any) -> Event:
        """Write one event durably and return it as read back would show it."""
        return self.append_many([payload])[0]

    def append_many(self, payloads: list[Any]) -> list[Event]:
        """Write several events with one write and one fdatasync (e.g. a turn's attempts and
        the turn itself). A crash keeps a prefix of them, never a hole."""
        prepared = []
        for payload in payloads:
            event_name = getattr(type(payload), "EVENT", None)
            if event_name is None:
                raise TypeError(f"{type(payload).__name__} is not a journal event payload")
            prepared.append((event_name, asdict(payload)))
        with self._lock:
            if self._out is None:
                self._open()  # sealed: unseal to append
            at, lines, events = utc_now(), [], []
            prev = self._prev
            for offset, (event_name, data) in enumerate(prepared):
                seq = self._seq + offset
                record = {"schema_version": SCHEMA_VERSION, "event": event_name, "at": at,
                          "seq": seq}
                record.update(data)
                line, prev = frame_line(record, prev)
                lines.append(line + b"\n")
                events.append(Event(event_name, at, seq, data))
            if lines:
                self._out.append(b"".join(lines))
                self._seq += len(lines)
                self._prev = prev
                self.lines += len(lines)
        return events

    @property
    def head(self) -> str:
        """The chain of the last line written (what `CaseSealed` records)."""
        return self._prev

    def seal(self) -> None:
        """Store the journal gzip-compressed (`.jsonl.gz`) and close it."""
        with self._lock:
            if self._out is None:
                return
            self._out.close()
            self._out = None
            data = self.path.read_bytes()
            atomic_write_bytes(sealed_path(self.path), gzip.compress(data, 9, mtime=0))
            # no fsync after the unlink: if it is lost in a crash, both files exist and the
            # plain one wins, with the same lines
            self.path.unlink()

    def close(self) -> None:
        with self._lock:
            if self._out is not None:
                self._out.close()
                self._out = None
