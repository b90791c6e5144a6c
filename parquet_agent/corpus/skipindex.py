"""The data-skipping index: per data page of `parsed_md`, summaries that can say "this page
cannot contain this literal".

Why: a whole-corpus `contains`/`LIKE`/`ILIKE` over `parsed_md` decompresses all the Markdown (16.6 s
of one core at full scale; ILIKE ~2.3x that). With this index a worker decompresses only the
pages that may match (`tools/prune.py` decides what a query requires).

Two summaries, each exact on its own (never a false negative), so their intersection is too:
- grams (corpus/skipgrams.py): a bloom filter of the page's byte 4-grams; rules out pages for
  literals with a gram rare somewhere, including pieces of words;
- words (corpus/skipwords.py): the pages of every rare word; rules out pages for literals whose
  grams are all common but whose words are not ("Calancor Corporation", "1,234,567").
A literal's candidate pages are those both summaries keep: never more than the better one's.
Row groups that cannot be read page by page get one pseudo-page that both summaries keep.

Files (`DIR/_skip/`, written to a temporary folder and swapped in): `skip.json` (schema_version,
snapshot_id, parameters, counts), `bits.npy` (uint8 [2**bits, ceil(P/8)]), `pages.parquet`
(file, row_group, first_row, rows, offset, size, text_bytes, fold_unsafe, long_words),
`words.arrow` (word, pages holding it: sorted by word) and `postings.npy` (uint32 page numbers).
An index of an older schema_version is refused, with the command that rebuilds it.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from parquet_agent.corpus.pages import PageFormatError, column_format, column_pages, read_values
from parquet_agent.corpus.skipgrams import FILTER_BITS, GRAM, UNSAFE_FOLD, GramRule, fold_unsafe, gram_values
from parquet_agent.corpus.skipwords import BlockWords, WordCollector, WordIndex, word_cap, write_words
from parquet_agent.corpus.snapshot import CorpusSnapshot
from parquet_agent.errors import StaleIndexError

SCHEMA_VERSION = 2  # 1: grams only (main before issue 28)
SKIP_DIR = "_skip"
CHUNK = 64  # pages summarised at once before their bits are packed (a multiple of 8)
BLOCK = 8 * CHUNK  # pages per task of a (parallel) build: 1 MiB of packed bits at 2**14
PARALLEL_FROM_PAGES = 2 * BLOCK  # smaller corpora build in-process: starting workers costs more
PAGES_SCHEMA = pa.schema([
    ("file", pa.string()), ("row_group", pa.int32()), ("first_row", pa.int32()),
    ("rows", pa.int32()), ("offset", pa.int64()), ("size", pa.int32()),
    ("text_bytes", pa.int64()), ("fold_unsafe", pa.bool_()), ("long_words", pa.bool_()),
])


# -- what a query requires -------------------------------------------------------------------


@dataclass(frozen=True)
class Literal:
    """The text must contain `text` (case-insensitively when `fold`)."""

    text: str
    fold: bool = False


@dataclass(frozen=True)
class AllOf:
    parts: tuple  # of Literal | AllOf | AnyOf


@dataclass(frozen=True)
class AnyOf:
    parts: tuple


# -- building --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Page:
    file: str
    row_group: int
    first_row: int
    rows: int
    offset: int  # -1: the row group is not readable by page (summary: every bit set)
    size: int  # page bytes; for offset -1, the column chunk's uncompressed bytes


@dataclass(frozen=True)
class SkipSummary:
    folder: Path
    pages: int
    bytes: int
    seconds: float

    def summary(self) -> str:
        return (f"skipping index: {self.pages:,} pages, {self.bytes / 2**20:.1f} MiB, "
                f"{self.seconds:.1f} s -> {self.folder / SKIP_DIR}")


def _walk_pages(folder: Path, snapshot: CorpusSnapshot) -> tuple[list[_Page], dict]:
    pages: list[_Page] = []
    formats: dict = {}  # (file, row group) -> (codec, nullable)
    for entry in snapshot.files:
        meta = pq.read_metadata(folder / entry.name)
        column = meta.schema.to_arrow_schema().get_field_index("parsed_md")
        fd = os.open(folder / entry.name, os.O_RDONLY)
        try:
            for g in range(meta.num_row_groups):
                try:
                    spans = column_pages(fd, meta, g, column)
                    formats[(entry.name, g)] = column_format(meta, g, column)
                except PageFormatError:
                    spans = None
                if spans is None:  # size: the chunk's text bytes, for the worker's memory budget
                    chunk = meta.row_group(g).column(column)
                    pages.append(_Page(entry.name, g, 0, meta.row_group(g).num_rows, -1,
                                       chunk.total_uncompressed_size))
                    continue
                pages.extend(_Page(entry.name, g, s.first_row, s.rows, s.offset, s.size) for s in spans)
        finally:
            os.close(fd)
    return pages, formats


def _page_text(page: _Page, fds: dict, formats: dict) -> bytes | None:
    """The page's cells joined by NUL (grams across the joint only add candidates), or None."""
    if page.offset < 0:
        return None
    codec, nullable = formats[(page.file, page.row_group)]
    try:
        values = read_values(fds[page.file], page.offset, page.size, codec=codec, nullable=nullable)
    except PageFormatError:
        return None
    return b"\x00".join(v for v in values if v)


