"""The byte format of a raw pack (`blobs.py`): record framing, chunking, the deflate
dictionary, and finding whole records again after damaged bytes.

    b"B" | meta length u32 | data length u32 | CRC-32 of meta+data u32 | meta JSON | data
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import zlib
from dataclasses import dataclass

from parquet_agent.store.bitflip import flip_bit, locate_flip

RAW_DIR = "raw"
META_PREFIX = "meta/"
HEADER = struct.Struct(">cIII")
CODEC_RAW, CODEC_DEFLATE = 0, 2
_MIN_CHUNK = 48
WINDOW = 32 * 1024  # deflate's largest dictionary
_CUT = re.compile(rb",[ \t\r\n]*(?=\\*[{\"\[])")
# Wire fragments common to the three provider formats and our recorded envelopes. Changing this
# breaks reading old packs: add a new codec instead.
_ZDICT = (
    b'{\n "schema_version": 1,\n "kind": "http_request",\n "recorded_at": "2026-11-30T07:00:00'
    b'+00:00",\n "method": "POST",\n "url": "http://127.0.0.1/v1/chat/completions",\n "headers"'
    b': [\n  [\n   "content-length",\n   "1"\n  ],\n "status": 200,\n "http_version": "HTTP/1.1"'
    b',\n "body_sha256": "",\n "body_encoding": "utf-8",\n "body": "{\\"messages\\":[{\\"role\\":'
    b'\\"system\\",\\"content\\":\\"{\\"role\\":\\"user\\",\\"content\\":\\"{\\"role\\":\\"assistant'
    b'\\",\\"content\\":null,\\"tool_calls\\":[{\\"id\\":\\"call_\\",\\"type\\":\\"function\\",'
    b'\\"function\\":{\\"name\\":\\"read_filing\\",\\"arguments\\":\\"{\\\\\\"file_stem\\\\\\": '
    b'{\\"role\\":\\"tool\\",\\"tool_call_id\\":\\"call_\\",\\"content\\":\\"{\\\\\\"source_id'
    b'\\\\\\": \\\\\\"start\\\\\\": \\\\\\"end\\\\\\": \\\\\\"text\\\\\\": \\"'
    b'{\\"id\\": \\"chatcmpl-\\", \\"object\\": \\"chat.completion\\", \\"created\\": \\"model\\": '
    b'\\"choices\\": [{\\"index\\": 0, \\"message\\": {\\"role\\": \\"assistant\\", \\"content\\": '
    b'\\"finish_reason\\": \\"stop\\"}], \\"usage\\": {\\"prompt_tokens\\": \\"completion_tokens\\":'
    b' \\"total_tokens\\": \\"prompt_tokens_details\\": {\\"cached_tokens\\": 0}, '
    b'\\"completion_tokens_details\\": {\\"reasoning_tokens\\": 0}}'
    b'\\"stop_reason\\":\\"tool_use\\",\\"type\\":\\"tool_use\\",\\"id\\":\\"toolu_\\",\\"input\\":'
    b'{\\"type\\":\\"tool_result\\",\\"tool_use_id\\":\\"input_tokens\\":\\"output_tokens\\":'
    b'{\\"contents\\":[{\\"parts\\":[{\\"text\\":\\"functionCall\\":{\\"name\\":\\"args\\":'
    b'\\"functionResponse\\":{\\"usageMetadata\\":{\\"promptTokenCount\\":\\"finishReason\\":'
)


def chunk_digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def hash_body(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def split_chunks(data: bytes, min_size: int = _MIN_CHUNK) -> list[bytes]:
    """Cut `data` after JSON separators, each chunk at least `min_size` bytes (but the last)."""
    chunks, start = [], 0
    for match in _CUT.finditer(data):
        end = match.end()
        if end - start >= min_size:
            chunks.append(data[start:end])
            start = end
    if start < len(data) or not chunks:
        chunks.append(data[start:])
    return chunks


def deflate_dictionary(window: bytes) -> bytes:
    return (_ZDICT + window)[-WINDOW:]


def compact_numbers(numbers: list[int]) -> list:
    out: list = []
    for n in numbers:
        last = out[-1] if out else None
        if isinstance(last, list) and last[1] + 1 == n:
            last[1] = n
        elif isinstance(last, int) and last + 1 == n:
            out[-1] = [last, n]
        else:
            out.append(n)
    return out


def expand_numbers(refs: list) -> list[int]:
    out: list[int] = []
    for ref in refs:
        out.extend(range(ref[0], ref[1] + 1) if isinstance(ref, list) else (ref,))
    return out


@dataclass(frozen=True)
class RawStats:
    """Sizes of a raw store: `logical_bytes` written by callers vs `stored_bytes` on disk."""

    bodies: int
    chunks: int
    logical_bytes: int
    stored_bytes: int


def parse_meta(raw: bytes | bytearray) -> dict | None:
    """A record's recipe, or None when it does not read as one."""
    try:
        meta = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(meta, dict) or not isinstance(meta.get("n"), str) or "c" not in meta:
        return None
    if not (_numbers(meta["c"]) and _naturals(meta.get("l", []))
            and (meta.get("p") is None or _naturals([meta["p"]]))):
        return None  # a recipe whose numbers are not numbers: not one we wrote
    return meta


