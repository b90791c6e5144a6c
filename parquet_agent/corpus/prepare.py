"""`corpus prepare`: rewrite any corpus in the schema into the tool-ready layout, with bounded memory.

`prepare(src, out)` writes one output file per source file (same name), rows sorted by
`file_stem`, row groups cut at `row_group_mib` of Markdown, a bloom filter on `file_stem`
(`layout.LayoutWriter`), then re-reads every output file and checks row for row that nothing
changed, and writes `out/manifest.json` (kind `prepared`) with the lineage: the source folder,
its snapshot id and every source file's content hash, row count and size. `questions.jsonl` is
copied when the source has one (the text is unchanged, so gold offsets still hold). Columns
beyond the contract's are not carried over; the lineage lists them as `dropped_columns`.

Memory stays bounded whatever the source layout (a plain export has one ~1 GiB row group per
file; pyarrow cannot read less than a page, but `iter_batches` decodes a few hundred rows at a
time):
1. read only `file_stem` and `char_count` of a file and cut the sorted stems into ranges of about
   `bucket_mib` (64) of text each;
2. stream the file in batches, appending each row to the spill file of its range (a small
   per-range buffer), and fingerprint every source row on the way;
3. for each range in order: read its spill file (≤ about `bucket_mib` of text), sort, and write
   it through the LayoutWriter. A file already sorted by `file_stem` skips the spill.

Verification: the fingerprint of a row is xxh3-128 over all its columns, with `parsed_md`
hashed by MD5 as read back (so a changed text, a lost or duplicated row, or a changed small
column all show). Fingerprints are combined order-independently (sum modulo 2**128, plus the
count), once over the source while spilling and once over the output read back from disk. Rows
whose `md5` column disagrees with their text are counted and reported, not "fixed".
"""

from __future__ import annotations

import bisect
import hashlib
import os
import resource
import shutil
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import xxhash

from parquet_agent.corpus.layout import LayoutWriter
from parquet_agent.corpus.manifest import write_corpus_manifest
from parquet_agent.corpus.schema import COLUMNS, CORPUS_SCHEMA
from parquet_agent.corpus.snapshot import CorpusSnapshot
from parquet_agent.errors import CorpusError

BATCH_ROWS = 256
SPILL_BUFFER_BYTES = 4 * 1024 * 1024  # per range; flushed to its spill file when full
MASK128 = (1 << 128) - 1
READ_BUFFER_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class PreparedFile:
    name: str
    rows: int
    row_groups: int
    bytes_in: int
    bytes_out: int
    text_bytes: int
    spilled: bool  # False when the source was already sorted


@dataclass(frozen=True)
class PrepareResult:
    src: Path
    out: Path
    files: tuple[PreparedFile, ...]
    seconds: float
    peak_rss_bytes: int  # of this process, lifetime peak (ru_maxrss)
    md5_mismatches: int  # source rows whose md5 column does not match parsed_md
    fingerprint: str

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.files)

    @property
    def bytes_in(self) -> int:
        return sum(f.bytes_in for f in self.files)

    @property
    def text_bytes(self) -> int:
        return sum(f.text_bytes for f in self.files)

    def summary(self) -> str:
        s = max(self.seconds, 1e-9)
        bad = f"; {self.md5_mismatches} source row(s) have an md5 that does not match their text" if self.md5_mismatches else ""
        return (
            f"prepared {self.rows:,} rows in {len(self.files)} file(s) -> {self.out} in {s:.1f} s "
            f"({self.rows / s:,.0f} rows/s, {self.bytes_in / s / 1e6:,.1f} MB/s of Parquet in, "
            f"{self.text_bytes / s / 1e6:,.1f} MB/s of Markdown); "
            f"{sum(f.row_groups for f in self.files)} row groups; verified row for row "
            f"({self.fingerprint}); peak RSS {self.peak_rss_bytes / 2**20:,.0f} MiB{bad}"
        )


