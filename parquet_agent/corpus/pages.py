"""Read one cell of a Parquet column from the one data page that holds it.

Why: pyarrow reads a column a row group at a time, so reading one filing decompresses its whole
row group (~12 MiB of Markdown in the tool-ready layout), which is most of a scoped tool call's
cost. `LayoutWriter` cuts `parsed_md` into pages of about 128 KiB; the index builder records where
each row's page is (`page_spans`), and a worker reads and decodes just that page (`read_cell`).

Only what a plain writer produces is decoded: data pages v1 and v2 of a top-level, non-repeated
BYTE_ARRAY column in PLAIN encoding, compressed with a codec pyarrow can decompress.
Anything else raises `PageFormatError`, and the caller reads the row group instead.
Page headers are Thrift compact-protocol structs (parquet-format's `PageHeader`); `_Thrift`
decodes just enough of that protocol to read them.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

DATA_PAGE, DATA_PAGE_V2 = 0, 3  # PageType (2 is a dictionary page)
PLAIN = 0
HEADER_PROBE = 256  # bytes read for a page header; a longer one (statistics) is read again
MAX_HEADER = 1 << 24
# Parquet codec names (as pyarrow's metadata spells them) -> pyarrow codec; "LZ4" is Hadoop-framed
_CODECS = {"ZSTD": "zstd", "SNAPPY": "snappy", "GZIP": "gzip", "BROTLI": "brotli", "LZ4_RAW": "lz4_raw"}


class PageFormatError(ValueError):
    """The page is not one this module decodes (or is damaged); read the row group instead."""


@dataclass(frozen=True)
class PageSpan:
    offset: int  # file offset of the page header
    size: int  # header + payload bytes
    first_row: int  # row in the row group of the page's first value
    rows: int


def column_format(meta: pq.FileMetaData, group: int, column: int) -> tuple[str, bool]:
    """(codec, nullable) of one column chunk; PageFormatError unless `read_cell` can read it."""
    schema = meta.schema.column(column)
    if schema.physical_type != "BYTE_ARRAY" or schema.max_repetition_level or schema.max_definition_level > 1:
        raise PageFormatError(f"column {schema.path} is not a top-level BYTE_ARRAY column")
    codec = meta.row_group(group).column(column).compression
    if codec != "UNCOMPRESSED" and codec not in _CODECS:
        raise PageFormatError(f"codec {codec} is not read page by page")
    return codec, schema.max_definition_level == 1


def column_pages(fd: int, meta: pq.FileMetaData, group: int, column: int) -> list[PageSpan]:
    """The data pages of one column chunk (PageFormatError when `read_cell` could not read them)."""
    column_format(meta, group, column)
    chunk = meta.row_group(group).column(column)
    start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    return page_spans(fd, start, chunk.total_compressed_size)


def page_spans(fd: int, start: int, length: int) -> list[PageSpan]:
    """The data pages of the column chunk at `[start, start + length)` of the file open as `fd`.

    Raises PageFormatError for a chunk that `read_cell` could not decode (a dictionary page,
    an encoding other than PLAIN)."""
    spans: list[PageSpan] = []
    offset, end, row = start, start + length, 0
    while offset < end:
        header, header_size = _read_header(fd, offset)
        kind, encoding, values = _describe(header)
        if kind not in (DATA_PAGE, DATA_PAGE_V2) or encoding != PLAIN:
            raise PageFormatError(f"page type {kind}, encoding {encoding}: not a PLAIN data page")
        if not isinstance(header.get(3), int) or header[3] < 0:
            raise PageFormatError(f"page header at offset {offset} has no compressed size")
        size = header_size + header[3]
        spans.append(PageSpan(offset, size, row, values))
        offset += size
        row += values
    return spans


def read_cell(fd: int, span_offset: int, span_size: int, row_in_page: int, *,
              codec: str, nullable: bool) -> bytes | None:
    """The value of row `row_in_page` of the page at `span_offset` (None when it is null)."""
    return _read_page(fd, span_offset, span_size, codec, nullable, row_in_page)


def read_values(fd: int, span_offset: int, span_size: int, *, codec: str, nullable: bool) -> list[bytes | None]:
    """Every value of the page at `span_offset`, in row order (None where null)."""
    return _read_page(fd, span_offset, span_size, codec, nullable, None)


def _read_page(fd: int, span_offset: int, span_size: int, codec: str, nullable: bool, row: int | None):
    page = os.pread(fd, span_size, span_offset)
    if len(page) != span_size:
        raise PageFormatError(f"short read: {len(page)} of {span_size} bytes")
    try:
        return _decode(memoryview(page), row, codec, nullable)
    except (IndexError, struct.error, OSError, pa.ArrowException) as exc:  # a damaged page or span
        raise PageFormatError(f"page at offset {span_offset} could not be decoded: {exc}") from exc


def _decode(page: memoryview, row_in_page: int | None, codec: str, nullable: bool):
    """One value (row_in_page) or, with None, the list of all values of a data page."""
    header, pos = _Thrift(page).struct_at(0)
    kind, encoding, values = _describe(header)
    wanted = row_in_page if row_in_page is not None else 0
    if kind not in (DATA_PAGE, DATA_PAGE_V2) or encoding != PLAIN or not 0 <= wanted < max(values, 1):
        raise PageFormatError(f"row {row_in_page} of a page of {values} (type {kind}, encoding {encoding})")
    if kind == DATA_PAGE:  # levels and values compressed together; levels length-prefixed
        body = _decompress(page[pos:], header[2], codec)
        levels = body[:0]
        if nullable:
            (n,) = struct.unpack_from("<I", body, 0)
            levels, body = body[4 : 4 + n], body[4 + n :]
    else:  # v2: repetition then definition levels, uncompressed, then the values
        v2 = header[8]
        rep, dfn = v2.get(6, 0), v2.get(5, 0)
        levels = page[pos + rep : pos + rep + dfn]
        payload = page[pos + rep + dfn :]
        body = _decompress(payload, header[2] - rep - dfn, codec) if v2.get(7, True) else payload
    defined = _bit_levels(levels, values) if nullable else [True] * values
    if row_in_page is not None:
        if not defined[row_in_page]:
            return None
        skip = sum(defined[:row_in_page])
        return _plain_values(body, skip, 1)[0]
    cells = iter(_plain_values(body, 0, sum(defined)))
    return [next(cells) if d else None for d in defined]


def _plain_values(body: memoryview, skip: int, count: int) -> list[bytes]:
    """PLAIN BYTE_ARRAY values: a 4-byte little-endian length, then the bytes; `count` after `skip`."""
    pos = 0
    for _ in range(skip):
        (n,) = struct.unpack_from("<I", body, pos)
        pos += 4 + n
    out = []
    for _ in range(count):
        (n,) = struct.unpack_from("<I", body, pos)
        if pos + 4 + n > len(body):
            raise PageFormatError("value runs past the end of its page")
        out.append(bytes(body[pos + 4 : pos + 4 + n]))
        pos += 4 + n
    return out


def _read_header(fd: int, offset: int) -> tuple[dict, int]:
    probe = HEADER_PROBE
    while True:
        buf = os.pread(fd, probe, offset)
        try:
            return _Thrift(buf).struct_at(0)
        except IndexError:  # the header is longer than what was read
            if len(buf) < probe or probe >= MAX_HEADER:
                raise PageFormatError(f"no page header could be read at offset {offset}") from None
            probe *= 4


def _describe(header: dict) -> tuple[int | None, int | None, int]:
    """(page type, encoding, number of values) of a PageHeader (type None: the header has none)."""
    kind = header.get(1)
    if kind == DATA_PAGE and 5 in header:
        return kind, header[5].get(2), header[5].get(1, 0)
    if kind == DATA_PAGE_V2 and 8 in header:
        return kind, header[8].get(4), header[8].get(1, 0)
    return kind, None, 0


def _decompress(payload: memoryview, size: int, codec: str) -> memoryview:
    if codec == "UNCOMPRESSED":
        return payload
    if codec not in _CODECS:
        raise PageFormatError(f"codec {codec} is not read page by page")
    return memoryview(pa.Codec(_CODECS[codec]).decompress(payload, decompressed_size=size))


def _bit_levels(data: memoryview, count: int) -> list[bool]:
    """Definition levels of a column whose maximum level is 1: RLE / bit-packed hybrid, width 1."""
    levels: list[bool] = []
    reader = _Thrift(data)
    while len(levels) < count:
        header = reader.varint()
        if header & 1:  # bit-packed: header >> 1 groups of 8 values, one byte per group
            for _ in range(header >> 1):
                byte = reader.byte()
                levels.extend(bool(byte >> bit & 1) for bit in range(8))
        else:  # a run: header >> 1 repeats of one value stored in one byte
            levels.extend([bool(reader.byte())] * min(header >> 1, count - len(levels)))
    return levels[:count]


class _Thrift:
    """A cursor over Thrift compact-protocol bytes. Running off the end raises IndexError."""

    def __init__(self, buf: bytes | memoryview):
        self.buf = buf
        self.pos = 0

    def byte(self) -> int:
        b = self.buf[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        result = shift = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result
            shift += 7

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def struct_at(self, pos: int) -> tuple[dict, int]:
        self.pos = pos
        return self.struct(), self.pos

    def struct(self) -> dict:
        """Field id -> value; nested structs are dicts, lists are lists, binary is bytes."""
        fields: dict = {}
        last = 0
        while True:
            head = self.byte()
            if head == 0:
                return fields
            delta, kind = head >> 4, head & 0x0F
            last = last + delta if delta else self.zigzag()
            fields[last] = self.value(kind)

    def value(self, kind: int):
        if kind in (1, 2):  # a boolean field carries its value in its type
            return kind == 1
        if kind == 3:
            return self.byte()
        if kind in (4, 5, 6):
            return self.zigzag()
        if kind == 7:
            self.pos += 8
            return struct.unpack_from("<d", self.buf, self.pos - 8)[0]
        if kind == 8:
            n = self.varint()
            self.pos += n
            if self.pos > len(self.buf):
                raise IndexError("binary runs past the buffer")
            return bytes(self.buf[self.pos - n : self.pos])
        if kind in (9, 10):  # list, set
            head = self.byte()
            size, element = head >> 4, head & 0x0F
            if size == 15:
                size = self.varint()
            if element in (1, 2):  # booleans in a list are one byte each
                return [self.byte() == 1 for _ in range(size)]
            return [self.value(element) for _ in range(size)]
        if kind == 11:  # map
            size = self.varint()
            if not size:
                return {}
            types = self.byte()
            return {self.value(types >> 4): self.value(types & 0x0F) for _ in range(size)}
        if kind == 12:
            return self.struct()
        raise PageFormatError(f"unknown Thrift compact type {kind}")