def _naturals(values: object) -> bool:
    # `type(v) is int`: a bool is an int subclass and no recipe number; this runs per record read
    return isinstance(values, list) and all(type(v) is int and v >= 0 for v in values)


def _numbers(refs: object) -> bool:
    """Whether `refs` is a recipe's chunk list: numbers and [first, last] ranges."""
    if not isinstance(refs, list):
        return False
    for r in refs:
        if type(r) is int:
            if r < 0:
                return False
        elif not (type(r) is list and len(r) == 2 and type(r[0]) is int
                  and type(r[1]) is int and 0 <= r[0] <= r[1]):
            return False
    return True


def refers_ahead(meta: dict, number: int, chunks: int) -> str | None:
    """What record `number`'s recipe refers to that is not before it (None: nothing), `chunks`
    chunks being known before it: a writer only ever refers back."""
    prev = meta.get("p")
    if prev is not None and prev >= number:
        return f"continues record {prev}, not before it (records cut out or moved)"
    # the highest chunk referred to, without expanding the ranges (this runs per record read)
    top = max((r[1] if isinstance(r, list) else r for r in meta["c"]), default=None)
    if top is not None and top >= chunks + len(meta.get("l", [])):
        return f"refers to chunk {top}, not before it (records cut out or moved)"
    return None


def record_meta(data: bytes | bytearray, pos: int) -> bytes | bytearray:
    _, meta_len, _, _ = HEADER.unpack_from(data, pos)
    return data[pos + HEADER.size: pos + HEADER.size + meta_len]


def starts_record(data: bytes | bytearray, pos: int) -> bool:
    """Whether a whole record with a matching CRC starts at `pos`."""
    return next_record(data, pos) == pos


def next_record(data: bytes | bytearray, start: int) -> int | None:
    """The offset of the next whole record whose CRC matches, at or after `start`."""
    pos = data.find(b"B", start)
    while pos >= 0 and len(data) - pos >= HEADER.size:
        _, meta_len, data_len, crc = HEADER.unpack_from(data, pos)
        end = pos + HEADER.size + meta_len + data_len
        if end <= len(data) and zlib.crc32(data[pos + HEADER.size:end]) == crc:
            return pos
        pos = data.find(b"B", pos + 1)
    return None


def group_of_name(name: str) -> str:
    return name.split("/", 1)[0]


def _fits(data: bytes | bytearray, end: int) -> bool:
    """Whether a record may end at `end`: the pack ends there, a whole record follows, or
    only a torn last write does."""
    if end > len(data):
        return False
    if end == len(data) or starts_record(data, end):
        return True
    if len(data) - end < HEADER.size:
        return True
    _, meta_len, data_len, _ = HEADER.unpack_from(data, end)
    return end + HEADER.size + meta_len + data_len > len(data)


def repair_record(data: bytes | bytearray, pos: int) -> int | None:
    """The bit of `data` (`8 * byte + k`) whose flip makes the record at `pos` whole (its CRC
    matching, its recipe reading), or None when no single flipped bit does. A bit in the recipe,
    the stored data or the CRC is named by the CRC's syndrome (`bitflip.locate_flip`); a bit in
    the kind byte or a length is found by trying each of the header's bits (the recipe must
    read: the CRC covers recipe and data together, so a length moved by as much as the other
    one was not changes nothing it covers)."""
    kind, meta_len, data_len, crc = HEADER.unpack_from(data, pos)
    body_at = pos + HEADER.size
    end = body_at + meta_len + data_len
    if kind == b"B" and end <= len(data):
        bit = locate_flip(memoryview(data)[body_at:end], crc)
        if bit is not None and bit >= 8 * (end - body_at):  # the stored CRC (big-endian)
            k = bit - 8 * (end - body_at)
            return 8 * (body_at - 1 - k // 8) + k % 8
        if bit is not None:
            meta = bytes(data[body_at:body_at + meta_len])
            if parse_meta(flip_bit(meta, bit) if bit < 8 * meta_len else meta) is not None:
                return 8 * body_at + bit
    header = bytes(data[pos:body_at])
    for bit in range(8 * HEADER.size):
        kind, meta_len, data_len, crc = HEADER.unpack(flip_bit(header, bit))
        end = body_at + meta_len + data_len
        if (kind == b"B" and _fits(data, end) and zlib.crc32(data[body_at:end]) == crc
                and parse_meta(data[body_at:body_at + meta_len]) is not None):
            return 8 * pos + bit
    return None
