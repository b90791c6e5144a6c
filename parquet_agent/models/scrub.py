"""One credential scrub: every spelling of a known key, replaced wherever bytes leave us.

`Scrubber(secrets)` knows the run's API keys (values of 8 characters or more: shorter ones would
redact ordinary words). `scrubber.bytes(data)` / `scrubber.text(s)` replace each occurrence of
a key by `REDACTED`, in every spelling below; `scrubber.value(obj)` does it to every string of a
parsed reply (dataclasses, dicts, lists, tuples). The recording transport applies it to each
request body before it is sent and recorded (so a key never reaches another provider), to each
response body before the SDK parses or it is written (so nothing derived from a reply holds
it), to headers, URLs and transport errors; the adapters apply it again to the reply they
assembled from the parsed pieces.

Spellings matched (any mix of them, character by character, unless said):

- plain UTF-8;
- JSON escapes at any nesting depth: any subset of the key's characters written `\\uXXXX`
  (either hex case) behind any run of backslashes or `\\u005c` (a JSON string holding JSON:
  tool-call arguments, a judge's JSON verdict), and `/` as `\\/`;
- percent-encoding (`%XX`, either case, also double-encoded `%25XX`) and HTML numeric
  character references (`&#65;`, `&#x41;`);
- a key split across adjacent JSON strings: between any two of its characters, up to 12
  quote-delimited segments of at most 48 bytes each (`..."}, {"type": "text", "text": "...`,
  the glue between two Anthropic text blocks or two Gemini parts). The glue is kept and each
  piece of the key is replaced, so the JSON stays valid and the assembled text holds no key;
- base64 (standard and URL-safe alphabet) at each of the 3 byte alignments: the characters
  that depend only on the key's bytes are replaced (what is left decodes to at most two bytes
  of the key at each end), themselves in any of the per-character spellings above;
- hex (lower and upper case).

Not matched (documented in docs/architecture.md): a key split into pieces that are not
adjacent JSON strings (two separate replies, a table cell and a column name), base64 of a
key split across strings, encodings applied on top of base64 or hex other than the per-character
ones, compression, encryption, and any transformation the model invents (reversed, spelled
out, ROT13). The cost is one regex pass per key over the bytes (see docs/benchmarks.md).
"""

from __future__ import annotations

import base64
import dataclasses
import re
from collections.abc import Iterable
from typing import Any

REDACTED = "[REDACTED-CREDENTIAL]"
MIN_SECRET_CHARS = 8
# The glue between two JSON strings (captured): a closing quote, punctuation and whitespace
# with up to 6 short quoted names in it (`"type"`, `"text"`), and an opening quote.
_PUNCT = rb'(?:[\s,:{}\[\]]|\\+[nrt])*'  # whitespace also JSON-escaped (nested JSON)
_GAP = (rb'(\\*"' + _PUNCT + rb'(?:\\*"[\w .-]{0,48}\\*"' + _PUNCT + rb'){0,6}\\*")?')
_HEX = b"0123456789abcdef"


def _hex_class(digit: int) -> bytes:
    ch = _HEX[digit:digit + 1]
    return b"[" + ch + ch.upper() + b"]" if ch.isalpha() else ch


def _hex_pattern(value: int, width: int) -> bytes:
    digits = f"{value:0{width}x}"
    return b"".join(_hex_class(int(d, 16)) for d in digits)


def _char(ch: str) -> bytes:
    """Every spelling of one character: plain, JSON-escaped at any depth, percent, HTML."""
    code = ord(ch)
    options = [re.escape(ch.encode("utf-8"))]
    if code < 0x10000:
        # backslashes, each possibly itself escaped as \u005c, then the escape: every
        # branch starts with a literal so the regex engine can skip to candidate bytes
        options.append(rb"\\(?:u005[cC])?(?:\\(?:u005[cC])?)*u" + _hex_pattern(code, 4))
    if ch == "/":
        options.append(rb"\\\\*/")
    if code < 0x80:
        options.append(b"%(?:25)*" + _hex_pattern(code, 2))  # %73, double-encoded %2573
    options.append(b"&#(?:0*" + str(code).encode() + b"|[xX]0*" + _hex_pattern(code, 1) + b");")
    return b"(?:" + b"|".join(options) + b")"


