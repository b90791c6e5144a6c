"""Issue 26 item 8: the raw store, measured against the simplest store with the same guarantees.

    .venv/bin/python bench/bench_store_simple.py RUN_DIR [RUN_DIR ...] [--repeat 3] [--flips 8]

RUN_DIR is a finished run whose raw bodies are the workload, e.g. the offline demo grid
(multi-turn: up to 12 turns a case, every turn re-sends the conversation):

    parquet-agent corpus build --rows 2000 --seed 0 --out /tmp/s8-sample
    parquet-agent demo --data /tmp/s8-sample --runs /tmp/s8-runs --quiet

and the FinanceBench run of `bench/store_bench.py --cases 100 --keep /tmp/s8-fb` (real SDK, 2 turns
+ judge, 4,000-character excerpts of real 10-Ks). About 2-3 minutes for both on the 2-core VM (most of it the\none-file-per-body variant's fsyncs).

Printed:

1. Lines of today's store by part (function-level attribution below: `_PARTS`; code lines exclude
   docstrings, comments and blank lines) and of the prototype here.
2. Per workload, bytes on disk of the same bodies written in the same order into: today's
   `RawStore` (content-defined chunks stored once + a per-case deflate window, repaired by CRC
   syndrome), `SimplePack` (this file: one append-only file of independent records, each with
   its own CRC-32s, compressed alone with deflate or zstd), and one file per body (`FilePerBody`,
   with a BLAKE2b index). Also computed, not written: chunk dedup without compression, chunk
   dedup with each record deflated alone, and a zstd delta against the case's previous body of the
   same kind (what a chain without chunking would store).
3. Writes, interleaved (the variants rotate each repeat): wall, thread CPU per record, fsync +
   fdatasync calls per case (counted by wrapping `os.fsync`/`os.fdatasync` in this process), and
   verify (open fresh, decode every record, check every body hash) wall and CPU. Medians.
4. Damage: `--flips` seeded single-bit flips (half anywhere in a random record, half in a random
   record's header), each on a fresh copy of the store, then one two-bit burst per record sampled
   (beyond the guarantee): bodies that no longer read, problems `verify()` names, and whether
   every lost body is named.

`zstandard` is optional (not a dependency of the package): without it the zstd rows are skipped.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import io
import json
import os
import random
import shutil
import statistics
import struct
import tempfile
import threading
import time
import tokenize
import zlib
from collections import Counter
from pathlib import Path

from parquet_agent.files import DurableAppender, fsync_dir
from parquet_agent.store.blobs import RawStore
from parquet_agent.store.packformat import HEADER, chunk_digest, deflate_dictionary, split_chunks

try:
    import zstandard
except ImportError:  # the zstd rows are skipped
    zstandard = None

PACKAGE = Path(__file__).resolve().parents[1] / "parquet_agent" / "store"

# -- 1. lines by part ------------------------------------------------------------------------------

FRAME, CHUNK, CHAIN, REPAIR, SEAL, JREPAIR, MREPAIR = (
    "pack framing, index, read/write API", "content-defined chunking + dedup",
    "per-case deflate chain", "damage scan + bit-flip repair (packs)",
    "sealed-journal CRC (sealing.py)", "journal line repair", "manifest repair")
# qualname (or top-level constant) -> part; a function serving several parts goes to the one
# it mostly serves (RawStore.write: framing; _Pack.scan: damage scan; _Pack._add: framing)
_PARTS: dict[str, dict[str, str]] = {
    "blobs.py": {
        "*": FRAME, "_Pack.scan": REPAIR, "_Pack._repaired": REPAIR, "_Pack._resync": CHUNK,
        "_Pack._lost_record": REPAIR, "_Pack.window": CHAIN, "_Pack._decode": CHAIN,
        "_Pack.chunk": CHUNK, "_Pack.body": CHUNK, "_Pack.digests": CHUNK,
        "_Pack._cache": CHAIN, "RawStore.torn_tails": FRAME,
    },
    "packformat.py": {
        "*": FRAME, "_ZDICT": CHAIN, "WINDOW": CHAIN, "_CUT": CHUNK, "_MIN_CHUNK": CHUNK,
        "chunk_digest": CHUNK, "split_chunks": CHUNK, "deflate_dictionary": CHAIN,
        "compact_numbers": CHUNK, "expand_numbers": CHUNK, "_numbers": CHUNK,
        "refers_ahead": CHUNK, "starts_record": REPAIR, "next_record": REPAIR, "_fits": REPAIR,
        "repair_record": REPAIR,
    },
    "bitflip.py": {"*": REPAIR},
    "sealing.py": {"*": SEAL},
    "journal.py": {"_undo_flips": JREPAIR, "_unchained": JREPAIR, "_one_flip": JREPAIR,
                   "_candidates": JREPAIR, "_NEAR_NEWLINE": JREPAIR},
    "manifest.py": {"read_manifest": MREPAIR, "_flip_in_a_value": MREPAIR,
                    "_within_one_bit": MREPAIR},
}


def _code_lines(source: str) -> set[int]:
    """Line numbers holding code: not blank, not only a comment, not in a docstring."""
    tree = ast.parse(source)
    doc: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                doc.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    code: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                            tokenize.DEDENT, tokenize.ENDMARKER):
            code.update(range(tok.start[0], tok.end[0] + 1))
    return code - doc


def _spans(tree: ast.Module) -> list[tuple[str, int, int]]:
    """(qualname, first line, last line) of top-level statements and of methods."""
    out = []
    for node in tree.body:
        end = node.end_lineno or node.lineno
        if isinstance(node, ast.ClassDef):  # its decorators count with its header
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            out.append((node.name, first, node.body[0].lineno - 1))
            for item in node.body:
                name = getattr(item, "name", None)
                out.append((f"{node.name}.{name}" if name else node.name, item.lineno,
                            item.end_lineno or item.lineno))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append((node.name, node.lineno, end))
        else:
            targets = [t.id for t in getattr(node, "targets", [getattr(node, "target", None)])
                       if isinstance(t, ast.Name)]
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple):
                targets = [t.id for t in node.targets[0].elts if isinstance(t, ast.Name)]
            out.append((targets[0] if targets else "*", node.lineno, end))
    return out


def count_lines(path: Path, parts: dict[str, str]) -> Counter:
    """Code lines of `path` per part (a statement not named in `parts` counts under "*")."""
    source = path.read_text()
    code = _code_lines(source)
    counts: Counter = Counter()
    for qualname, first, last in _spans(ast.parse(source)):
        part = parts.get(qualname, parts.get(qualname.split(".")[0] + ".*", parts.get("*")))
        if part is not None:
            counts[part] += len(code & set(range(first, last + 1)))
    return counts


def report_lines() -> None:
    by_part: Counter = Counter()
    print("today's store, code lines (no docstrings/comments/blanks) by part:")
    for name, parts in _PARTS.items():
        path = PACKAGE / name
        counts = count_lines(path, parts)
        by_part.update(counts)
        total = len(path.read_text().splitlines())
        print(f"  {name:14s} {total:4d} lines, {len(_code_lines(path.read_text())):4d} code; "
              + ", ".join(f"{p}: {n}" for p, n in counts.most_common()))
    for part, n in by_part.most_common():
        print(f"  {n:5d}  {part}")
    here = Path(__file__).read_text()
    code = _code_lines(here)
    spans = {q: (a, b) for q, a, b in _spans(ast.parse(here))}
    proto = sum(len(code & set(range(a, b + 1))) for q, (a, b) in spans.items()
                if q.split(".")[0] in ("SimplePack", "_SimpleRecord", "_SHEAD"))
    print(f"  prototype SimplePack (this file): {proto} code lines")


# -- 2. the prototype ------------------------------------------------------------------------------

# magic | name length u16 | stored length u32 | codec u8 | BLAKE2b-128 of the body |
# CRC-32 of these fields + name ; then name ; stored bytes ; CRC-32 of the stored bytes
_SHEAD = struct.Struct(">2sHIB16sI")
_MAGIC, _RAW, _DEFLATE, _ZSTD = b"\xa5R", 0, 1, 2


class _SimpleRecord:
    __slots__ = ("start", "stored_at", "stored_len", "codec", "digest")

    def __init__(self, start: int, stored_at: int, stored_len: int, codec: int, digest: bytes):
        self.start, self.stored_at, self.stored_len = start, stored_at, stored_len
        self.codec, self.digest = codec, digest


class SimplePack:
    """One append-only file of independent records (`raw/simple.pack`). A record is durable
    (one write + fdatasync) before `write` returns. No record refers to another, so damage to
    one costs that one: a bad data CRC names it by its (CRC-checked) header; a bad header is
    skipped to the next record whose header CRC holds, and named by its offset and the name as
    found. A torn last record (crash mid-append) is ignored on read."""

    def __init__(self, run_dir: Path, codec: str = "deflate", *, writable: bool = True):
        self.path = Path(run_dir) / "raw" / "simple.pack"
        self.codec = {"raw": _RAW, "deflate": _DEFLATE, "zstd": _ZSTD}[codec]
        self.index: dict[str, _SimpleRecord] = {}
        self.problems: list[str] = []
        self._lock = threading.Lock()
        self._appender = None
        if writable:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            self._scan(self.path.read_bytes())
        if writable:
            self._appender = DurableAppender(self.path)

    def _header(self, data: bytes, pos: int) -> tuple[str, _SimpleRecord, int] | None:
        if len(data) - pos < _SHEAD.size or data[pos:pos + 2] != _MAGIC:
            return None
        magic, name_len, stored_len, codec, digest, crc = _SHEAD.unpack_from(data, pos)
        name_at = pos + _SHEAD.size
        if zlib.crc32(data[name_at:name_at + name_len],
                      zlib.crc32(data[pos:name_at - 4])) != crc:
            return None
        stored_at = name_at + name_len
        name = data[name_at:stored_at].decode()
        return name, _SimpleRecord(pos, stored_at, stored_len, codec, digest), stored_at + \
            stored_len + 4

    def _scan(self, data: bytes) -> None:
        pos = 0
        while pos < len(data):
            found = self._header(data, pos)
            if found is None:  # header damaged or torn: the next record whose header holds
                nxt = data.find(_MAGIC, pos + 1)
                while nxt >= 0 and self._header(data, nxt) is None:
                    nxt = data.find(_MAGIC, nxt + 1)
                as_found = data[pos + _SHEAD.size:pos + _SHEAD.size + 80].split(b"\xa5")[0]
                where = f"bytes {pos}-{nxt if nxt >= 0 else len(data)}"
                self.problems.append(
                    f"{self.path.name}: {where} are not a readable record (header damaged; "
                    f"name as found: {as_found.decode(errors='replace')!r}); if this is the "
                    "last record, a write was interrupted")
                if nxt < 0:
                    return
                pos = nxt
                continue
            name, record, end = found
            if end > len(data):  # torn last record: never acknowledged
                self.problems.append(f"{self.path.name}: torn last record raw/{name}")
                return
            stored = data[record.stored_at:record.stored_at + record.stored_len]
            if zlib.crc32(stored) != int.from_bytes(data[end - 4:end], "big"):
                self.problems.append(f"{self.path.name}: record at byte {pos} (raw/{name}) "
                                     "does not match its CRC (damaged); its body is lost")
            else:
                self.index[name] = record
            pos = end

    def write(self, name: str, data: bytes) -> str:
        digest = hashlib.blake2b(data, digest_size=16).digest()
        with self._lock:
            stored_name, n = name, 1
            while (old := self.index.get(stored_name)) is not None:
                if old.digest == digest:
                    return f"raw/{stored_name}"
                n += 1
                stored_name = f"{name}~{n}"
            codec, stored = _RAW, data
            if self.codec == _DEFLATE:
                comp = zlib.compressobj(6, zlib.DEFLATED, -15, 9, zlib.Z_DEFAULT_STRATEGY,
                                        deflate_dictionary(b""))
                packed = comp.compress(data) + comp.flush()
            elif self.codec == _ZSTD:
                packed = zstandard.ZstdCompressor(level=3).compress(data)
            if self.codec != _RAW and len(packed) < len(data):
                codec, stored = self.codec, packed
            name_bytes = stored_name.encode()
            head = _SHEAD.pack(_MAGIC, len(name_bytes), len(stored), codec, digest, 0)[:-4]
            crc = zlib.crc32(name_bytes, zlib.crc32(head))
            start = self._appender.append(head + crc.to_bytes(4, "big") + name_bytes + stored
                                          + zlib.crc32(stored).to_bytes(4, "big"))
            self.index[stored_name] = _SimpleRecord(start, start + _SHEAD.size + len(name_bytes),
                                                    len(stored), codec, digest)
            return f"raw/{stored_name}"

    def read(self, path: str) -> bytes:
        record = self.index[path.removeprefix("raw/")]
        with open(self.path, "rb") as f:
            f.seek(record.stored_at)
            stored = f.read(record.stored_len + 4)
        return self._decode(record, stored[:-4], stored[-4:])

    def _decode(self, record: _SimpleRecord, stored: bytes, crc: bytes) -> bytes:
        if zlib.crc32(stored) != int.from_bytes(crc, "big"):
            raise ValueError("stored bytes do not match their CRC")
        if record.codec == _DEFLATE:
            dec = zlib.decompressobj(-15, zdict=deflate_dictionary(b""))
            data = dec.decompress(stored) + dec.flush()
        elif record.codec == _ZSTD:
            data = zstandard.ZstdDecompressor().decompress(stored)
        else:
            data = stored
        if hashlib.blake2b(data, digest_size=16).digest() != record.digest:
            raise ValueError("body does not match its hash")
        return data

    def names(self) -> list[str]:
        return [f"raw/{n}" for n in self.index]

    def verify(self) -> list[str]:
        fresh = SimplePack(self.path.parent.parent, writable=False)
        problems = list(fresh.problems)
        data = self.path.read_bytes()
        for name, r in fresh.index.items():
            end = r.stored_at + r.stored_len
            try:
                fresh._decode(r, data[r.stored_at:end], data[end:end + 4])
            except (ValueError, zlib.error, getattr(zstandard, "ZstdError", ValueError)) as exc:
                problems.append(f"raw/{name}: {exc}")
        return problems

    def close(self) -> None:
        if self._appender is not None:
            self._appender.close()


class FilePerBody:
    """`raw/<name>` holds the body as written (cat-able); `raw/index.jsonl` its BLAKE2b-128, one
    durable line each. Durable before return: the file (fsync), its folder (the new name), and
    new folders' parents, then the index line (fdatasync)."""

    def __init__(self, run_dir: Path, *, writable: bool = True):
        self.dir = Path(run_dir) / "raw"
        self.index: dict[str, str] = {}
        if (self.dir / "index.jsonl").exists():
            for line in (self.dir / "index.jsonl").read_bytes().splitlines():
                try:
                    row = json.loads(line)
                    self.index[row["n"]] = row["h"]
                except (ValueError, KeyError, TypeError):
                    pass  # a damaged index line: its body shows as unindexed in verify
        self._appender = None
        if writable:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._appender = DurableAppender(self.dir / "index.jsonl")

    def write(self, name: str, data: bytes) -> str:
        digest = hashlib.blake2b(data, digest_size=16).hexdigest()
        path = self.dir / name
        if not path.parent.exists():
            path.parent.mkdir(parents=True)
            fsync_dir(path.parent.parent)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        fsync_dir(path.parent)
        self._appender.append(json.dumps({"n": name, "h": digest}).encode() + b"\n")
        self.index[name] = digest
        return f"raw/{name}"

    def read(self, path: str) -> bytes:
        name = path.removeprefix("raw/")
        data = (self.dir / name).read_bytes()
        if hashlib.blake2b(data, digest_size=16).hexdigest() != self.index[name]:
            raise ValueError("body does not match its hash")
        return data

    def names(self) -> list[str]:
        return [f"raw/{n}" for n in self.index]

    def verify(self) -> list[str]:
        fresh = FilePerBody(self.dir.parent, writable=False)
        problems = []
        for name in fresh.index:
            try:
                fresh.read(name)
            except (OSError, ValueError) as exc:
                problems.append(f"raw/{name}: {exc}")
        return problems

    def close(self) -> None:
        if self._appender is not None:
            self._appender.close()


