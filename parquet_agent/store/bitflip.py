"""Find and undo one flipped bit with the CRC-32 a record already carries.

CRC-32 (zlib's, the IEEE polynomial) has Hamming distance 3 for messages far longer than any
record we write, so every single-bit error gives its own nonzero syndrome (the stored CRC XOR
the CRC of the bytes read): the syndrome names the bit. No extra bytes are stored. Two or more
flipped bits are not repaired (the syndrome then matches no position, or, rarely, a wrong one;
every body is still checked against its BLAKE2b hash, so a wrong repair is reported as damage,
never given back as data).

    bit = locate_flip(message, stored_crc)   # None: intact or not one bit; else the bit index
    fixed = flip_bit(message, bit)            # when bit < 8 * len(message)

A bit index is `8 * byte + k` for the bit of value `1 << k`; an index at or past
`8 * len(message)` means the stored CRC value itself has bit `index - 8 * len(message)` flipped
(the message is intact).
"""

from __future__ import annotations

import zlib

_POLY = 0xEDB88320  # the IEEE polynomial, bit-reflected, as zlib's CRC-32 uses it


def _steps(register: int, n: int) -> int:
    """`n` steps of zlib's CRC-32 register (S), fed zero bits."""
    for _ in range(n):
        register = (register >> 1) ^ (_POLY if register & 1 else 0)
    return register


_TABLE = [_steps(i, 8) for i in range(256)]  # S^8 of each low byte: zlib's table
_BY_TOP = {entry >> 24: i for i, entry in enumerate(_TABLE)}  # top bytes are all distinct
_START = {_steps(0x80, r): r for r in range(8)}  # S^r(0x80) -> r


def locate_flip(message: bytes | bytearray | memoryview, stored_crc: int) -> int | None:
    """The one bit whose flip explains why `message` does not match `stored_crc`, or None
    (it matches, or no single bit explains it). Costs one step per byte of `message`."""
    syndrome = zlib.crc32(message) ^ stored_crc
    if syndrome == 0:
        return None
    length = len(message)
    if syndrome & (syndrome - 1) == 0:  # one bit of the stored CRC itself
        return 8 * length + syndrome.bit_length() - 1
    # CRC is affine: flipping bit k of byte i changes the CRC by S^(8(L - i))(1 << k), where S
    # is one step of the (linear) register. With 1 << k = S^(7 - k)(0x80), that is S^n(0x80)
    # for n = 8(L - i) + 7 - k = 8m + r: undo whole bytes of the syndrome (m = L - i) until
    # S^r(0x80) is left, which says r (so k = 7 - r).
    register, table, by_top, start = syndrome, _TABLE, _BY_TOP, _START
    for back in range(1, length + 1):
        # undo S^8, i.e. c -> _TABLE[c & 0xFF] ^ (c >> 8): the result's top byte names c's low
        # byte (inlined: this loop is what a repair costs)
        low = by_top[register >> 24]
        register = (((register ^ table[low]) << 8) | low) & 0xFFFFFFFF
        r = start.get(register)
        if r is not None:
            return 8 * (length - back) + 7 - r
    return None


def flip_bit(message: bytes | bytearray | memoryview, bit: int) -> bytes:
    """`message` with bit `bit` (as `locate_flip` numbers them) flipped."""
    out = bytearray(message)
    out[bit >> 3] ^= 1 << (bit & 7)
    return bytes(out)