def _fingerprints(table: pa.Table, *, check_md5: bool = False) -> tuple[int, int, int]:
    """(sum of row fingerprints mod 2**128, rows, md5 mismatches) for a batch in CORPUS_SCHEMA.

    A row's fingerprint covers every small column and xxh3-128 of `parsed_md` (>10 GB/s, so the
    read-back pass costs little); `check_md5` also recomputes MD5 of the text (~0.5 GB/s) to
    count rows whose `md5` column is wrong; the source pass does that once."""
    small = [c for c in COLUMNS if c != "parsed_md"]
    cols = {c: table.column(c).to_pylist() for c in small}
    # as bytes straight from the Arrow buffers: no UTF-8 decode into str and encode back
    texts = table.column("parsed_md").cast(pa.binary()).to_pylist()
    md5s = cols["md5"]
    total, bad = 0, 0
    for i, raw in enumerate(texts):
        if check_md5 and (hashlib.md5(raw).hexdigest() if raw is not None else None) != md5s[i]:
            bad += 1
        key = "\x1f".join(repr(cols[c][i]) for c in small)
        key += "\x1f" + (xxhash.xxh3_128_hexdigest(raw) if raw is not None else "None")
        total = (total + xxhash.xxh3_128_intdigest(key.encode("utf-8"))) & MASK128
    return total, table.num_rows, bad


def _batches(path: Path):
    # buffered, not pre-buffered: a plain export's ~1 GiB row group is streamed page by page
    # instead of its whole column chunk (170+ MiB compressed) being loaded at once
    pf = pq.ParquetFile(path, buffer_size=READ_BUFFER_BYTES, pre_buffer=False)
    for batch in pf.iter_batches(batch_size=BATCH_ROWS, columns=list(COLUMNS)):
        yield pa.Table.from_batches([batch]).cast(CORPUS_SCHEMA)


def _ranges(path: Path, bucket_bytes: int) -> tuple[list[str], bool]:
    """Boundaries (first stem of each range after the first) and whether the file is sorted."""
    t = pq.read_table(path, columns=["file_stem", "char_count"])
    if t.column("file_stem").null_count:
        raise CorpusError(f"{path.name}: {t.column('file_stem').null_count} row(s) have no file_stem")
    stems = t.column("file_stem").to_pylist()
    is_sorted = all(a <= b for a, b in zip(stems, stems[1:]))
    sizes = t.column("char_count").to_pylist()
    bounds: list[str] = []
    acc, prev = 0, None
    for i in sorted(range(len(stems)), key=stems.__getitem__):
        # a boundary is the first stem of the next range; equal stems never straddle one
        if acc >= bucket_bytes and stems[i] != prev:
            bounds.append(stems[i])
            acc = 0
        acc += max(sizes[i] or 0, 1)
        prev = stems[i]
    return bounds, is_sorted


def _prepare_file(
    path: Path, out_path: Path, spill_dir: Path, bucket_bytes: int, group_bytes: int
) -> tuple[PreparedFile, int, int, int]:
    bounds, is_sorted = _ranges(path, bucket_bytes)
    src_sum, src_rows, bad = 0, 0, 0
    writer = LayoutWriter(out_path, row_group_text_bytes=group_bytes)
    if is_sorted:
        for table in _batches(path):
            s, n, b = _fingerprints(table, check_md5=True)
            src_sum, src_rows, bad = (src_sum + s) & MASK128, src_rows + n, bad + b
            writer.write(table)
    else:
        k = len(bounds) + 1
        spill_paths = [spill_dir / f"{path.stem}.{i:05d}.parquet" for i in range(k)]
        spill_writers: list[pq.ParquetWriter | None] = [None] * k
        buffers: list[list[pa.Table]] = [[] for _ in range(k)]
        buffered = [0] * k

        def flush(i: int) -> None:
            if not buffers[i]:
                return
            spill = spill_writers[i]
            if spill is None:
                # spill files live for seconds: uncompressed costs a quarter of zstd's CPU (measured)
                spill = spill_writers[i] = pq.ParquetWriter(
                    spill_paths[i], CORPUS_SCHEMA, compression="none", use_dictionary=False,
                    write_statistics=False,
                )
            spill.write_table(pa.concat_tables(buffers[i]))
            buffers[i], buffered[i] = [], 0

        for table in _batches(path):
            s, n, b = _fingerprints(table, check_md5=True)
            src_sum, src_rows, bad = (src_sum + s) & MASK128, src_rows + n, bad + b
            stems = table.column("file_stem").to_pylist()
            which = pa.array([bisect.bisect_right(bounds, st) for st in stems], pa.int32())
            sizes = pc.binary_length(table.column("parsed_md")).to_pylist()
            for i in set(which.to_pylist()):
                mask = pc.equal(which, i)
                part = table.filter(mask)
                buffers[i].append(part)
                buffered[i] += sum(sz or 0 for sz, m in zip(sizes, mask.to_pylist()) if m)
                if buffered[i] >= SPILL_BUFFER_BYTES:
                    flush(i)
        for i in range(k):
            flush(i)
            if (spill := spill_writers[i]) is not None:
                spill.close()
        for i in range(k):
            if spill_writers[i] is None:
                continue
            bucket = pq.read_table(spill_paths[i])
            order = pc.sort_indices(bucket, [("file_stem", "ascending")])
            for start in range(0, bucket.num_rows, 256):  # sorted copies in small slices only
                writer.write(bucket.take(order.slice(start, 256)))
            del bucket, order
            spill_paths[i].unlink()
    written = writer.close()
    info = PreparedFile(
        name=path.name,
        rows=written.rows,
        row_groups=written.row_groups,
        bytes_in=path.stat().st_size,
        bytes_out=out_path.stat().st_size,
        text_bytes=written.text_bytes,
        spilled=not is_sorted,
    )
    return info, src_sum, src_rows, bad


