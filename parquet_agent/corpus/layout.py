"""The tool-ready Parquet layout, and a streaming writer for it.

A sandboxed DuckDB worker has 128 MiB of memory. It cannot read `parsed_md` from a plain export
(one ~1 GiB row group per monthly file), while row groups capped at 8-16 MiB of Markdown and
sorted by `file_stem` give 15-23 ms point lookups inside the limit
(`shared/notes/duckdb-sandbox-and-limits.md`, B.3e). So a tool-ready file has:

- rows sorted by `file_stem` (min/max statistics prune row groups for a point lookup);
- row groups cut by bytes of Markdown, not by row count (cells span 3 KB to several MB);
- a bloom filter on `file_stem` (DuckDB 2.0.1 reads pyarrow's filters);
- zstd compression and statistics.

`LayoutWriter` writes such a file from batches that arrive already sorted, holding at most one
row group in memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from parquet_agent.corpus.schema import CORPUS_SCHEMA

ROW_GROUP_TEXT_BYTES = 12 * 1024 * 1024  # middle of the measured 8-16 MiB sweet spot
BLOOM_NDV = 4096  # a bloom filter is per row group; byte-capped groups hold far fewer rows
BLOOM_FPP = 0.01
LAYOUT_VERSION = 1


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
            write_statistics=True,
            use_dictionary=["accession", "source_format", "year", "month", "has_ocr"],
            bloom_filter_options={"file_stem": {"ndv": BLOOM_NDV, "fpp": BLOOM_FPP}},
            sorting_columns=[pq.SortingColumn(1)],
        )
        self._pending: list[pa.Table] = []
        self._pending_bytes = 0
        self._last_stem: str | None = None
        self._rows = 0
        self._row_groups = 0
        self._text_bytes = 0

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
        group = pa.concat_tables([t for t in self._pending if t.num_rows])
        if group.num_rows:
            self._writer.write_table(group, row_group_size=group.num_rows)
            self._rows += group.num_rows
            self._row_groups += 1
            self._text_bytes += self._pending_bytes
        self._pending = []
        self._pending_bytes = 0

    def close(self) -> WrittenFile:
        self._flush()
        self._writer.close()
        return WrittenFile(self.path, self._rows, self._row_groups, self._text_bytes)

    def __enter__(self) -> LayoutWriter:
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is None:
            self.close()
        else:
            self._writer.close()
