"""The tool-ready Parquet layout, and a streaming writer for it.

A sandboxed DuckDB worker has 128 MiB of memory. It cannot read `parsed_md` from a plain export
(one ~1 GiB row group per monthly file), while row groups capped at 8-16 MiB of Markdown and
sorted by `file_stem` give 15-23 ms point lookups inside the limit
(`shared/notes/duckdb-sandbox-and-limits.md`, B.3e). So a tool-ready file has:

- rows sorted by `file_stem` (min/max statistics prune row groups for a point lookup);
- row groups cut by bytes of Markdown, not by row count (cells span 3 KB to several MB);
- a bloom filter on `file_stem` (DuckDB 2.0.1 reads pyarrow's filters);
- `parsed_md` cut into data pages of about 128 KiB (`pages.py` reads one filing's page alone
  instead of its whole row group; costs +5 % bytes on the sample, 64 KiB pages +8 %);
- zstd compression, and statistics on every column but `parsed_md` (a min/max of Markdown
  prunes nothing, and would sit in every page header).

`LayoutWriter` writes such a file from batches that arrive already sorted, holding at most one
row group in memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute below)
import pyarrow.parquet as pq

from parquet_agent.corpus.schema import CORPUS_SCHEMA

ROW_GROUP_TEXT_BYTES = 12 * 1024 * 1024  # middle of the measured 8-16 MiB sweet spot
BLOOM_NDV = 4096  # a bloom filter is per row group; byte-capped groups hold far fewer rows
BLOOM_FPP = 0.01
# The page-size check runs after every value (write_batch_size=1), so a page ends at the first
# cell that takes it past this size; a cell larger than it gets a page of its own.
TEXT_PAGE_BYTES = 128 * 1024
LAYOUT_VERSION = 2


@dataclass(frozen=True)
class WrittenFile:
    path: Path
    rows: int
    row_groups: int
    text_bytes: int


class LayoutWriter:
    """Write rows, already sorted by `file_stem`, into byte-capped row groups.

    Takes batches in `CORPUS_SCHEMA` (columns are cast; extra columns are an error), raises
    ValueError when a batch would break the sort order, and flushes a row group whenever the
    buffered Markdown reaches `row_group_text_bytes`. A single cell larger than the cap gets a
    row group of its own.
    """

    def __init__(self, path: str | Path, *, row_group_text_bytes: int = ROW_GROUP_TEXT_BYTES):
        self.path = Path(path)
        self._cap = row_group_text_bytes
        self._writer = pq.ParquetWriter(
            self.path,
            CORPUS_SCHEMA,
            compression="zstd",
            write_statistics=[name for name in CORPUS_SCHEMA.names if name != "parsed_md"],
            use_dictionary=["accession", "source_format", "year", "month", "has_ocr"],
            data_page_size=TEXT_PAGE_BYTES,
            write_batch_size=1,
            bloom_filter_options={"file_stem": {"ndv": BLOOM_NDV, "fpp": BLOOM_FPP}},
            sorting_columns=[pq.SortingColumn(1)],
        )
        self._pending: list[pa.Table] = []
        self._pending_bytes = 0
        self._last_stem: str | None = None
        self._rows = 0
        self._row_groups = 0
        self._text_bytes = 0
        self._closed: WrittenFile | None = None

    def write(self, batch: pa.Table | pa.RecordBatch) -> None:
        table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        table = table.select(list(CORPUS_SCHEMA.names)).cast(CORPUS_SCHEMA)
        if table.num_rows == 0:
            return
        stems = table.column("file_stem").to_pylist()
        if any(a > b for a, b in zip(stems, stems[1:])) or (
            self._last_stem is not None and stems[0] < self._last_stem
        ):
            raise ValueError(f"{self.path.name}: rows must arrive sorted by file_stem")
        self._last_stem = stems[-1]
        sizes = pa.compute.binary_length(table.column("parsed_md")).to_pylist()
        start = 0
        for i, size in enumerate(sizes):
            size = size or 0
            if self._pending_bytes and self._pending_bytes + size > self._cap:
                self._pending.append(table.slice(start, i - start))
                start = i
                self._flush()
            self._pending_bytes += size
        self._pending.append(table.slice(start))

    def _flush(self) -> None:
        parts = [t for t in self._pending if t.num_rows]
        group = pa.concat_tables(parts) if parts else None
        if group is not None:
            self._writer.write_table(group, row_group_size=group.num_rows)
            self._rows += group.num_rows
            self._row_groups += 1
            self._text_bytes += self._pending_bytes
        self._pending = []
        self._pending_bytes = 0

    def close(self) -> WrittenFile:
        """Flush the last row group and close the file (idempotent)."""
        if self._closed is None:
            self._flush()
            self._writer.close()
            self._closed = WrittenFile(self.path, self._rows, self._row_groups, self._text_bytes)
        return self._closed

    def __enter__(self) -> LayoutWriter:
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is None:
            self.close()
        elif self._closed is None:
            self._writer.close()


# A row group whose Markdown exceeds this (uncompressed column chunk) is too big for a 128 MiB
# worker to serve quickly: 32 MiB groups took 39 ms per lookup, 64 MiB 108 ms, and a 170 MiB
# compressed chunk fails outright (notes B.3e, B.6e). A group of one row is exempt: a single
# multi-MB cell cannot be split.
TOOL_READY_MAX_GROUP_BYTES = 32 * 1024 * 1024


def _file_layout_reasons(path: Path) -> list[str]:
    """Why one Parquet file is not tool-ready (empty when it is)."""
    pf = pq.ParquetFile(path)
    meta = pf.metadata
    names = meta.schema.to_arrow_schema().names
    if "file_stem" not in names or "parsed_md" not in names:
        return [f"{path.name}: lacks file_stem or parsed_md"]
    stem_i, md_i = names.index("file_stem"), names.index("parsed_md")
    reasons: list[str] = []
    too_big = []
    no_bloom = 0
    for g in range(meta.num_row_groups):
        rg = meta.row_group(g)
        md_bytes = rg.column(md_i).total_uncompressed_size
        if rg.num_rows > 1 and md_bytes > TOOL_READY_MAX_GROUP_BYTES:
            too_big.append((g, md_bytes))
        if rg.column(stem_i).bloom_filter_offset is None:
            no_bloom += 1
    if too_big:
        g, b = max(too_big, key=lambda x: x[1])
        reasons.append(
            f"{path.name}: {len(too_big)} of {meta.num_row_groups} row group(s) hold more than "
            f"{TOOL_READY_MAX_GROUP_BYTES >> 20} MiB of Markdown (largest: group {g}, "
            f"{b / 2**20:.0f} MiB); a 128 MiB tool worker cannot read them"
        )
    if no_bloom:
        reasons.append(f"{path.name}: {no_bloom} row group(s) have no bloom filter on file_stem")
    # sortedness: read the (small) file_stem column group by group, never parsed_md
    last = None
    for g in range(meta.num_row_groups):
        stems = pf.read_row_group(g, columns=["file_stem"]).column(0).combine_chunks()
        if len(stems) == 0:
            continue
        unsorted = len(stems) > 1 and not pa.compute.all(
            pa.compute.less_equal(stems.slice(0, len(stems) - 1), stems.slice(1))
        ).as_py()
        first = stems[0].as_py()
        if unsorted or (last is not None and first is not None and first < last):
            reasons.append(f"{path.name}: rows are not sorted by file_stem (from row group {g})")
            break
        last = stems[len(stems) - 1].as_py()
    return reasons


def is_tool_ready(folder: str | Path) -> tuple[bool, list[str]]:
    """Whether every `*.parquet` at the top of `folder` has the tool-ready layout, and if not,
    one reason per problem (file named). Reads footers and the `file_stem` column only."""
    folder = Path(folder)
    paths = sorted(p for p in folder.glob("*.parquet") if p.is_file())
    if not paths:
        return False, [f"{folder}: no *.parquet files"]
    reasons = [r for p in paths for r in _file_layout_reasons(p)]
    return not reasons, reasons
