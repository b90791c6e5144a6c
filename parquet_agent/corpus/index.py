"""The sidecar index of a corpus folder: where each filing lives, and its issuer header.

`build_index(folder)` writes `folder/_index/` (contract in `docs/architecture.md`):

- `index.parquet`: `file_stem, file, row_group, row_in_group, md_page_offset, md_page_bytes,
  md_row_in_page, accession, year, month, char_count, md5, has_ocr, source_format`, one row per
  corpus row, sorted by `file_stem` (`file` is relative to the folder; the `md_page_*` columns
  locate the data page holding the row's `parsed_md`, see `pages.py`, and are null where that
  column chunk cannot be read page by page);
- `headers.parquet`: `file_stem, file, company, form_type, period, filing_date, cik` (digits, no
  padding), `header` (the first 2,000 characters), and search helpers: `company_norm` (lower
  case, punctuation and legal suffixes dropped, see `headers.normalize_company`), `cik_int`
  (CIK as an integer, from the header or else from `accession`), `accession`, `year`, `month`.
  Sorted by `file_stem`, so pages can use keyset pagination (`WHERE file_stem > ?`);
- `index.json`: `schema_version`, `snapshot_id`, the snapshot itself (for a cheap size+mtime
  staleness check), counts, build time and duration.

Building streams: each file is read in batches of rows (never a whole row group of Markdown, so
even a plain export with one ~1 GiB row group stays bounded), only a head of each `parsed_md`
cell is copied out for header parsing, and the header rows go to a temporary Parquet file that
is then sorted by an external merge sort (`_sort_headers`; bounded memory at any scale). Everything is written to
`_index.tmp-<pid>/` and swapped in at the end, so a crash never leaves a half index.

`CorpusIndex.open(folder, snapshot=None)` refuses an index built for other files
(StaleIndexError). With a snapshot it compares snapshot ids; without one it compares the file
names, sizes and mtimes recorded in index.json with the folder (no re-hashing: cheap at every
scale). `.locate(file_stem)` is a binary search over the sorted `file_stem` column held as Arrow
(O(log n), no Python dict of 638k entries).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from parquet_agent.corpus.headers import COVER_WINDOW, normalize_cik, normalize_company, parse_header
from parquet_agent.corpus.pages import PageFormatError, column_pages
from parquet_agent.corpus.snapshot import CorpusSnapshot
from parquet_agent.errors import StaleIndexError

SCHEMA_VERSION = 2  # 2: the md_page_* columns
INDEX_DIR = "_index"
HEADER_CHARS = 2000  # kept for display and ILIKE search
PARSE_CHARS = COVER_WINDOW  # what parse_header reads: iXBRL cover pages sit 14-70k chars in
BATCH_ROWS = 256  # rows decoded at once; bounds memory on plain one-row-group exports

SMALL_COLUMNS = ("accession", "year", "month", "char_count", "md5", "has_ocr", "source_format")

INDEX_SCHEMA = pa.schema(
    [
        ("file_stem", pa.string()),
        ("file", pa.string()),
        ("row_group", pa.int32()),
        ("row_in_group", pa.int32()),
        ("md_page_offset", pa.int64()),
        ("md_page_bytes", pa.int32()),
        ("md_row_in_page", pa.int32()),
        ("accession", pa.string()),
        ("year", pa.int32()),
        ("month", pa.int32()),
        ("char_count", pa.int64()),
        ("md5", pa.string()),
        ("has_ocr", pa.bool_()),
        ("source_format", pa.string()),
    ]
)

HEADERS_SCHEMA = pa.schema(
    [
        ("file_stem", pa.string()),
        ("file", pa.string()),
        ("company", pa.string()),
        ("form_type", pa.string()),
        ("period", pa.string()),  # ISO date YYYY-MM-DD
        ("filing_date", pa.string()),  # ISO date YYYY-MM-DD
        ("cik", pa.string()),  # digits, no zero padding
        ("header", pa.string()),
        ("company_norm", pa.string()),
        ("cik_int", pa.int64()),
        ("accession", pa.string()),
        ("year", pa.int32()),
        ("month", pa.int32()),
    ]
)


@dataclass(frozen=True)
class Location:
    file: str  # relative to the corpus folder
    path: Path
    row_group: int
    row_in_group: int


@dataclass(frozen=True)
class IndexSummary:
    folder: Path
    snapshot_id: str
    rows: int
    files: int
    headers_parsed: dict  # field -> rows where it was found
    seconds: float

    def summary(self) -> str:
        found = ", ".join(f"{k} {v:,}" for k, v in self.headers_parsed.items())
        return (
            f"index: {self.rows:,} rows from {self.files} file(s) in {self.seconds:.1f} s "
            f"-> {self.folder / INDEX_DIR} (snapshot {self.snapshot_id}); "
            f"header fields found: {found}"
        )


def _int_or_none(text: str | None) -> int | None:
    return int(text) if text else None


def _text_pages(path: Path, meta: pq.FileMetaData) -> list[dict | None]:
    """Per row group: the `md_page_*` columns of its rows, or None (not readable by page)."""
    column = meta.schema.to_arrow_schema().get_field_index("parsed_md")
    fd = os.open(path, os.O_RDONLY)
    try:
        groups: list[dict | None] = []
        for g in range(meta.num_row_groups):
            try:
                spans = column_pages(fd, meta, g, column)
            except PageFormatError:
                groups.append(None)
                continue
            pages = np.repeat(np.arange(len(spans)), [s.rows for s in spans])
            first = np.array([s.first_row for s in spans], np.int64)
            groups.append({
                "md_page_offset": np.array([s.offset for s in spans], np.int64)[pages],
                "md_page_bytes": np.array([s.size for s in spans], np.int32)[pages],
                "md_row_in_page": (np.arange(len(pages)) - first[pages]).astype(np.int32),
            })
        return groups
    finally:
        os.close(fd)


def _index_file(path: Path, name: str, index_parts: list, headers_writer, found: dict) -> None:
    # buffered reads: a plain export's ~1 GiB row group streams page by page (bounded memory)
    pf = pq.ParquetFile(path, buffer_size=4 * 1024 * 1024, pre_buffer=False)
    meta = pf.metadata
    text_pages = _text_pages(path, meta)
    for g in range(meta.num_row_groups):
        offset = 0
        for batch in pf.iter_batches(
            batch_size=BATCH_ROWS, row_groups=[g], columns=["file_stem", *SMALL_COLUMNS, "parsed_md"]
        ):
            n = batch.num_rows
            stems = batch.column("file_stem")
            small = {c: batch.column(c) for c in SMALL_COLUMNS}
            pages = text_pages[g]
            index_parts.append(
                pa.table(
                    {
                        "file_stem": stems,
                        "file": pa.array([name] * n, pa.string()),
                        "row_group": pa.array([g] * n, pa.int32()),
                        "row_in_group": pa.array(range(offset, offset + n), pa.int32()),
                        **{
                            k: pa.nulls(n) if pages is None else pages[k][offset : offset + n]
                            for k in ("md_page_offset", "md_page_bytes", "md_row_in_page")
                        },
                        **small,
                    }
                ).cast(INDEX_SCHEMA)
            )
            md = batch.column("parsed_md")
            heads = pc.utf8_slice_codeunits(md, 0, PARSE_CHARS).to_pylist()
            del md, batch  # only the heads are kept
            parsed = [parse_header(h or "") for h in heads]
            accessions = small["accession"].to_pylist()
            ciks = [p.cik or normalize_cik(a) for p, a in zip(parsed, accessions)]
            for key in ("company", "form_type", "period", "filing_date", "cik"):
                found[key] += sum(1 for p in parsed if getattr(p, key))
            headers_writer.write_table(
                pa.table(
                    {
                        "file_stem": stems,
                        "file": pa.array([name] * n, pa.string()),
                        "company": [p.company for p in parsed],
                        "form_type": [p.form_type for p in parsed],
                        "period": [p.period for p in parsed],
                        "filing_date": [p.filing_date for p in parsed],
                        "cik": [p.cik for p in parsed],
                        "header": [(h or "")[:HEADER_CHARS] for h in heads],
                        "company_norm": [normalize_company(p.company) for p in parsed],
                        "cik_int": [_int_or_none(c) for c in ciks],
                        "accession": small["accession"],
                        "year": small["year"],
                        "month": small["month"],
                    }
                ).cast(HEADERS_SCHEMA)
            )
            offset += n


SORT_RUN_ROWS = 16_384  # rows sorted in memory at once (~35 MiB of header text)
RUN_GROUP_ROWS = 512  # row group size of the sorted runs: the unit the merge reads
MERGE_CHUNK_ROWS = 8_192  # output rows assembled per step (one output row group)
MERGE_CACHE_GROUPS = 32  # run row groups kept decoded between steps (~35 MiB)


def _sort_headers(
    unsorted: Path,
    out: Path,
    tmp_dir: Path,
    *,
    run_rows: int = SORT_RUN_ROWS,
    group_rows: int = RUN_GROUP_ROWS,
    chunk_rows: int = MERGE_CHUNK_ROWS,
    cache_groups: int = MERGE_CACHE_GROUPS,
) -> None:
    """External merge sort of the header table by file_stem, in bounded memory.

    1. cut the table into runs of SORT_RUN_ROWS, sort each in memory, append it to one runs
       file (small row groups);
    2. sort only the runs' `file_stem` column (a few MiB at full scale) to get the output
       order, then assemble the output chunk by chunk from the few run row groups each chunk
       touches (runs are sorted, so a chunk reads about MERGE_CHUNK_ROWS / RUN_GROUP_ROWS + runs
       groups; an LRU cache keeps the groups two chunks share).
    DuckDB's `ORDER BY` ran out of memory here at full scale (2,000-character header payload
    under a 256 MiB limit), and the 1.3 GB of header text must not be held at once."""
    runs = tmp_dir / "runs.parquet"
    with pq.ParquetWriter(runs, HEADERS_SCHEMA, compression="zstd", compression_level=1) as w:
        for batch in pq.ParquetFile(unsorted).iter_batches(batch_size=run_rows):
            run = pa.Table.from_batches([batch])
            w.write_table(run.take(pc.sort_indices(run, [("file_stem", "ascending")])),
                          row_group_size=group_rows)
            del run
    rf = pq.ParquetFile(runs)
    meta = rf.metadata
    sizes = [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    order = pc.sort_indices(rf.read(columns=["file_stem"]).column(0)).to_numpy().astype(np.int64)
    cache: dict[int, pa.Table] = {}  # insertion-ordered: oldest first
    with pq.ParquetWriter(out, HEADERS_SCHEMA, compression="zstd") as w:
        for lo in range(0, len(order), chunk_rows):
            pos = order[lo : lo + chunk_rows]
            groups = np.searchsorted(starts, pos, side="right") - 1
            used = np.unique(groups)
            tables = []
            for g in used.tolist():
                table = cache.pop(g, None)
                if table is None:
                    table = rf.read_row_group(g)
                cache[g] = table
                tables.append(table)
            while len(cache) > max(cache_groups, len(used)):
                del cache[next(iter(cache))]
            base = np.zeros(len(sizes), dtype=np.int64)
            base[used] = np.cumsum([0] + [t.num_rows for t in tables[:-1]], dtype=np.int64)
            rows = base[groups] + (pos - starts[groups])
            w.write_table(pa.concat_tables(tables).take(pa.array(rows)),
                          row_group_size=chunk_rows)
    runs.unlink()


def build_index(folder: str | Path, *, snapshot: CorpusSnapshot | None = None) -> IndexSummary:
    """Build `folder/_index/` for the Parquet files at the top of `folder` (streaming)."""
    started = time.monotonic()
    folder = Path(folder)
    snapshot = snapshot or CorpusSnapshot.take(folder)
    tmp = folder / f"{INDEX_DIR}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    try:
        index_parts: list[pa.Table] = []
        found = dict.fromkeys(("company", "form_type", "period", "filing_date", "cik"), 0)
        unsorted = tmp / "headers.unsorted.parquet"
        with pq.ParquetWriter(unsorted, HEADERS_SCHEMA, compression="zstd") as writer:
            for entry in snapshot.files:
                _index_file(folder / entry.name, entry.name, index_parts, writer, found)
        index = pa.concat_tables(index_parts) if index_parts else INDEX_SCHEMA.empty_table()
        del index_parts
        index = index.sort_by([("file_stem", "ascending"), ("file", "ascending")])
        pq.write_table(index, tmp / "index.parquet", compression="zstd", row_group_size=65536)
        rows = index.num_rows
        del index  # ~130 bytes a row: freed before the header sort needs its memory
        spill = tmp / "spill"
        spill.mkdir()
        _sort_headers(unsorted, tmp / "headers.parquet", spill)
        unsorted.unlink()
        shutil.rmtree(spill, ignore_errors=True)
        seconds = time.monotonic() - started
        info = {
            "schema_version": SCHEMA_VERSION,
            "snapshot_id": snapshot.snapshot_id,
            "rows": rows,
            "files": len(snapshot.files),
            "headers_parsed": found,
            "built_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "build_seconds": round(seconds, 3),
            "snapshot": snapshot.to_json(),
        }
        (tmp / "index.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
        final = folder / INDEX_DIR
        old = folder / f"{INDEX_DIR}.old-{os.getpid()}"
        if final.exists():
            final.rename(old)
        tmp.rename(final)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return IndexSummary(folder, snapshot.snapshot_id, rows, len(snapshot.files), found, seconds)


def bisect_sorted(values: pa.Array, key: str, *, right: bool = False) -> int:
    """Binary search over a sorted Arrow string array (no copy of the column into Python);
    nulls sort as ""."""
    lo, hi = 0, len(values)
    while lo < hi:
        mid = (lo + hi) // 2
        v = values[mid].as_py() or ""
        if v < key or (right and v == key):
            lo = mid + 1
        else:
            hi = mid
    return lo


def _rerun(folder: Path) -> str:
    return f"rebuild it with `parquet-agent corpus index {folder}`"


class CorpusIndex:
    """A built, fresh sidecar index. Open with `CorpusIndex.open(folder, snapshot=None)`."""

    def __init__(self, folder: Path, info: dict):
        self.folder = folder
        self.info = info
        self.snapshot_id: str = info["snapshot_id"]
        self.rows: int = info["rows"]
        self._table: pa.Table | None = None  # file_stem, file, row_group, row_in_group

    @property
    def index_path(self) -> Path:
        return self.folder / INDEX_DIR / "index.parquet"

    @property
    def headers_path(self) -> Path:
        return self.folder / INDEX_DIR / "headers.parquet"

    @classmethod
    def open(cls, folder: str | Path, snapshot: CorpusSnapshot | None = None) -> CorpusIndex:
        folder = Path(folder)
        info_path = folder / INDEX_DIR / "index.json"
        if not info_path.exists():
            raise StaleIndexError(f"{folder} has no sidecar index (no {info_path}); " + _rerun(folder))
        try:
            info = json.loads(info_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise StaleIndexError(f"{info_path} is not valid JSON ({exc}); " + _rerun(folder)) from exc
        if info.get("schema_version") != SCHEMA_VERSION:
            raise StaleIndexError(
                f"{info_path} has schema_version {info.get('schema_version')!r}, this version "
                f"reads {SCHEMA_VERSION}; " + _rerun(folder)
            )
        if snapshot is not None:
            if snapshot.snapshot_id != info["snapshot_id"]:
                raise StaleIndexError(
                    f"the index in {folder / INDEX_DIR} was built for snapshot "
                    f"{info['snapshot_id']}, not {snapshot.snapshot_id}; " + _rerun(folder)
                )
        else:
            built = CorpusSnapshot.from_json(info["snapshot"], root=folder)
            check = built.check(folder, quick=True)
            if not check.ok or check.new:
                raise StaleIndexError(
                    f"the index in {folder / INDEX_DIR} is stale: "
                    + check.describe().replace("\n", "; ")
                    + "; "
                    + _rerun(folder)
                )
        return cls(folder, info)

    def _load(self) -> pa.Table:
        if self._table is None:
            self._table = pq.read_table(
                self.index_path, columns=["file_stem", "file", "row_group", "row_in_group"]
            )
            self._stems = self._table.column("file_stem").combine_chunks()
        return self._table

    def locate(self, file_stem: str) -> Location | None:
        """Where the row with this `file_stem` is (the first, if a stem repeats), or None."""
        table = self._load()
        stems = self._stems
        lo = bisect_sorted(stems, file_stem)
        if lo == len(stems) or stems[lo].as_py() != file_stem:
            return None
        name = table.column("file")[lo].as_py()
        return Location(
            file=name,
            path=self.folder / name,
            row_group=table.column("row_group")[lo].as_py(),
            row_in_group=table.column("row_in_group")[lo].as_py(),
        )

    def read_row(self, file_stem: str, columns: list[str] | None = None) -> dict | None:
        """The corpus row for `file_stem` as a dict (reads one row group), or None."""
        loc = self.locate(file_stem)
        if loc is None:
            return None
        group = pq.ParquetFile(loc.path).read_row_group(loc.row_group, columns=columns)
        row = group.slice(loc.row_in_group, 1).to_pylist()[0]
        if row.get("file_stem", file_stem) != file_stem:
            raise StaleIndexError(
                f"the index points {file_stem} at {loc.file} group {loc.row_group} row "
                f"{loc.row_in_group}, which holds {row['file_stem']}; " + _rerun(self.folder)
            )
        return row


def index_exists(folder: str | Path) -> bool:
    return (Path(folder) / INDEX_DIR / "index.json").exists()


__all__ = ["CorpusIndex", "IndexSummary", "Location", "bisect_sorted", "build_index", "index_exists"]
