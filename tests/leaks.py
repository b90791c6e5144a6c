"""A key in every encoding a model might echo it in, and a finder that decodes them all.

`spellings(key)` names each encoding of `key` (the fakes echo them); `exposures(data, key)`
decodes `data` every way it can (JSON escapes at any depth, percent, HTML references, base64 at
every offset and alphabet, hex, zlib/deflate inside base64) and names what still holds the key
or a 16-character piece of it. It shares no code with the scrub it checks.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
import sqlite3
import zlib
from pathlib import Path
from urllib.parse import unquote_to_bytes

PIECE = 16  # a run of this many of the key's characters counts as exposed


def escaped(text: str) -> str:
    """Every character as a JSON unicode escape (written into a JSON string, a second level)."""
    return "".join(f"\\u{ord(c):04x}" for c in text)


def spellings(key: str) -> dict[str, str]:
    raw = key.encode()
    return {
        "json-escaped": escaped(key),
        "json-escaped-some": "".join(escaped(c) if i % 3 == 0 else c for i, c in enumerate(key)),
        "url-encoded": "".join(f"%{b:02X}" for b in raw),
        "url-encoded-lower": "".join(f"%{b:02x}" for b in raw),
        "base64-0": base64.b64encode(raw).decode(),
        "base64-1": base64.b64encode(b"x" + raw).decode(),
        "base64-2": base64.b64encode(b"xy" + raw).decode(),
        "base64-url": base64.urlsafe_b64encode(b"z" + raw).decode(),
        "hex": raw.hex(),
    }


def leak_text(key: str) -> str:
    """One text holding the key in every spelling, the plain key last (where a split goes)."""
    return " ".join(f"{name}: {value}" for name, value in spellings(key).items()) + " plain: " + key


_UNICODE = re.compile(rb"\\+u([0-9a-fA-F]{4})")
_SLASH = re.compile(rb"\\+/")
_QUOTE = re.compile(rb'\\+"')
_B64 = re.compile(rb"[A-Za-z0-9+/_-]{12,}={0,2}")
_HEX = re.compile(rb"(?:[0-9a-fA-F]{2}){8,}")


def _unescape(data: bytes) -> bytes:
    for _ in range(6):
        out = _UNICODE.sub(lambda m: chr(int(m.group(1), 16)).encode("utf-8", "surrogatepass"),
                           data)
        out = _SLASH.sub(b"/", out)
        out = _QUOTE.sub(b'"', out)
        out = unquote_to_bytes(out)
        out = html.unescape(out.decode("utf-8", "replace")).encode("utf-8")
        if out == data:
            break
        data = out
    return data


def _inflate(data: bytes) -> bytes:
    for wbits in (15, -15, 31):
        try:
            return zlib.decompressobj(wbits).decompress(data, 50_000_000)
        except zlib.error:
            continue
    return b""


def _decoded_runs(data: bytes) -> list[bytes]:
    out = []
    for m in _B64.finditer(data):
        run = m.group().rstrip(b"=")
        for alphabet in (None, b"-_"):
            for start in range(4):
                chunk = run[start:]
                chunk = chunk[:len(chunk) // 4 * 4]
                try:
                    decoded = base64.b64decode(chunk, altchars=alphabet) if alphabet else \
                        base64.b64decode(chunk.replace(b"-", b"+").replace(b"_", b"/"))
                except (binascii.Error, ValueError):
                    continue
                out.append(decoded)
                inflated = _inflate(decoded)
                if inflated:
                    out.append(inflated)
    for m in _HEX.finditer(data):
        for start in (0, 1):
            run = m.group()[start:]
            out.append(bytes.fromhex(run[:len(run) // 2 * 2].decode()))
    return out


def _pieces(key: str) -> list[bytes]:
    raw = key.encode()
    return [raw[i:i + PIECE] for i in range(len(raw) - PIECE + 1)]


def exposures(data: bytes, key: str) -> list[str]:
    """What in `data` still holds `key` (or a 16-character piece of it), by decoding."""
    pieces = _pieces(key)
    found = []
    plain = _unescape(data)
    views = [("as written", plain)]
    views += [("decoded", _unescape(run)) for run in _decoded_runs(plain)]
    for how, view in views:
        for piece in pieces:
            if piece in view:
                at = view.index(piece)
                found.append(f"{how}: ...{view[max(0, at - 60):at + 60]!r}...")
                break
    return found


def run_folder_bytes(folder: Path) -> list[tuple[str, bytes]]:
    """Every file under `folder` as bytes, raw packs read record by record and SQLite files
    dumped row by row as well (deflate and overflow pages would hide text from a byte scan)."""
    from parquet_agent.store.blobs import RawStore

    out: list[tuple[str, bytes]] = []
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        out.append((str(path), path.read_bytes()))
        if path.suffix == ".sqlite":
            out.append((f"{path} (rows)", _sqlite_text(path)))
    for raw_dir in sorted({p.parent.parent for p in folder.rglob("raw/*.pack")}):
        raw = RawStore(raw_dir, writable=False)
        try:
            for name in raw.names():
                out.append((f"{raw_dir}/{name}", raw.read(name)))
        finally:
            raw.close()
    return out


def _sqlite_text(path: Path) -> bytes:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        rows = [repr(row) for t in tables for row in con.execute(f'SELECT * FROM "{t}"')]
    finally:
        con.close()
    return "\n".join(rows).encode("utf-8", "surrogatepass")


def leaks_in(folder: Path, key: str) -> list[str]:
    """Each file under `folder` (see `run_folder_bytes`) that exposes `key`, with where."""
    return [f"{name}: {found[0]}" for name, data in run_folder_bytes(folder)
            if (found := exposures(data, key))]