def _base64_cores(secret: bytes) -> list[str]:
    """The base64 characters determined by `secret` alone, at each of the 3 alignments."""
    cores = []
    n = len(secret)
    for k in range(3):
        encoded = base64.b64encode(b"\0" * k + secret + b"\0\0").decode("ascii")
        start = -(-8 * k // 6)
        end = (8 * (k + n)) // 6
        core = encoded[start:end]
        cores.append(core)
        cores.append(core.translate(str.maketrans("+/", "-_")))
    return sorted({c for c in cores if len(c) >= MIN_SECRET_CHARS})


def _spelled(text: str, glue: bool) -> bytes:
    chars = [_char(ch) for ch in text]
    return (_GAP if glue else b"").join(chars)


def _encoded(text: str) -> bytes:
    """A base64 or hex spelling as encoders write it on: plain, `/` JSON-escaped, `+` and `/`
    percent-encoded (full per-character spellings here cost 4x the whole scrub)."""
    out = []
    for ch in text:
        if ch == "/":
            out.append(rb"(?:/|\\+/|%(?:25)*2[fF])")
        elif ch == "+":
            out.append(rb"(?:\+|%(?:25)*2[bB])")
        else:
            out.append(re.escape(ch.encode("ascii")))
    return b"".join(out)


class Scrubber:
    """Replaces every spelling of each secret (see the module docstring) by `REDACTED`."""

    def __init__(self, secrets: Iterable[str] = ()):
        self.secrets = tuple(sorted({s for s in secrets if s and len(s) >= MIN_SECRET_CHARS},
                                    key=lambda s: (-len(s), s)))
        self._split = tuple(re.compile(_spelled(s, glue=True)) for s in self.secrets)
        fixed: list[bytes] = []
        for s in self.secrets:
            raw = s.encode("utf-8")
            fixed += [_encoded(core) for core in _base64_cores(raw)]
            fixed += [re.escape(raw.hex().encode()), re.escape(raw.hex().upper().encode())]
        self._fixed = re.compile(b"|".join(fixed)) if fixed else None

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def bytes(self, data: bytes) -> bytes:
        """`data` with every spelling of every secret replaced."""
        if not self.secrets:
            return data
        for pattern in self._split:
            data = pattern.sub(_keep_glue, data)
        assert self._fixed is not None
        return self._fixed.sub(REDACTED.encode(), data)

    def text(self, text: str) -> str:
        """`text` with every spelling of every secret replaced."""
        if not self.secrets:
            return text
        data = text.encode("utf-8", "surrogatepass")
        clean = self.bytes(data)
        return text if clean == data else clean.decode("utf-8", "surrogatepass")

    def value(self, obj: Any) -> Any:
        """`obj` with `text` applied to every string inside it (frozen dataclasses, dicts,
        lists, tuples are rebuilt; an unchanged object is returned as is)."""
        if not self.secrets:
            return obj
        return _scrub_value(self, obj, 0)


def _keep_glue(match: re.Match[bytes]) -> bytes:
    """The match with each piece of the key replaced and the glue between pieces kept."""
    out: list[bytes] = []
    at = match.start()
    for group in range(1, (match.re.groups or 0) + 1):
        start, end = match.span(group)
        if start < 0 or start == end:
            continue
        if start > at:
            out.append(REDACTED.encode())
        out.append(match.group(group))
        at = end
    if match.end() > at:
        out.append(REDACTED.encode())
    return b"".join(out)


_MAX_DEPTH = 64  # replies nest shallowly; deeper structures are left to the byte-level scrub


def _scrub_value(scrubber: Scrubber, obj: Any, depth: int) -> Any:
    if isinstance(obj, str):
        return scrubber.text(obj)
    if depth > _MAX_DEPTH:
        return obj
    if isinstance(obj, dict):
        items = {k: _scrub_value(scrubber, v, depth + 1) for k, v in obj.items()}
        return obj if all(items[k] is v for k, v in obj.items()) else items
    if isinstance(obj, (list, tuple)):
        parts = [_scrub_value(scrubber, v, depth + 1) for v in obj]
        if all(a is b for a, b in zip(parts, obj)):
            return obj
        if isinstance(obj, list):
            return parts
        return type(obj)(*parts) if hasattr(obj, "_fields") else tuple(parts)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {}
        for f in dataclasses.fields(obj):
            if not f.init:
                continue
            old = getattr(obj, f.name)
            new = _scrub_value(scrubber, old, depth + 1)
            if new is not old:
                changes[f.name] = new
        return dataclasses.replace(obj, **changes) if changes else obj
    return obj
