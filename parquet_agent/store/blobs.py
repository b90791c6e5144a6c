"""Raw wire bytes of a run, stored once by content and given back byte for byte.

`RawStore(run_dir)` is the run's `RawSink` (see `parquet_agent.models.protocol`):
`write(name, data) -> "raw/<name>"` makes the bytes durable before it returns; `read(path)` and
`read_raw(run_dir, path)` give back exactly the bytes written, checked against their hash.
Names starting with `meta/` (metadata GETs: model lists, prices) go to a separate pack, apart from
the API POST bodies.

Why not one file per body: successive requests of a case repeat the whole conversation so far,
every request repeats the system prompt, tool specs and headers, and the judge request repeats
the tool evidence the agent saw. Layout, under `<run>/raw/`:

    bodies.pack   append-only records, one per body written
    meta.pack     the same for `meta/` names

A body is cut into chunks after `,` separators that precede a key, object or array (content-
defined: cut points depend only on nearby bytes, so shared content cuts the same way wherever it
appears), each chunk at least `_MIN_CHUNK` bytes. Chunks are numbered 0, 1, ... in pack order.
A record holds one body: its recipe and the chunks no earlier body had, compressed together:

    b"B" | meta length u32 | data length u32 | CRC-32 of meta+data u32 | meta JSON | data
    meta = {"n": name, "s": size, "h": "<BLAKE2b-128 hex of the body>",
            "c": [chunk numbers of the body in order; [a, b] means a..b],
            "l": [lengths of the new chunks], "z": 0 raw | 2 deflate, "p": previous record of
            the same group (the name's first path segment, i.e. the case) or absent}
    a name that starts with its group's name is written "/rest" when "p" is present

Deflate gets a preset dictionary: fixed wire fragments plus the last 32 KiB of new data of the
same case, so text that reappears with other JSON escaping (a tool result inside the next
request, then inside the judge request) costs little. Reading a record decodes the chain of its
case's earlier records once; decoded windows are cached per store (bounded).

New data, recipe and CRC go out in one `write` + `fdatasync`, so a crash leaves at most one torn
record at the end of a pack; readers skip it and opening the store for writing moves it to
`<pack>.torn`. Names are immutable: the same name with the same bytes returns the same path; with
other bytes (e.g. a resumed run redoing an attempt) the body is stored as `<name>~2`, `~3`, ...
`verify()` decodes every record and checks every body against its hash; it never writes.

One flipped bit anywhere in a record (kind, lengths, CRC, recipe or data) costs nothing: the
CRC's syndrome names the bit (`packformat.repair_record`), the scan undoes it in memory, every
body reads as written (those reusing its chunks and the case's later records included) and
`verify()` names the record as repaired; the file stays as found. More damage stays local where
the format allows: a record failing its CRC is marked damaged and the scan goes on (its recipe
still names it); a record whose recipe is lost is skipped by its lengths; after unreadable
header bytes the scan finds the next whole record; a record referring to a record or chunk not
before it (records cut out or moved) is marked damaged. What cannot be read is what depends on
the damaged bytes: bodies reusing its chunks, the case's later records (their compression
window starts from it). `verify()` names each; every other body reads; a body not there at all
is a `RawBodyMissingError` (a RunError).
"""

from __future__ import annotations

import json
import os
import re
import threading
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from parquet_agent.errors import RawBodyMissingError, RunError
from parquet_agent.files import DurableAppender, fsync_dir, truncate_torn_tail
from parquet_agent.store.packformat import (  # noqa: F401  (split_chunks, RAW_DIR: public)
    CODEC_DEFLATE,
    CODEC_RAW,
    HEADER,
    META_PREFIX,
    RAW_DIR,
    WINDOW,
    RawStats,
    chunk_digest,
    compact_numbers,
    deflate_dictionary,
    expand_numbers,
    group_of_name,
    hash_body,
    next_record,
    parse_meta,
    record_meta,
    refers_ahead,
    repair_record,
    split_chunks,
    starts_record,
)

