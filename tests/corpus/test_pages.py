"""Reading one `parsed_md` cell from its own data page, checked against pyarrow on real files."""

from __future__ import annotations

import os
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from parquet_agent.corpus.layout import TEXT_PAGE_BYTES, LayoutWriter
from parquet_agent.corpus.pages import PageFormatError, column_format, column_pages, page_spans, read_cell
from parquet_agent.corpus.schema import CORPUS_SCHEMA


def _texts(n: int, seed: int = 0) -> list[str | None]:
    rng = random.Random(seed)
    words = ["revenue", "Umsatz €", "净利润", "10-K", "| 2024 | 1,204 |", "\n\n## Item 7"]
    out: list[str | None] = []
    for i in range(n):
        if i % 17 == 5:
            out.append(None)
        elif i % 13 == 3:
            out.append("")
        else:  # heavy-tailed sizes: a few cells are larger than a page
            size = int(rng.paretovariate(1.1) * 300)
            out.append(" ".join(rng.choice(words) for _ in range(min(size, 40_000))))
    return out


def _write(path, texts, **options) -> None:
    field = pa.field("parsed_md", pa.string(), nullable=options.pop("nullable", True))
    table = pa.table({"parsed_md": pa.array(texts, pa.string())}, schema=pa.schema([field]))
    pq.write_table(table, path, row_group_size=len(texts) // 3, **options)


def _cells_by_page(path, column: int = 0) -> list[str | None]:
    """Every cell of one column, each read alone from its page."""
    meta = pq.read_metadata(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        cells = []
        for g in range(meta.num_row_groups):
            codec, nullable = column_format(meta, g, column)
            spans = column_pages(fd, meta, g, column)
            assert [s.first_row for s in spans] == [sum(t.rows for t in spans[:i]) for i in range(len(spans))]
            assert sum(s.rows for s in spans) == meta.row_group(g).num_rows
            for span in spans:
                for k in range(span.rows):
                    value = read_cell(fd, span.offset, span.size, k, codec=codec, nullable=nullable)
                    cells.append(None if value is None else value.decode("utf-8"))
        return cells
    finally:
        os.close(fd)


@pytest.mark.parametrize(
    "options",
    [
        {"compression": "zstd", "data_page_size": 4096, "write_batch_size": 1},
        {"compression": "zstd", "data_page_size": 4096, "write_batch_size": 1, "data_page_version": "2.0"},
        {"compression": "snappy", "data_page_size": 20_000, "write_batch_size": 7},
        {"compression": "gzip", "data_page_version": "2.0"},
        {"compression": "none", "data_page_size": 1},
        {"compression": "zstd", "nullable": False, "data_page_size": 4096, "write_batch_size": 1},
    ],
    ids=["zstd-v1", "zstd-v2", "snappy", "gzip-v2", "uncompressed-row-pages", "required"],
)
def test_every_cell_read_from_its_page_equals_pyarrow(tmp_path, options):
    texts = _texts(300)
    if options.get("nullable") is False:
        texts = [t or "" for t in texts]
    path = tmp_path / "t.parquet"
    _write(path, texts, use_dictionary=False, **options)
    assert _cells_by_page(path) == pq.read_table(path).column(0).to_pylist() == texts


def test_layout_writer_cuts_markdown_into_small_pages(tmp_path):
    texts = [t or "" for t in _texts(600, seed=1)]
    rows = [
        {"accession": f"0000{i:06d}", "file_stem": f"s{i:06d}", "year": 2025, "month": 1,
         "parsed_md": t, "char_count": len(t), "md5": "0" * 32, "has_ocr": False, "source_format": "html"}
        for i, t in enumerate(texts)
    ]
    path = tmp_path / "2025-01.parquet"
    with LayoutWriter(path, row_group_text_bytes=400_000) as writer:
        writer.write(pa.Table.from_pylist(rows, schema=CORPUS_SCHEMA))
    meta = pq.read_metadata(path)
    column = CORPUS_SCHEMA.get_field_index("parsed_md")
    fd = os.open(path, os.O_RDONLY)
    try:
        row = 0
        for g in range(meta.num_row_groups):
            for span in column_pages(fd, meta, g, column):
                sizes = [len(t.encode()) for t in texts[row : row + span.rows]]
                # a page closes at the first cell that takes it past TEXT_PAGE_BYTES
                assert sum(sizes[:-1]) < TEXT_PAGE_BYTES
                row += span.rows
    finally:
        os.close(fd)
    assert row == len(texts) and meta.num_row_groups > 1
    assert _cells_by_page(path, column) == texts


def test_what_cannot_be_read_by_page_says_so(tmp_path):
    path = tmp_path / "dict.parquet"
    _write(path, ["a", "b", "a"] * 30, use_dictionary=True)  # a dictionary page first
    meta = pq.read_metadata(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(PageFormatError, match="not a PLAIN data page"):
            column_pages(fd, meta, 0, 0)
    finally:
        os.close(fd)
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(bytes(random.Random(5).randrange(256) for _ in range(4096)))
    fd = os.open(garbage, os.O_RDONLY)
    try:
        for start in range(0, 4000, 97):  # never a hang or another exception
            with pytest.raises(PageFormatError):
                page_spans(fd, start, 4096 - start)
    finally:
        os.close(fd)
    ints = tmp_path / "ints.parquet"
    pq.write_table(pa.table({"n": [1, 2, 3]}), ints)
    with pytest.raises(PageFormatError, match="not a top-level BYTE_ARRAY"):
        column_format(pq.read_metadata(ints), 0, 0)


def test_a_wrong_span_is_an_error_not_garbage(tmp_path):
    path = tmp_path / "t.parquet"
    _write(path, _texts(90), compression="zstd", use_dictionary=False, data_page_size=4096, write_batch_size=1)
    meta = pq.read_metadata(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        span = column_pages(fd, meta, 0, 0)[0]
        with pytest.raises(PageFormatError, match="row 99"):
            read_cell(fd, span.offset, span.size, 99, codec="ZSTD", nullable=True)
        with pytest.raises(PageFormatError, match="short read"):
            read_cell(fd, os.fstat(fd).st_size - 10, 100, 0, codec="ZSTD", nullable=True)
        # a span that starts inside a page, and a page whose compressed bytes are damaged
        with pytest.raises(PageFormatError):
            read_cell(fd, span.offset + 7, span.size, 0, codec="ZSTD", nullable=True)
    finally:
        os.close(fd)
    data = bytearray(path.read_bytes())
    data[span.offset + span.size - 40 : span.offset + span.size - 8] = b"\xff" * 32
    damaged = tmp_path / "damaged.parquet"
    damaged.write_bytes(bytes(data))
    fd = os.open(damaged, os.O_RDONLY)
    try:
        with pytest.raises(PageFormatError, match="could not be decoded"):
            read_cell(fd, span.offset, span.size, 0, codec="ZSTD", nullable=True)
    finally:
        os.close(fd)
