"""Whole-corpus SQL over only the rows whose `parsed_md` pages may match (the skipping index).

`pruned_filings(con, query, skip, read)` decides, inside a worker, whether a query over `filings`
can be answered from candidate pages: `prune.required_text` reads what the query requires of
`parsed_md` from DuckDB's parse tree, the `SkipIndex` names the pages that may satisfy it, and
`CandidateReader` returns exactly their rows (all columns, in the files' row order, so that
`LIMIT` without `ORDER BY` sees the rows a scan would). The caller registers that table as
`filings` in a connection that reads no file and runs the unchanged query on it.

Every row the query could keep satisfies the requirement, and a page the index rules out (by its
grams or its words) cannot hold such a row (corpus/skipindex.py), so the result is the scan's. When nothing is
prunable, or the candidates are too many to be worth it or to fit the worker's limits, the query
runs as a scan; `SkipReport` says which happened and why.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from parquet_agent.corpus.pages import PageFormatError, column_format, read_values
from parquet_agent.corpus.skipindex import SkipIndex
from parquet_agent.tools.prune import COLUMN, required_text
from parquet_agent.tools.sandbox import fd_path

# Above these the scan is used. Reading candidate pages costs several times DuckDB's scan per
# byte (measured at 1/10 scale: ~14 ms vs ~2.3 ms of CPU per MiB of Markdown, bench/bench_skip_cpu.py),
# and the candidate text is held in memory (1.5 GiB of address space per worker).
MAX_CANDIDATE_SHARE = 0.15  # of the corpus's Markdown bytes, once past SMALL_TEXT
SMALL_TEXT = 16 * 1024 * 1024  # candidates this small are read whatever their share
MAX_CANDIDATE_TEXT = 256 * 1024 * 1024


@dataclass(frozen=True)
class SkipReport:
    used: bool
    reason: str  # "pruned", or why the query ran as a scan
    pages_total: int = 0
    pages_read: int = 0

    def to_json(self) -> dict:
        data = asdict(self)
        data["pages_skipped"] = self.pages_total - self.pages_read if self.used else 0
        return data


def pruned_filings(con: duckdb.DuckDBPyConnection, query: str, skip: SkipIndex,
                   reader: CandidateReader) -> tuple[pa.Table | None, SkipReport]:
    """(candidate rows, report), or (None, report) when the query should run as a scan."""
    need = None
    if COLUMN in query.lower():  # else the parse tree cannot name the column: no need to parse
        ((text,),) = con.execute("SELECT json_serialize_sql(?)", [query]).fetchall()
        need = required_text(json.loads(text))
    if need is None:
        return None, SkipReport(False, "no prunable condition on parsed_md", skip.count)
    chosen = np.flatnonzero(skip.candidates(need))
    sizes = skip.pages.column("text_bytes").to_numpy()
    text_bytes = int(sizes[chosen].sum())
    if text_bytes > max(MAX_CANDIDATE_SHARE * int(sizes.sum()), SMALL_TEXT):
        return None, SkipReport(False, f"{len(chosen):,} of {skip.count:,} pages may match: scanned",
                                skip.count, len(chosen))
    if text_bytes > MAX_CANDIDATE_TEXT:
        return None, SkipReport(False, f"{text_bytes / 2**20:,.0f} MiB of candidate text: scanned",
                                skip.count, len(chosen))
    return reader.rows(skip, chosen), SkipReport(True, "pruned", skip.count, len(chosen))


class CandidateReader:
    """Reads whole candidate pages: `parsed_md` from each page, the other columns from the row
    groups (files are the worker's inherited descriptors, opened through /proc/self/fd)."""

    def __init__(self, files: dict[str, int], metadata: dict[str, pq.FileMetaData]):
        self.files = files
        self.metadata = metadata
        self.order = {name: i for i, name in enumerate(files)}

    def rows(self, skip: SkipIndex, chosen: np.ndarray) -> pa.Table:
        pages = skip.pages.take(pa.array(chosen)).to_pylist()
        pages.sort(key=lambda p: (self.order[p["file"]], p["row_group"], p["first_row"]))
        schema = self._schema()
        parts: list[pa.Table] = []
        i = 0
        while i < len(pages):  # one row group at a time: its small columns are read once
            j = i
            while j < len(pages) and (pages[j]["file"], pages[j]["row_group"]) == (pages[i]["file"], pages[i]["row_group"]):
                j += 1
            parts.append(self._group_rows(pages[i:j], schema))
            i = j
        return pa.concat_tables(parts) if parts else schema.empty_table()

    def _schema(self) -> pa.Schema:
        name = next(iter(self.files))
        return self.metadata[name].schema.to_arrow_schema()

    def _group_rows(self, pages: list[dict], schema: pa.Schema) -> pa.Table:
        file, group = pages[0]["file"], pages[0]["row_group"]
        handle = pq.ParquetFile(fd_path(self.files[file]), metadata=self.metadata[file],
                                pre_buffer=False)
        small = [n for n in schema.names if n != "parsed_md"]
        table = handle.read_row_group(group, columns=small, use_threads=False)
        rows = np.concatenate([np.arange(p["first_row"], p["first_row"] + p["rows"]) for p in pages])
        texts = self._texts(pages, handle, group)
        out = table.take(pa.array(rows))
        field = schema.field("parsed_md")
        return out.add_column(schema.get_field_index("parsed_md"), field,
                              texts.cast(field.type)).select(schema.names)

    def _texts(self, pages: list[dict], handle: pq.ParquetFile, group: int) -> pa.Array:
        column = handle.schema_arrow.get_field_index("parsed_md")
        texts: list[bytes | None] = []
        try:
            codec, nullable = column_format(handle.metadata, group, column)
            for p in pages:
                if p["offset"] < 0:
                    raise PageFormatError("not readable by page")
                values = read_values(self.files[p["file"]], p["offset"], p["size"], codec=codec, nullable=nullable)
                if len(values) != p["rows"]:
                    raise PageFormatError("page rows differ from the index")
                texts.extend(values)
            # bytes -> binary -> string: UTF-8 checked by Arrow, no Python str per cell
            return pa.array(texts, pa.binary()).cast(pa.string())
        except PageFormatError:  # the row group has them too
            md = handle.read_row_group(group, columns=["parsed_md"], use_threads=False).column(0)
            rows = np.concatenate([np.arange(p["first_row"], p["first_row"] + p["rows"]) for p in pages])
            return md.take(pa.array(rows)).combine_chunks()


__all__ = ["CandidateReader", "SkipReport", "pruned_filings"]