_PACKS = {"bodies": "bodies.pack", "meta": "meta.pack"}
_CACHE = 96  # decoded records / windows kept per pack
_NAME = re.compile(r"^[A-Za-z0-9_.+=@-][A-Za-z0-9_.+=@/~-]*$")


@dataclass(frozen=True)
class _Record:
    data_offset: int
    data_length: int
    codec: int
    prev: int | None  # previous record of the same group
    new_length: int  # decoded length


class _Pack:
    """One pack file: records, chunk locations, recipes by name, problems found scanning."""

    def __init__(self, path: Path):
        self.path = path
        self.records: list[_Record] = []
        self.chunks: list[tuple[int, int, int]] = []  # (record, start, length)
        self.recipes: dict[str, dict] = {}
        self.group_last: dict[str, int] = {}
        self.group_of: list[str] = []  # per record
        self.by_digest: dict[bytes, int] | None = None  # built on demand (writers)
        self.problems: list[str] = []
        self.damaged: set[int] = set()  # records whose bytes fail their CRC or were lost
        self.repaired: list[str] = []  # records read whole after undoing one flipped bit
        self.fixed: dict[int, bytes] = {}  # their stored bytes, as repaired
        self.good_end = 0  # end of the last whole, valid record
        self.torn_tail = False
        self._decoded: OrderedDict[int, bytes] = OrderedDict()
        self._windows: OrderedDict[int, bytes] = OrderedDict()

    def scan(self) -> None:
        """Read record headers and metas from `good_end` on; safe to call as the pack grows."""
        if not self.path.exists() or self.problems:
            return
        with open(self.path, "rb") as f:
            f.seek(self.good_end)
            data: bytes | bytearray = f.read()  # a bytearray once a flipped bit is undone
        pos, base, self.torn_tail = 0, self.good_end, False
        while pos < len(data):
            if len(data) - pos < HEADER.size:
                self.torn_tail = True
                break
            kind, meta_len, data_len, crc = HEADER.unpack_from(data, pos)
            meta_at = pos + HEADER.size
            end = meta_at + meta_len + data_len
            ok = kind == b"B" and end <= len(data) and zlib.crc32(data[meta_at:end]) == crc
            flipped = None if ok else repair_record(data, pos)
            if flipped is not None:  # one flipped bit: undo it here, say so in `repaired`
                data = bytearray(data)
                data[flipped >> 3] ^= 1 << (flipped & 7)
                kind, meta_len, data_len, crc = HEADER.unpack_from(data, pos)
                end, ok = meta_at + meta_len + data_len, True
            if end > len(data):
                self.torn_tail = True
                break
            meta = parse_meta(data[meta_at:meta_at + meta_len]) if kind == b"B" else None
            ok = ok and meta is not None  # a whole record always carries a recipe
            if not ok and end == len(data):  # a torn last write may leave garbage of full length
                self.torn_tail = True
                break
            # below, `meta is None` implies `not ok`
            if meta is None and kind == b"B" and starts_record(data, end):
                # the recipe is lost but the lengths hold: exactly this record is unreadable
                self.problems.append(f"{self.path.name}: record at byte {base + pos} is "
                                     "damaged (its recipe does not read); its body is lost")
                lost = self._lost_record()
                pos = end
                self._resync(parse_meta(record_meta(data, pos)), lost)
                self.good_end = base + pos
                continue
            if meta is None:  # header or recipe lost: find the next whole record
                found = next_record(data, pos + 1)
                lost = (found if found is not None else len(data)) - pos
                self.problems.append(f"{self.path.name}: {lost} bytes at byte {base + pos} are "
                                     "not a readable record (damaged); the records after them "
                                     "still read")
                if found is None:
                    break
                lost = self._lost_record()
                pos = found
                self._resync(parse_meta(record_meta(data, pos)), lost)
                self.good_end = base + pos
                continue
            number = self._add(meta, base + meta_at + meta_len, data_len)
            if flipped is not None:
                self._repaired(number, meta["n"], base + pos, flipped - 8 * pos, meta_len,
                               bytes(data[meta_at + meta_len:end]))
            if not ok:  # the recipe reads but the stored bytes do not match their CRC
                self.damaged.add(number)
                self.problems.append(f"{self.path.name}: record at byte {base + pos} "
                                     f"({RAW_DIR}/{meta['n']}) does not match its CRC (damaged)")
                if end != len(data) and not starts_record(data, end):  # its lengths are hit
                    found = next_record(data, pos + 1)
                    end = found if found is not None else len(data)
            pos = end
            self.good_end = base + pos

    def _repaired(self, number: int, name: str, at: int, bit: int, meta_len: int,
                  stored: bytes) -> None:
        """Record `number` (at byte `at` of the pack) read whole once bit `bit` (counted from
        the record's first byte) was flipped back: keep its stored bytes as repaired."""
        byte = bit >> 3
        part = ("header" if byte < HEADER.size - 4 else "CRC" if byte < HEADER.size
                else "recipe" if byte < HEADER.size + meta_len else "data")
        self.fixed[number] = stored
        self.repaired.append(
            f"{self.path.name}: record at byte {at} ({RAW_DIR}/{name}) had one flipped bit "
            f"(byte {at + byte}, in its {part}): repaired on read, every body reads; the file "
            "on disk is still damaged (restore it from a copy)")

    def _resync(self, meta: dict | None, lost: int) -> None:
        """After unreadable bytes, number the chunks as the next whole record expects: its new
        chunks are the last ones its recipe names; the lost ones in between (in placeholder
        record `lost`) stay unreadable."""
        new = len((meta or {}).get("l", []))
        refs = expand_numbers((meta or {}).get("c", []))
        if not new or not refs:
            return
        while len(self.chunks) < max(refs) - new + 1:
            self.chunks.append((lost, 0, 0))

    def _lost_record(self) -> int:
        """A placeholder record for chunks whose bytes were lost: reading it fails."""
        number = len(self.records)
        self.records.append(_Record(0, 0, CODEC_RAW, None, -1))
        self.group_of.append("<lost case>")  # the group of later records that point here
        self.damaged.add(number)
        return number

    def _add(self, meta: dict, data_offset: int, data_length: int) -> int:
        number = len(self.records)
        ahead = refers_ahead(meta, number, len(self.chunks))  # records cut out or moved
        if ahead:  # it and what depends on it do not read
            self.problems.append(f"{self.path.name}: record {number} ({RAW_DIR}/{meta['n']}) "
                                 + ahead)
            self.damaged.add(number)
            meta = {**meta, "p": None}
        if meta["n"].startswith("/") and meta.get("p") is not None:
            meta["n"] = self.group_of[meta["p"]] + meta["n"]
        lengths = meta.get("l", [])
        self.records.append(_Record(data_offset, data_length, meta.get("z", CODEC_RAW),
                                    meta.get("p"), sum(lengths)))
        start = 0
        for length in lengths:
            self.chunks.append((number, start, length))
            start += length
        self.recipes[meta["n"]] = meta
        self.group_last[group_of_name(meta["n"])] = number
        self.group_of.append(group_of_name(meta["n"]))
        return number

    # -- decoding --------------------------------------------------------------------------------

    def _cache(self, cache: OrderedDict, key: int, value: bytes) -> None:
        cache[key] = value
        cache.move_to_end(key)
        while len(cache) > _CACHE:
            cache.popitem(last=False)

    def window(self, fd: int, number: int | None) -> bytes:
        """The last 32 KiB of new data of record `number`'s group up to and including it."""
        if number is None:
            return b""
        chain = []
        while number is not None and number not in self._windows:
            chain.append(number)
            number = self.records[number].prev
        window = self._windows[number] if number is not None else b""
        for n in reversed(chain):
            window = (window + self._decode(fd, n, window))[-WINDOW:]
            self._cache(self._windows, n, window)
        return window

    def _decode(self, fd: int, number: int, prev_window: bytes) -> bytes:
        if number in self.damaged:
            raise ValueError(f"record {number} is damaged")
        rec = self.records[number]
        stored = self.fixed.get(number) or os.pread(fd, rec.data_length, rec.data_offset)
        if rec.codec == CODEC_RAW:
            data = stored
        elif rec.codec == CODEC_DEFLATE:
            dec = zlib.decompressobj(-15, zdict=deflate_dictionary(prev_window))
            data = dec.decompress(stored) + dec.flush()
        else:
            raise ValueError(f"unknown codec {rec.codec}")
        if len(data) != rec.new_length:
            raise ValueError(f"record {number} decodes to {len(data)} bytes, not {rec.new_length}")
        self._cache(self._decoded, number, data)
        return data

    def decoded(self, fd: int, number: int) -> bytes:
        data = self._decoded.get(number)
        if data is None:
            data = self._decode(fd, number, self.window(fd, self.records[number].prev))
        return data

    def chunk(self, fd: int, number: int) -> bytes:
        record, start, length = self.chunks[number]
        return self.decoded(fd, record)[start:start + length]

    def body(self, fd: int, recipe: dict) -> bytes:
        return b"".join(self.chunk(fd, n) for n in expand_numbers(recipe["c"]))

    def digests(self, fd: int) -> dict[bytes, int]:
        """Digest -> chunk number of every chunk (decodes the whole pack once)."""
        if self.by_digest is None:
            self.by_digest = {}
            for number in range(len(self.chunks)):
                self.by_digest.setdefault(chunk_digest(self.chunk(fd, number)), number)
        return self.by_digest


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
        for pack in self._packs.values():
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
        body_hash = hash_body(data)
        key = "meta" if name.startswith(META_PREFIX) else "bodies"
        with self._lock:
            pack = self._packs[key]
            stored_name, n = name, 1
            while (old := pack.recipes.get(stored_name)) is not None:
                if old["h"] == body_hash:
                    return f"{RAW_DIR}/{stored_name}"
                n += 1
                stored_name = f"{name}~{n}"
            with _ReadFd(pack.path) as fd:
                known = pack.digests(fd)
                prev = pack.group_last.get(group_of_name(stored_name))
                window = pack.window(fd, prev)
            numbers: list[int] = []
            new: dict[bytes, int] = {}
            new_chunks: list[bytes] = []
            next_number = len(pack.chunks)
            for chunk in split_chunks(data):
                digest = chunk_digest(chunk)
                number = known.get(digest, new.get(digest))
                if number is None:
                    number = new[digest] = next_number + len(new_chunks)
                    new_chunks.append(chunk)
                numbers.append(number)
            new_data = b"".join(new_chunks)
            codec, stored = CODEC_RAW, new_data
            if new_data:
                comp = zlib.compressobj(6, zlib.DEFLATED, -15, 9, zlib.Z_DEFAULT_STRATEGY,
                                        deflate_dictionary(window))
                packed = comp.compress(new_data) + comp.flush()
                if len(packed) < len(new_data):
                    codec, stored = CODEC_DEFLATE, packed
            group = group_of_name(stored_name)
            short = stored_name[len(group):] if prev is not None and "/" in stored_name else None
            meta = {"n": short or stored_name, "s": len(data), "h": body_hash,
                    "c": compact_numbers(numbers), "l": [len(c) for c in new_chunks], "z": codec}
            if prev is not None:
                meta["p"] = prev
            meta_bytes = json.dumps(meta, separators=(",", ":")).encode()
            header = HEADER.pack(b"B", len(meta_bytes), len(stored),
                                  zlib.crc32(meta_bytes + stored))
            appender = self._appenders.get(key)
            if appender is None:
                appender = self._appenders[key] = DurableAppender(pack.path)
            start = appender.append(header + meta_bytes + stored)
            # only now, with the bytes durable, does the in-memory index learn about them
            number = pack._add(meta, start + HEADER.size + len(meta_bytes), len(stored))
            known.update(new)
            pack._cache(pack._decoded, number, new_data)
            pack._cache(pack._windows, number, (window + new_data)[-WINDOW:])
            pack.good_end = start + HEADER.size + len(meta_bytes) + len(stored)
            return f"{RAW_DIR}/{stored_name}"

    # -- reading --------------------------------------------------------------------------------

    def _locate(self, path: str) -> tuple[_Pack, dict]:
        name = path[len(RAW_DIR) + 1:] if path.startswith(RAW_DIR + "/") else path
        pack = self._packs["meta" if name.startswith(META_PREFIX) else "bodies"]
        if name not in pack.recipes:
            with self._lock:
                pack.scan()  # a writer in another process may have added it since
        if name not in pack.recipes:
            raise RawBodyMissingError(f"{path}: no such raw body in {self.dir}; see Run.verify()")
        return pack, pack.recipes[name]

    def read(self, path: str) -> bytes:
        """The exact bytes stored under `path` (`raw/<name>` or `<name>`); checks their hash."""
        pack, recipe = self._locate(path)
        with self._lock, _ReadFd(pack.path) as fd:
            try:
                data = pack.body(fd, recipe)
            except (zlib.error, ValueError, IndexError) as exc:
                raise RunError(f"{path}: cannot be decoded ({exc}); see Run.verify()") from exc
        if len(data) != recipe["s"] or hash_body(data) != recipe["h"]:
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

    def torn_tails(self) -> list[str]:
        """Packs ending in a torn record: a crash mid-write, not damage (no body in it was ever
        acknowledged); cut off the next time the store is opened for writing."""
        out = []
        for name in _PACKS.values():
            fresh = _Pack(self.dir / name)
            fresh.scan()
            if fresh.torn_tail:
                out.append(f"{name}: torn record at byte {fresh.good_end} (interrupted write)")
        return out

    def verify(self) -> list[str]:
        """Decode every record of the packs on disk and check every body hash; list problems
        (a torn last record is not one: see `torn_tails`)."""
        problems: list[str] = []
        for name in _PACKS.values():
            fresh = _Pack(self.dir / name)
            fresh.scan()
            problems += fresh.problems + fresh.repaired
            if not fresh.path.exists():
                continue
            with _ReadFd(fresh.path) as fd:
                for rname, recipe in fresh.recipes.items():
                    try:
                        data = fresh.body(fd, recipe)
                    except (zlib.error, ValueError, IndexError):
                        problems.append(f"{RAW_DIR}/{rname}: cannot be decoded")
                        continue
                    if len(data) != recipe["s"] or hash_body(data) != recipe["h"]:
                        problems.append(f"{RAW_DIR}/{rname}: bytes do not match the recorded hash")
        return problems

    def close(self) -> None:
        with self._lock:
            for appender in self._appenders.values():
                appender.close()
            self._appenders.clear()


class _ReadFd:
    """A read descriptor of a pack for one operation (-1 when the pack does not exist yet)."""

    def __init__(self, path: Path):
        self.path = path
        self.fd = -1

    def __enter__(self) -> int:
        if self.path.exists():
            self.fd = os.open(self.path, os.O_RDONLY)
        return self.fd

    def __exit__(self, *exc: object) -> None:
        if self.fd >= 0:
            os.close(self.fd)


def read_raw(run_dir: str | Path, path: str) -> bytes:
    """The exact bytes of one raw file of a run (`path` as recorded, e.g. `raw/Q1__m__sql/...`).

    Opens the store read-only each call: to read many, use `RawStore(run_dir, writable=False)`.
    """
    return RawStore(run_dir, writable=False).read(path)
