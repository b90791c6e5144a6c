"""Raw wire bytes of a run, stored once by content and given back byte for byte.

`RawStore(run_dir)` is the run's `RawSink` (see `parquet_agent.models.protocol`):
`write(name, data) -> "raw/<name>"` makes the bytes durable before it returns; `read(path)` and
`read_raw(run_dir, path)` give back exactly the bytes written. Names starting with `meta/`
(metadata GETs: model lists, prices) go to a separate pack, apart from the API POST bodies.

Why not one file per body: successive requests of a case repeat the whole conversation so far,
and every request repeats the system prompt and tool specs, so most request bytes are repeats.
Layout, under `<run>/raw/`:

    bodies.pack   append-only records: chunks and recipes of API request/response bodies
    meta.pack     the same for `meta/` names

A record is `type (1 byte: C|R) | payload length (u32 BE) | CRC-32 of payload (u32 BE) | payload`.
A chunk payload is `BLAKE2b-128 digest of the chunk | codec (0 raw, 2 zlib with the preset
dictionary below) | stored bytes`; chunks are numbered 0, 1, ... in file order. A recipe payload
is JSON `{"n": name, "s": size, "h": "b2:<BLAKE2b-256 of the body>", "c": [chunk numbers; [a, b]
means a..b]}`. A body is cut into chunks after `},`/`],` separators (content-defined: the cut
points depend only on nearby bytes, so a shared prefix cuts the same way), with a minimum chunk
size; a chunk already stored is referenced, not written again. New chunks and the recipe go out in
one `write` + `fdatasync`, so a crash leaves at most one torn record at the end of the pack, which
is cut off (and kept in `<pack>.torn`) the next time the store is opened for writing.

Names are immutable: writing a name again with the same bytes returns the same path; with other
bytes (e.g. a resumed run redoing an attempt) the body is stored as `<name>~2`, `~3`, ... and that
path is returned. `verify()` re-derives every chunk digest and every body hash and reports any
mismatch, bad CRC or unreadable record; it never repairs.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path

from parquet_agent.errors import RunError
from parquet_agent.store.files import DurableAppender, fsync_dir, truncate_torn_tail

RAW_DIR = "raw"
META_PREFIX = "meta/"
_PACKS = {"bodies": "bodies.pack", "meta": "meta.pack"}
_HEADER = struct.Struct(">cII")
_CODEC_RAW, _CODEC_ZDICT = 0, 2
_MIN_CHUNK = 160
_CUT = re.compile(rb"[}\]],\s*(?=[{\"\[])")
_NAME = re.compile(r"^[A-Za-z0-9_.+=@-][A-Za-z0-9_.+=@/~-]*$")
# A preset dictionary of wire fragments common to the three provider formats: it lets zlib
# compress even a small chunk. Changing it breaks reading old packs: add a new codec instead.
_ZDICT = (
    b'"finish_reason":"stop","index":0,"logprobs":null,"message":{"content":null,"refusal":null,'
    b'"role":"assistant","tool_calls":[{"function":{"arguments":"{\\"query\\":\\"SELECT '
    b'"},"id":"call_","type":"function"}]}}],"created":"model":"object":"chat.completion",'
    b'"usage":{"completion_tokens":"prompt_tokens":"total_tokens":"prompt_tokens_details":'
    b'{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}'
    b'{"role":"tool","tool_call_id":"call_","content":"{\\"ok\\": true, \\"output\\": '
    b'{"role":"user","content":"{"role":"system","content":"'
    b'{"type":"function","function":{"name":"sql","description":"parameters":{"type":"object",'
    b'"properties":{"query":{"type":"string","description":"},"required":["query"]'
    b'"additionalProperties":false}}},"tool_choice":"auto","temperature":0.0,"max_tokens":'
    b'"stop_reason":"tool_use","stop_sequence":null,"type":"message","content":[{"type":"text",'
    b'"text":"{"type":"tool_use","id":"toolu_","name":"input":{"type":"tool_result",'
    b'"tool_use_id":"usage":{"input_tokens":"output_tokens":"cache_read_input_tokens":0,'
    b'"cache_creation_input_tokens":0,"input_schema":'
    b'{"contents":[{"parts":[{"text":"role":"model"functionCall":{"name":"args":'
    b'"functionResponse":{"name":"response":"usageMetadata":{"promptTokenCount":'
    b'"candidatesTokenCount":"totalTokenCount":"finishReason":"STOP","candidates":[{"content":'
    b'"file_stem":"start":"end":"source_id":"excerpt":"rows":[["columns":["company","form_type",'
    b'"filing_date","period","cik","error":null,"kind":"message":'
)


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def _body_hash(data: bytes) -> str:
    return "b2:" + hashlib.blake2b(data, digest_size=32).hexdigest()


def split_chunks(data: bytes, min_size: int = _MIN_CHUNK) -> list[bytes]:
    """Cut `data` after JSON element separators, each chunk at least `min_size` bytes."""
    chunks, start = [], 0
    for match in _CUT.finditer(data):
        end = match.end()
        if end - start >= min_size:
            chunks.append(data[start:end])
            start = end
    if start < len(data) or not chunks:
        chunks.append(data[start:])
    return chunks


def _encode(chunk: bytes) -> tuple[int, bytes]:
    comp = zlib.compressobj(6, zlib.DEFLATED, -15, 9, zlib.Z_DEFAULT_STRATEGY, _ZDICT)
    packed = comp.compress(chunk) + comp.flush()
    return (_CODEC_ZDICT, packed) if len(packed) + 8 < len(chunk) else (_CODEC_RAW, chunk)


def _decode(codec: int, stored: bytes) -> bytes:
    if codec == _CODEC_RAW:
        return stored
    if codec == _CODEC_ZDICT:
        dec = zlib.decompressobj(-15, _ZDICT)
        return dec.decompress(stored) + dec.flush()
    raise ValueError(f"unknown chunk codec {codec}")


def _compact(numbers: list[int]) -> list:
    out: list = []
    for n in numbers:
        last = out[-1] if out else None
        if isinstance(last, list) and last[1] + 1 == n:
            last[1] = n
        elif isinstance(last, int) and last + 1 == n:
            out[-1] = [last, n]
        else:
            out.append(n)
    return out


def _expand(refs: list) -> list[int]:
    out: list[int] = []
    for ref in refs:
        out.extend(range(ref[0], ref[1] + 1) if isinstance(ref, list) else (ref,))
    return out


@dataclass(frozen=True)
class _Chunk:
    offset: int  # of the stored bytes in the pack
    length: int
    codec: int
    digest: bytes


@dataclass(frozen=True)
class RawStats:
    """Sizes of a raw store: `logical_bytes` written by callers vs `stored_bytes` on disk."""

    bodies: int
    chunks: int
    logical_bytes: int
    stored_bytes: int


class _Pack:
    """One pack file: its chunk table, recipes by name, and problems found while scanning."""

    def __init__(self, path: Path):
        self.path = path
        self.chunks: list[_Chunk] = []
        self.by_digest: dict[bytes, int] = {}
        self.recipes: dict[str, dict] = {}
        self.problems: list[str] = []
        self.good_end = 0  # end of the last whole, valid record
        self.torn_tail = False

    def scan(self) -> None:
        """Read records from `good_end` on; safe to call again as the pack grows."""
        if not self.path.exists():
            return
        with open(self.path, "rb") as f:
            f.seek(self.good_end)
            data = f.read()
        pos, base, self.torn_tail = 0, self.good_end, False
        while pos < len(data):
            if len(data) - pos < _HEADER.size:
                self.torn_tail = True
                break
            kind, length, crc = _HEADER.unpack_from(data, pos)
            body_start, body_end = pos + _HEADER.size, pos + _HEADER.size + length
            if body_end > len(data):
                self.torn_tail = True
                break
            payload = data[body_start:body_end]
            if zlib.crc32(payload) != crc or kind not in (b"C", b"R"):
                if body_end == len(data):  # a torn last write can leave garbage of full length
                    self.torn_tail = True
                    break
                self.problems.append(f"{self.path.name}: bad record at byte {base + pos} "
                                     "(CRC mismatch); later records may be unreachable")
                break
            if kind == b"C":
                digest, codec = payload[:16], payload[16]
                self.by_digest.setdefault(digest, len(self.chunks))
                self.chunks.append(_Chunk(base + body_start + 17, length - 17, codec, digest))
            else:
                recipe = json.loads(payload)
                self.recipes[recipe["n"]] = recipe
            pos = body_end
            self.good_end = base + pos

    def read_chunk(self, fd: int, number: int) -> bytes:
        chunk = self.chunks[number]
        return _decode(chunk.codec, os.pread(fd, chunk.length, chunk.offset))


class RawStore:
    """Content-addressed raw bytes of one run. Thread-safe; one writing process per run."""

    def __init__(self, run_dir: str | Path, *, writable: bool = True):
        self.run_dir = Path(run_dir)
        self.dir = self.run_dir / RAW_DIR
        self.writable = writable
        self._lock = threading.Lock()
        if writable:
            self.dir.mkdir(parents=True, exist_ok=True)
        self._packs = {key: _Pack(self.dir / name) for key, name in _PACKS.items()}
        self._appenders: dict[str, DurableAppender] = {}
        for key, pack in self._packs.items():
            pack.scan()
            if writable and pack.problems:
                raise RunError(f"raw store {pack.path} is damaged: {pack.problems[0]}; "
                               "run Run.verify() and start a new run folder")
            if writable and pack.torn_tail:
                torn = truncate_torn_tail(pack.path, pack.good_end)
                with open(pack.path.with_name(pack.path.name + ".torn"), "ab") as f:
                    f.write(torn)
                    os.fsync(f.fileno())
                fsync_dir(self.dir)
                pack.torn_tail = False

    # -- writing (the RawSink) -----------------------------------------------------------------

    def write(self, name: str, data: bytes) -> str:
        """Store `data` under `name` durably; return its run-relative path (`raw/<name>`)."""
        if not self.writable:
            raise RunError(f"{self.run_dir}: raw store opened read-only")
        if not _NAME.match(name) or ".." in name.split("/") or "//" in name:
            raise ValueError(f"bad raw name {name!r}: use a relative path of letters, digits "
                             "and ._-+=@~ without '..'")
        data = bytes(data)
        body_hash = _body_hash(data)
        key = "meta" if name.startswith(META_PREFIX) else "bodies"
        with self._lock:
            pack = self._packs[key]
            stored_name, n = name, 1
            while (old := pack.recipes.get(stored_name)) is not None:
                if old["h"] == body_hash:
                    return f"{RAW_DIR}/{stored_name}"
                n += 1
                stored_name = f"{name}~{n}"
            out, numbers, new = bytearray(), [], {}
            next_number = len(pack.chunks)
            for chunk in split_chunks(data):
                digest = _digest(chunk)
                number = pack.by_digest.get(digest, new.get(digest, (None,))[0])
                if number is None:
                    codec, stored = _encode(chunk)
                    payload = digest + bytes([codec]) + stored
                    header_at = len(out)
                    out += _HEADER.pack(b"C", len(payload), zlib.crc32(payload)) + payload
                    number = next_number
                    next_number += 1
                    new[digest] = (number, header_at + _HEADER.size + 17, len(stored), codec)
                numbers.append(number)
            recipe = {"n": stored_name, "s": len(data), "h": body_hash, "c": _compact(numbers)}
            payload = json.dumps(recipe, separators=(",", ":")).encode()
            out += _HEADER.pack(b"R", len(payload), zlib.crc32(payload)) + payload
            appender = self._appenders.get(key)
            if appender is None:
                appender = self._appenders[key] = DurableAppender(pack.path)
            start = appender.append(bytes(out))
            # only now, with the bytes durable, does the in-memory index learn about them
            for digest, (number, rel, length, codec) in sorted(new.items(), key=lambda i: i[1][0]):
                pack.by_digest[digest] = number
                pack.chunks.append(_Chunk(start + rel, length, codec, digest))
            pack.recipes[stored_name] = recipe
            pack.good_end = start + len(out)
            return f"{RAW_DIR}/{stored_name}"

    # -- reading --------------------------------------------------------------------------------

    def _locate(self, path: str) -> tuple[_Pack, dict]:
        name = path[len(RAW_DIR) + 1:] if path.startswith(RAW_DIR + "/") else path
        pack = self._packs["meta" if name.startswith(META_PREFIX) else "bodies"]
        if name not in pack.recipes:
            with self._lock:
                pack.scan()  # a writer in another process may have added it since
        if name not in pack.recipes:
            raise KeyError(f"{path}: no such raw body in {self.dir}")
        return pack, pack.recipes[name]

    def read(self, path: str) -> bytes:
        """The exact bytes stored under `path` (`raw/<name>` or `<name>`); checks their hash."""
        pack, recipe = self._locate(path)
        fd = os.open(pack.path, os.O_RDONLY)
        try:
            data = b"".join(pack.read_chunk(fd, n) for n in _expand(recipe["c"]))
        finally:
            os.close(fd)
        if len(data) != recipe["s"] or _body_hash(data) != recipe["h"]:
            raise RunError(f"{path}: stored bytes do not match their recorded hash (tampered or "
                           "damaged raw store); see Run.verify()")
        return data

    def names(self) -> list[str]:
        """Every stored run-relative path, in write order per pack."""
        return [f"{RAW_DIR}/{n}" for pack in self._packs.values() for n in pack.recipes]

    def __contains__(self, path: str) -> bool:
        try:
            self._locate(path)
        except KeyError:
            return False
        return True

    def stats(self) -> RawStats:
        packs = self._packs.values()
        return RawStats(
            bodies=sum(len(p.recipes) for p in packs),
            chunks=sum(len(p.chunks) for p in packs),
            logical_bytes=sum(r["s"] for p in packs for r in p.recipes.values()),
            stored_bytes=sum(p.path.stat().st_size for p in packs if p.path.exists()),
        )

    def verify(self) -> list[str]:
        """Re-derive every chunk digest and body hash from the packs on disk; list problems."""
        problems: list[str] = []
        for key, name in _PACKS.items():
            fresh = _Pack(self.dir / name)
            fresh.scan()
            problems += fresh.problems
            if fresh.torn_tail:
                problems.append(f"{name}: torn record at byte {fresh.good_end} (an interrupted "
                                "write; no body in it was ever acknowledged)")
            if not fresh.path.exists():
                continue
            fd = os.open(fresh.path, os.O_RDONLY)
            try:
                for number, chunk in enumerate(fresh.chunks):
                    try:
                        ok = _digest(fresh.read_chunk(fd, number)) == chunk.digest
                    except (zlib.error, ValueError):
                        ok = False
                    if not ok:
                        problems.append(f"{name}: chunk {number} at byte {chunk.offset} does not "
                                        "match its digest")
                for rname, recipe in fresh.recipes.items():
                    try:
                        data = b"".join(fresh.read_chunk(fd, n) for n in _expand(recipe["c"]))
                    except (zlib.error, ValueError, IndexError):
                        problems.append(f"{RAW_DIR}/{rname}: cannot be reassembled")
                        continue
                    if len(data) != recipe["s"] or _body_hash(data) != recipe["h"]:
                        problems.append(f"{RAW_DIR}/{rname}: bytes do not match the recorded hash")
            finally:
                os.close(fd)
        return problems

    def close(self) -> None:
        with self._lock:
            for appender in self._appenders.values():
                appender.close()
            self._appenders.clear()


def read_raw(run_dir: str | Path, path: str) -> bytes:
    """The exact bytes of one raw file of a run (`path` as recorded, e.g. `raw/Q1__m__sql/...`).

    Opens the store read-only each call: to read many, use `RawStore(run_dir, writable=False)`.
    """
    return RawStore(run_dir, writable=False).read(path)
