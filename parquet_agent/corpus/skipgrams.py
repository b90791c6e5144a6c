"""The gram summary of the skipping index: per page, a bloom filter of its byte 4-grams.

A page's filter is the set of byte 4-grams of its text, ASCII letters folded to lower case,
hashed with one hash function into 2**14 bits (2 KiB a page). Leaving out common "stop grams"
was measured and pruned worse at every threshold (bench/bench_skip_choice.py): a gram in half
the pages still rules out the other half. The index stores the filters bit-sliced (`bits[b]` is
one bit per page for filter bit b): a literal with g grams reads g rows of P/8 bytes and ANDs them.

Exactness (never a false negative):
- case-sensitive (`contains`, LIKE, ...): a page containing the literal contains its bytes with
  ASCII letters folded, so every gram of the folded literal is in the page's set;
- case-insensitive (ILIKE, `lower(...)`, regexp 'i'): only the literal's ASCII runs are used
  (DuckDB lowers per code point, so an ASCII run of the lowered literal comes from ASCII text),
  and pages holding one of the few non-ASCII characters whose case mapping is ASCII (`UNSAFE_FOLD`:
  'İ' and the Kelvin sign lower to ASCII; 'ı' and 'ſ' upper to it) are always candidates
  (`fold_unsafe`, applied by the caller to every summary).
"""

from __future__ import annotations

import numpy as np

GRAM = 4
FILTER_BITS = 14  # 2**14 bits = 2 KiB per ~128 KiB page of Markdown (~6 % of its zstd bytes)
_MUL = 0x9E3779B1  # an odd 32-bit multiplier (Fibonacci hashing)
# Non-ASCII characters whose lower or upper case (DuckDB) or case folding (RE2) is ASCII:
# 'İ' -> 'i', Kelvin sign -> 'k' (lower); 'ı' -> 'I', 'ſ' -> 'S' (upper). Checked against DuckDB
# in tests/corpus/test_skipindex.py.
UNSAFE_FOLD = ("\u0130", "\u0131", "\u017f", "\u212a")
_UNSAFE_BYTES = tuple(c.encode("utf-8") for c in UNSAFE_FOLD)
_ASCII = bytes(range(128))


def gram_values(data: bytes, n: int = GRAM) -> np.ndarray:
    """The byte n-grams (n <= 4) of `data`, ASCII letters folded first, as big-endian uint32."""
    data = data.lower()
    count = len(data) - n + 1
    if count <= 0:
        return np.empty(0, np.uint32)
    if n == 4:  # four strided copies of 4-byte words: no arithmetic over the text
        out = np.empty(count, np.uint32)
        for k in range(4):
            words = (len(data) - k) // 4
            out[k::4] = np.frombuffer(data, ">u4", count=words, offset=k)[: len(out[k::4])]
        return out
    a = np.frombuffer(data, np.uint8).astype(np.uint32)
    v = a[:count].copy()
    for k in range(1, n):
        v = (v << np.uint32(8)) | a[k : count + k]
    return v


def gram_hash(values: np.ndarray, multiplier: int, bits: int) -> np.ndarray:
    """Multiplicative hashing of uint32 values to `bits` bits (uint32: usable as an index; an
    intp copy would cost as much as the hashing)."""
    out = np.multiply(values, np.uint32(multiplier))
    return np.right_shift(out, np.uint32(32 - bits), out=out)


class GramRule:
    """Which filter bits a text sets: its hashed grams."""

    def __init__(self, n: int = GRAM, bits: int = FILTER_BITS):
        self.n, self.bits = n, bits

    def positions(self, data: bytes) -> np.ndarray:
        return gram_hash(gram_values(data, self.n), _MUL, self.bits)

    def literal_positions(self, text: str, fold: bool) -> np.ndarray | None:
        """Filter bits every page containing `text` (case-insensitively when `fold`) has set;
        None: no usable gram."""
        if fold:  # only ASCII runs are safe under Unicode case mapping
            runs = "".join(c if c < "\x80" else "\x00" for c in text).split("\x00")
            parts = [self.positions(r.encode("ascii")) for r in runs if len(r) >= self.n]
        else:
            parts = [self.positions(text.encode("utf-8", "surrogatepass"))]
        found = np.unique(np.concatenate(parts)) if parts else np.empty(0, np.intp)
        return found if len(found) else None


def fold_unsafe(text: bytes) -> bool:
    """Does the UTF-8 `text` hold an UNSAFE_FOLD character? Its non-ASCII bytes alone are whole
    characters in order (ASCII bytes are never part of one), so searching them is exact, and
    5x cheaper than searching the page."""
    rest = text.translate(None, _ASCII)
    return bool(rest) and any(b in rest for b in _UNSAFE_BYTES)


__all__ = ["FILTER_BITS", "GRAM", "UNSAFE_FOLD", "GramRule", "fold_unsafe", "gram_hash", "gram_values"]