def _open(kind: str, run_dir: Path, writable: bool = True):
    if kind == "today":
        return RawStore(run_dir, writable=writable)
    if kind == "files":
        return FilePerBody(run_dir, writable=writable)
    return SimplePack(run_dir, kind.split("-")[1], writable=writable)


def _disk_bytes(run_dir: Path) -> int:
    """Bytes the raw folder takes on disk (allocated blocks, folders included)."""
    return sum(p.lstat().st_blocks * 512 for p in (run_dir / "raw").rglob("*")) + \
        (run_dir / "raw").lstat().st_blocks * 512


def _file_bytes(run_dir: Path) -> int:
    return sum(p.stat().st_size for p in (run_dir / "raw").rglob("*") if p.is_file())


# -- counting syncs --------------------------------------------------------------------------------

SYNCS = [0]


def _counted(sync):
    def wrapped(fd: int) -> None:
        SYNCS[0] += 1
        sync(fd)
    return wrapped


os.fsync, os.fdatasync = _counted(os.fsync), _counted(os.fdatasync)


# -- 3. sizes computed without writing -------------------------------------------------------------

def computed_sizes(bodies: list[tuple[str, bytes]]) -> dict[str, int]:
    seen: set[bytes] = set()
    dedup = alone = delta = 0
    previous: dict[tuple[str, str], bytes] = {}
    for name, data in bodies:
        new = []
        for chunk in split_chunks(data):
            digest = chunk_digest(chunk)
            if digest not in seen:
                seen.add(digest)
                new.append(chunk)
        new_data = b"".join(new)
        dedup += len(new_data)
        if new_data:
            comp = zlib.compressobj(6, zlib.DEFLATED, -15, 9, zlib.Z_DEFAULT_STRATEGY,
                                    deflate_dictionary(b""))
            alone += min(len(new_data), len(comp.compress(new_data) + comp.flush()))
        if zstandard is not None:
            key = (name.split("/")[0], "request" if "request" in name else "other")
            prev = previous.get(key)
            if prev:
                zdict = zstandard.ZstdCompressionDict(
                    prev, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
                delta += len(zstandard.ZstdCompressor(level=3, dict_data=zdict).compress(data))
            else:
                delta += len(zstandard.ZstdCompressor(level=3).compress(data))
            previous[key] = data
    out = {"chunk dedup, no compression (data only)": dedup,
           "chunk dedup + each record deflated alone (data only)": alone}
    if zstandard is not None:
        out["no chunks: zstd-3 delta vs the case's previous body of its kind (data only)"] = delta
    return out


# -- 4. damage -------------------------------------------------------------------------------------

def record_spans(kind: str, pack: Path) -> list[tuple[int, int, int]]:
    """(start, header length, record length) of every record of an intact pack."""
    data = pack.read_bytes()
    out, pos = [], 0
    while pos < len(data):
        if kind == "today":
            _, meta_len, data_len, _ = HEADER.unpack_from(data, pos)
            size, head = HEADER.size + meta_len + data_len, HEADER.size + meta_len
        else:
            _, name_len, stored_len, *_ = _SHEAD.unpack_from(data, pos)
            size, head = _SHEAD.size + name_len + stored_len + 4, _SHEAD.size + name_len
        out.append((pos, head, size))
        pos += size
    return out


def damage(kind: str, source: Path, bits: list[int], names: list[str]) -> tuple[int, int, int,
                                                                                int]:
    """Flip `bits` (absolute bit offsets) in a copy of the store's pack: (bodies that no longer
    read, problems the store's verify() lists, lost bodies it names by their own name, lost
    bodies named either way: by the store, or absent from its index, which `Run.verify()`'s
    check of every journaled raw path against the store then names)."""
    work = Path(tempfile.mkdtemp(prefix="s8-flip-"))
    try:
        shutil.copytree(source / "raw", work / "raw")
        pack = work / "raw" / ("bodies.pack" if kind == "today" else "simple.pack")
        data = bytearray(pack.read_bytes())
        for bit in bits:
            data[bit >> 3] ^= 1 << (bit & 7)
        pack.write_bytes(bytes(data))
        store = _open(kind, work, writable=False)
        lost = []
        for name in names:
            try:
                store.read(name)
            except Exception:  # noqa: BLE001 - any failure to give the body back is a loss
                lost.append(name)
        problems = store.verify()
        indexed = set(store.names())
        by_store = [n for n in lost if any(n.removeprefix("raw/") in p for p in problems)]
        either = [n for n in lost if n in by_store or n not in indexed]
        return len(lost), len(problems), len(by_store), len(either)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def recipe_bytes(pack: Path) -> tuple[int, int]:
    """Today's pack: bytes of its records' headers + recipes, and those recipes deflated alone."""
    data = pack.read_bytes()
    plain = packed = 0
    for start, head, _ in record_spans("today", pack):
        meta = data[start + HEADER.size:start + head]
        plain += head
        comp = zlib.compressobj(6, zlib.DEFLATED, -15)
        packed += HEADER.size + len(comp.compress(meta) + comp.flush())
    return plain, packed


# -- the run ---------------------------------------------------------------------------------------

def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def bench_workload(run_dir: Path, args: argparse.Namespace, kinds: list[str]) -> None:
    source = RawStore(run_dir, writable=False)
    bodies = [(n.removeprefix("raw/"), source.read(n)) for n in source.names()]
    cases = {n.split("/")[0] for n, _ in bodies if not n.startswith(("_", "meta/"))}
    requests = [len(b) for n, b in bodies if "request" in n]
    logical = sum(len(b) for _, b in bodies)
    print(f"\n== {run_dir}: {len(bodies)} bodies in {len(cases)} cases, {logical:,} B as "
          f"written ({logical / len(cases) / 1024:.1f} KiB/case); requests: {len(requests)}, "
          f"median {int(_median(requests)):,} B, largest {max(requests):,} B")
    root = Path(tempfile.mkdtemp(prefix="s8-store-"))
    rows: dict[str, dict[str, list[float]]] = {k: {} for k in kinds}
    try:
        for rep in range(args.repeat):
            order = kinds[rep % len(kinds):] + kinds[:rep % len(kinds)]
            for kind in order:
                run = root / kind
                shutil.rmtree(run, ignore_errors=True)
                run.mkdir()
                SYNCS[0] = 0
                store = _open(kind, run)
                cpu, wall = 0.0, time.perf_counter()
                for name, data in bodies:
                    c = time.thread_time()
                    store.write(name, data)
                    cpu += time.thread_time() - c
                wall = time.perf_counter() - wall
                store.close()
                syncs = SYNCS[0]
                w, c = time.perf_counter(), time.process_time()
                problems = _open(kind, run, writable=False).verify()
                vwall, vcpu = time.perf_counter() - w, time.process_time() - c
                assert not problems, problems
                row = rows[kind]
                for key, value in (("write_s", wall), ("cpu_us", cpu / len(bodies) * 1e6),
                                   ("syncs", syncs / len(cases)), ("verify_s", vwall),
                                   ("verify_cpu_s", vcpu), ("file", _file_bytes(run)),
                                   ("disk", _disk_bytes(run))):
                    row.setdefault(key, []).append(value)
        base = _median(rows["today"]["file"])
        print(f"{'store':16s} {'file bytes':>11s} {'vs today':>8s} {'disk bytes':>11s} "
              f"{'B/case':>8s} {'write s':>8s} {'CPU us/rec':>10s} {'syncs/case':>10s} "
              f"{'verify s':>8s} {'verify CPU s':>12s}")
        for kind in kinds:
            r = {k: _median(v) for k, v in rows[kind].items()}
            print(f"{kind:16s} {int(r['file']):>11,} {r['file'] / base:>8.2f} "
                  f"{int(r['disk']):>11,} {int(r['file'] / len(cases)):>8,} {r['write_s']:>8.2f} "
                  f"{r['cpu_us']:>10.0f} {r['syncs']:>10.1f} {r['verify_s']:>8.2f} "
                  f"{r['verify_cpu_s']:>12.2f}")
        for label, size in computed_sizes(bodies).items():
            print(f"  computed: {label}: {size:,} B ({size / base:.2f} x today's pack file)")
        plain, packed = recipe_bytes(root / "today" / "raw" / "bodies.pack")
        print(f"  today's bodies.pack: record headers + recipes {plain:,} B of "
              f"{_file_bytes(root / 'today'):,} B; recipes deflated alone would be {packed:,} B")
        names = [f"raw/{n}" for n, _ in bodies if not n.startswith("meta/")]
        rng = random.Random(0)
        for kind in [k for k in kinds if k != "files"]:
            pack = root / kind / "raw" / ("bodies.pack" if kind == "today" else "simple.pack")
            spans = record_spans(kind, pack)
            results = []
            for i in range(args.flips + args.flips // 2):
                start, head, size = spans[rng.randrange(len(spans))]
                if i < args.flips:  # one bit: anywhere in the record, or in its header
                    span = size if i % 2 == 0 else head
                    bits = [8 * start + rng.randrange(8 * span)]
                else:  # two bits in one record, beyond the guarantee
                    first = rng.randrange(8 * size)
                    bits = [8 * start + first, 8 * start + (first + 8 * 97) % (8 * size)]
                results.append((len(bits), *damage(kind, root / kind, bits, names)))
            for nbits in (1, 2):
                hit = [r for r in results if r[0] == nbits]
                if hit:
                    print(f"  {kind}: {len(hit)} x {nbits} flipped bit(s) in one record: bodies "
                          f"lost {[r[1] for r in hit]}; problems listed {[r[2] for r in hit]}; "
                          f"of the lost, named by the store {[r[3] for r in hit]}, by the store "
                          f"or the journal check {[r[4] for r in hit]}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dirs", type=Path, nargs="+")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--flips", type=int, default=8, help="single-bit flips per store (and "
                    "half as many two-bit bursts)")
    args = ap.parse_args()
    kinds = ["today", "simple-deflate"] + (["simple-zstd"] if zstandard else []) + ["files"]
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores; zstandard "
          f"{getattr(zstandard, '__version__', 'absent')}")
    report_lines()
    for run_dir in args.run_dirs:
        bench_workload(run_dir, args, kinds)


if __name__ == "__main__":
    main()
