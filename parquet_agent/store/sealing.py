"""The bytes of a sealed journal (`x.jsonl.gz`): plain gzip that survives one flipped bit.

A deflate stream does not survive a flipped bit: everything after it decodes wrong or not at
all, and gzip's own CRC covers the decompressed lines, so it says that, not where. A sealed
journal therefore carries, in a gzip extra field (RFC 1952 FEXTRA, subfield "PA"; every gzip
reader skips it, so `zcat` and `gzip.decompress` read the file as before), a CRC-32 of every
other byte of the file. One flipped bit anywhere in the file is found by that CRC's syndrome
(`bitflip.locate_flip`) and undone on read, and the reader says so; more damage falls back to
salvaging the lines before it. Files sealed before this field existed (plain `gzip.compress`)
read as they always did.

    1f 8b 08 04 | mtime 0 | xfl 02 | os ff | xlen 8 | "PA" | 4 | CRC-32 (LE) | deflate | gzip trailer
"""

from __future__ import annotations

import gzip
import zlib

from parquet_agent.store.bitflip import flip_bit, locate_flip

_PREFIX = b"\x1f\x8b\x08\x04\x00\x00\x00\x00\x02\xff\x08\x00PA\x04\x00"
_CRC_AT = len(_PREFIX)
_BODY_AT = _CRC_AT + 4


def seal(data: bytes) -> bytes:
    """`data` as a gzip file (level 9) with the whole-file CRC in its extra field."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    rest = (deflate.compress(data) + deflate.flush() + zlib.crc32(data).to_bytes(4, "little")
            + (len(data) & 0xFFFFFFFF).to_bytes(4, "little"))
    crc = zlib.crc32(rest, zlib.crc32(_PREFIX))
    return _PREFIX + crc.to_bytes(4, "little") + rest


def unseal(sealed: bytes) -> tuple[bytes, str | None]:
    """The journal bytes of a sealed file, and a note when one flipped bit was undone (None
    when the file is intact). Raises what `gzip.decompress` raises when it cannot be read."""
    note = None
    if len(sealed) > _BODY_AT and _within_one_bit(sealed[:_CRC_AT], _PREFIX):
        message = sealed[:_CRC_AT] + sealed[_BODY_AT:]
        bit = locate_flip(message, int.from_bytes(sealed[_CRC_AT:_BODY_AT], "little"))
        if bit is not None:
            byte = bit >> 3
            if bit < 8 * len(message):
                fixed = flip_bit(message, bit)
                sealed = fixed[:_CRC_AT] + sealed[_CRC_AT:_BODY_AT] + fixed[_CRC_AT:]
                byte += 0 if byte < _CRC_AT else 4
            else:  # the stored CRC itself
                byte = _CRC_AT + (bit - 8 * len(message)) // 8
            note = (f"one flipped bit (byte {byte}) was repaired on read, every line reads; the "
                    "file on disk is still damaged (restore it from a copy)")
    return gzip.decompress(sealed), note


def _within_one_bit(found: bytes, expected: bytes) -> bool:
    return bin(int.from_bytes(found, "big") ^ int.from_bytes(expected, "big")).count("1") <= 1