def build_skip_index(folder: str | Path, *, snapshot: CorpusSnapshot | None = None,
                     n: int = GRAM, bits: int = FILTER_BITS, jobs: int | None = None,
                     block: int = BLOCK) -> SkipSummary:
    """Build `folder/_skip/` for the snapshot's files (one pass over the Markdown pages).

    `jobs` worker processes summarise blocks of `block` pages (a multiple of 8) each (default
    jobs: 2, or 1 below PARALLEL_FROM_PAGES pages); the files are the same bytes whatever `jobs`
    and `block` are.
    """
    if block <= 0 or block % 8:
        raise ValueError(f"block must be a positive multiple of 8 pages, got {block}")
    started = time.monotonic()
    folder = Path(folder)
    snapshot = snapshot or CorpusSnapshot.take(folder)
    pages, formats = _walk_pages(folder, snapshot)
    if jobs is None:
        jobs = 1 if len(pages) < PARALLEL_FROM_PAGES else min(2, os.cpu_count() or 1)
    tmp = folder / f"{SKIP_DIR}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        found = _summarise(folder, pages, formats, n, bits, max(1, int(jobs)), block)
        np.save(tmp / "bits.npy", found.matrix)
        table, postings = found.words.finish()
        write_words(tmp, table, postings)
        pq.write_table(pa.table({
            "file": [p.file for p in pages], "row_group": [p.row_group for p in pages],
            "first_row": [p.first_row for p in pages], "rows": [p.rows for p in pages],
            "offset": [p.offset for p in pages], "size": [p.size for p in pages],
            "text_bytes": found.text_bytes, "fold_unsafe": found.unsafe, "long_words": found.long_words,
        }, schema=PAGES_SCHEMA), tmp / "pages.parquet")
        seconds = time.monotonic() - started
        size = sum(f.stat().st_size for f in tmp.iterdir())
        info = {"schema_version": SCHEMA_VERSION, "snapshot_id": snapshot.snapshot_id,
                "gram": n, "filter_bits": bits, "pages": len(pages), "bytes": size,
                "words": {"cap_pages": found.words.cap, "vocabulary": table.num_rows,
                          "listed": int((table.column("pages").to_numpy() <= found.words.cap).sum()),
                          "postings": len(postings)},
                "files": [e.name for e in snapshot.files],
                "built_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "build_seconds": round(seconds, 3)}
        (tmp / "skip.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
        _swap_in(tmp, folder / SKIP_DIR)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return SkipSummary(folder, len(pages), size, seconds)


@dataclass
class _Summaries:
    matrix: np.ndarray  # the bit-sliced gram filters
    text_bytes: np.ndarray  # per page
    unsafe: np.ndarray  # per page: holds UNSAFE_FOLD text
    long_words: np.ndarray  # per page: holds a word too long to list (or is unreadable)
    words: WordCollector


def _summarise(folder: Path, pages: list[_Page], formats: dict, n: int, bits: int, jobs: int,
               block: int) -> _Summaries:
    """Both summaries of every page, with its text bytes and flags.

    Blocks of `block` pages (a multiple of 8: a block fills whole bytes of every bit slice) are
    summarised alone, in this process or in `jobs` spawned workers, and merged in page order."""
    out = _Summaries(np.zeros((1 << bits, (len(pages) + 7) // 8), np.uint8), np.zeros(len(pages), np.int64),
                     np.zeros(len(pages), bool), np.zeros(len(pages), bool), WordCollector(word_cap(len(pages))))
    tasks = []
    for lo in range(0, len(pages), block):
        part = pages[lo : lo + block]
        used = {(p.file, p.row_group) for p in part}
        tasks.append((str(folder), part, {k: formats[k] for k in used if k in formats}, n, bits))
    if not tasks:
        return out
    results: Iterator[_BlockSummary]
    if jobs == 1:
        results = map(_summarise_block, *zip(*tasks))
        pool = None
    else:  # spawn: no fork of a process that may hold pyarrow threads
        pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"))
        results = pool.map(_summarise_block, *zip(*tasks))
    try:
        for lo, (packed, text_bytes, unsafe, (vocab, word_pages, word_ids, long)) in zip(
                range(0, len(pages), block), results):
            out.matrix[:, lo // 8 : lo // 8 + packed.shape[1]] = packed
            out.text_bytes[lo : lo + len(text_bytes)] = text_bytes
            out.unsafe[lo : lo + len(unsafe)] = unsafe
            out.long_words[lo : lo + len(long)] = long
            out.words.add(vocab, word_pages, word_ids, lo)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    return out


_BlockWords = tuple[list[bytes], np.ndarray, np.ndarray, np.ndarray]  # BlockWords.result()
_BlockSummary = tuple[np.ndarray, np.ndarray, np.ndarray, _BlockWords]


def _summarise_block(folder: str, pages: list[_Page], formats: dict, n: int, bits: int
                     ) -> _BlockSummary:
    """One block's bit slices (uint8 [2**bits, ceil(len(pages)/8)]), text bytes, unsafe flags
    and words (`skipwords.BlockWords`)."""
    rule = GramRule(n, bits)
    slots = 1 << bits
    fds = {name: os.open(Path(folder) / name, os.O_RDONLY) for name in {p.file for p in pages}}
    packed = np.zeros((slots, (len(pages) + 7) // 8), np.uint8)
    text_bytes = np.zeros(len(pages), np.int64)
    unsafe = np.zeros(len(pages), bool)
    words = BlockWords(len(pages))
    try:
        for lo in range(0, len(pages), CHUNK):
            chunk = np.zeros((CHUNK, slots), bool)  # a page's bits contiguous: cache-friendly sets
            for j, page in enumerate(pages[lo : lo + CHUNK]):
                text = _page_text(page, fds, formats)
                words.add(lo + j, text)
                if text is None:  # never ruled out; its size bounds what reading it costs
                    chunk[j] = True
                    unsafe[lo + j] = True
                    text_bytes[lo + j] = page.size if page.offset < 0 else 8 * page.size
                    continue
                text_bytes[lo + j] = len(text)
                unsafe[lo + j] = fold_unsafe(text)
                chunk[j, rule.positions(text)] = True
            width = min(CHUNK // 8, packed.shape[1] - lo // 8)
            packed[:, lo // 8 : lo // 8 + width] = np.packbits(chunk, axis=0, bitorder="little").T[:, :width]
    finally:
        for fd in fds.values():
            os.close(fd)
    return packed, text_bytes, unsafe, words.result()


def _swap_in(tmp: Path, final: Path) -> None:
    old = final.with_name(f"{final.name}.old-{os.getpid()}")
    if final.exists():
        final.rename(old)
    tmp.rename(final)
    shutil.rmtree(old, ignore_errors=True)


# -- reading ---------------------------------------------------------------------------------


class SkipIndex:
    """A built skipping index for one snapshot: `SkipIndex.open(folder, snapshot_id)`."""

    def __init__(self, folder: Path, info: dict):
        base = folder / SKIP_DIR
        self.info = info
        self.rule = GramRule(info["gram"], info["filter_bits"])
        self.bits = np.load(base / "bits.npy", mmap_mode="r")  # rows read on demand
        # ParquetFile.read starts no thread (a fork server must stay single-threaded)
        self.pages = pq.ParquetFile(base / "pages.parquet", pre_buffer=False).read(use_threads=False)
        self.count = self.pages.num_rows
        self.fold_unsafe = self.pages.column("fold_unsafe").to_numpy(zero_copy_only=False)
        long_words = self.pages.column("long_words").to_numpy(zero_copy_only=False)
        self.words = WordIndex(base, self.count, info["words"]["cap_pages"], long_words)

    @classmethod
    def open(cls, folder: str | Path, snapshot_id: str) -> SkipIndex:
        return cls(Path(folder), cls.check(folder, snapshot_id))

    @staticmethod
    def check(folder: str | Path, snapshot_id: str) -> dict:
        """skip.json of a usable skipping index for `snapshot_id`; StaleIndexError otherwise."""
        folder = Path(folder)
        info_path = folder / SKIP_DIR / "skip.json"
        command = f"`parquet-agent corpus index {folder} --skip-only`"
        fix = f"build it with {command}"
        if not info_path.exists():
            raise StaleIndexError(f"{folder} has no skipping index; {fix}")
        try:
            info = json.loads(info_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise StaleIndexError(f"{info_path} is not valid JSON ({exc}); {fix}") from exc
        if info.get("schema_version") != SCHEMA_VERSION:
            raise StaleIndexError(f"{info_path} has schema_version {info.get('schema_version')!r}, "
                                  f"this version reads {SCHEMA_VERSION}; rebuild it with {command}")
        if info.get("snapshot_id") != snapshot_id:
            raise StaleIndexError(f"the skipping index in {folder / SKIP_DIR} was built for snapshot "
                                  f"{info.get('snapshot_id')}, not {snapshot_id}; {fix}")
        return info

    def candidates(self, need, *, words: bool = True) -> np.ndarray:
        """Boolean per page: True where the page may satisfy `need` (by the grams alone when not
        `words`: what an index of schema_version 1 said)."""
        if isinstance(need, Literal):
            found = self._gram_candidates(need)
            by_words = self.words.candidates(need.text, need.fold) if words else None
            if by_words is not None:
                found &= by_words
            return found | self.fold_unsafe if need.fold else found
        parts = [self.candidates(p, words=words) for p in need.parts]
        if isinstance(need, AllOf):
            return np.logical_and.reduce(parts) if parts else np.ones(self.count, bool)
        return np.logical_or.reduce(parts) if parts else np.zeros(self.count, bool)

    def _gram_candidates(self, need: Literal) -> np.ndarray:
        positions = self.rule.literal_positions(need.text, need.fold)
        if positions is None:
            return np.ones(self.count, bool)
        acc = np.bitwise_and.reduce(np.asarray(self.bits[np.sort(positions)]), axis=0)
        return np.unpackbits(acc, bitorder="little", count=self.count).astype(bool)


def skip_index_exists(folder: str | Path) -> bool:
    return (Path(folder) / SKIP_DIR / "skip.json").exists()


__all__ = ["UNSAFE_FOLD", "AllOf", "AnyOf", "GramRule", "Literal", "SkipIndex", "SkipSummary",
           "build_skip_index", "gram_values", "skip_index_exists"]