def _readback(path: Path) -> tuple[int, int]:
    total, rows = 0, 0
    for table in _batches(path):
        s, n, _ = _fingerprints(table)
        total, rows = (total + s) & MASK128, rows + n
    return total, rows


def prepare(
    src: str | Path,
    out: str | Path,
    *,
    row_group_mib: float = 12,
    bucket_mib: float = 64,
) -> PrepareResult:
    """Rewrite the corpus in `src` into the tool-ready layout in `out` (see the module doc)."""
    started = time.monotonic()
    src, out = Path(src), Path(out)
    if src.resolve() == out.resolve():
        raise CorpusError("corpus prepare needs a different --out folder than its source")
    snapshot = CorpusSnapshot.take(src)  # validates every file's schema first
    if any(out.glob("*.parquet")):
        raise CorpusError(f"{out} already holds Parquet files; give an empty or new --out folder")
    if out.is_dir() and any(out.iterdir()):
        names = ", ".join(sorted(p.name for p in out.iterdir())[:3])
        raise CorpusError(f"{out} is not empty ({names}, ...): give an empty or new --out folder "
                          "(nothing there was changed)")
    out.mkdir(parents=True, exist_ok=True)
    spill = out / f".prepare-spill-{os.getpid()}"
    spill.mkdir()
    files, src_total, src_rows, bad = [], 0, 0, 0
    out_total, out_rows = 0, 0
    try:
        for entry in snapshot.files:
            tmp = out / f".{entry.name}.tmp"
            info, s, n, b = _prepare_file(
                src / entry.name, tmp, spill, int(bucket_mib * 2**20), int(row_group_mib * 2**20)
            )
            rs, rn = _readback(tmp)
            if (rs, rn) != (s, n):
                raise CorpusError(
                    f"{entry.name}: the rewritten file does not hold the same rows "
                    f"({rn:,} rows read back, {n:,} in the source, fingerprints "
                    f"{'equal' if rs == s else 'differ'}); nothing was kept"
                )
            tmp.rename(out / entry.name)
            files.append(info)
            src_total, src_rows, bad = (src_total + s) & MASK128, src_rows + n, bad + b
            out_total, out_rows = (out_total + rs) & MASK128, out_rows + rn
    except BaseException:
        for p in out.glob(".*.tmp"):
            p.unlink()
        raise
    finally:
        shutil.rmtree(spill, ignore_errors=True)
    fingerprint = f"{out_rows} rows, xxh3-128 sum {out_total:032x}"
    if (src / "questions.jsonl").exists():
        shutil.copyfile(src / "questions.jsonl", out / "questions.jsonl")
    origin = {
        "prepared_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "source": str(src.resolve()),
        "source_snapshot_id": snapshot.snapshot_id,
        "source_files": [
            {"name": f.name, "content_hash": f.content_hash, "rows": f.rows, "bytes": f.size,
             "row_groups": f.row_groups}
            for f in snapshot.files
        ],
        "row_group_mib": row_group_mib,
        "verified": {"rows": out_rows, "fingerprint": f"{out_total:032x}", "method":
                     "order-independent sum of xxh3-128 over every column, parsed_md by MD5, "
                     "source vs output read back"},
        "source_md5_mismatches": bad,
        # the layout holds exactly the contract columns; anything else is not carried over
        "dropped_columns": sorted({c for f in snapshot.files for c, _ in f.schema} - set(COLUMNS)),
    }
    write_corpus_manifest(out, origin=origin, kind="prepared")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return PrepareResult(src, out, tuple(files), time.monotonic() - started, peak, bad, fingerprint)

