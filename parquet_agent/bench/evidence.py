"""Locate a benchmark's evidence text inside a filing's `parsed_md`, on normalized text.

Contract: `locate(evidence_text, markdown, page_span) -> Located` finds where a quote taken from
another extraction of the same document lies in `markdown`, and returns character offsets into
`markdown` itself, so that `markdown[start:end]` is the contract's `quote`.

Matching is on normalized text: letters and digits only, lower-cased (whitespace, punctuation,
ligature spaces and line breaks differ between PDF extractions and must not matter). In order:
1. `exact`: the whole normalized evidence on its page (`page_span`);
2. `exact_elsewhere`: the whole of it anywhere in the document (a page number off by one);
3. `prefix` / `suffix`: the longest prefix or suffix (at least `MIN_PARTIAL` normalized
   characters) found on the page; `coverage` says which share of the evidence it covers;
4. `page`: nothing matched; the whole page is the evidence (FinanceBench's gold unit is a page);
5. `missing`: no page either.
Every result is verified before it is returned: the normalized `markdown[start:end]` must equal
the normalized evidence (or the matched prefix/suffix); `verified` records that check.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MIN_PARTIAL = 40
_ALNUM_RUN = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Located:
    match: str  # exact | exact_elsewhere | prefix | suffix | page | missing
    start: int | None
    end: int | None
    coverage: float | None  # share of the normalized evidence matched (1.0 for exact)
    verified: bool


def normalize(text: str) -> str:
    return "".join(m.group(0) for m in _ALNUM_RUN.finditer(text)).lower()


def normalize_with_map(text: str, offset: int = 0) -> tuple[str, list[int]]:
    """The normalized text and, for each of its characters, the offset of the source character
    it came from (plus `offset`)."""
    parts: list[str] = []
    where: list[int] = []
    for m in _ALNUM_RUN.finditer(text):
        run, low = m.group(0), m.group(0).lower()
        base = m.start() + offset
        if len(low) == len(run):
            parts.append(low)
            where.extend(range(base, base + len(run)))
        else:  # a character whose lower case is longer (rare): map it char by char
            for i, ch in enumerate(run):
                lc = ch.lower()
                parts.append(lc)
                where.extend([base + i] * len(lc))
    return "".join(parts), where


def _longest(needle: str, hay: str, *, suffix: bool) -> int:
    """Length of the longest prefix (or suffix) of `needle` found in `hay` (binary search: if a
    prefix is found, every shorter one is too)."""
    lo, hi = 0, len(needle)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        part = needle[-mid:] if suffix else needle[:mid]
        if part in hay:
            lo = mid
        else:
            hi = mid - 1
    return lo


def locate(evidence_text: str, markdown: str, page_span: tuple[int, int] | None) -> Located:
    needle = normalize(evidence_text)
    if not needle:
        return Located("missing", None, None, None, False)

    def found(norm: str, where: list[int], i: int, n: int, match: str, cov: float) -> Located:
        start, end = where[i], where[i + n - 1] + 1
        ok = normalize(markdown[start:end]) == norm[i : i + n]
        return Located(match, start, end, cov, ok)

    if page_span is not None:
        page, where = normalize_with_map(markdown[page_span[0] : page_span[1]], page_span[0])
        i = page.find(needle)
        if i >= 0:
            return found(page, where, i, len(needle), "exact", 1.0)
    doc, doc_where = normalize_with_map(markdown)
    i = doc.find(needle)
    if i >= 0:
        return found(doc, doc_where, i, len(needle), "exact_elsewhere", 1.0)
    if page_span is None:
        return Located("missing", None, None, None, False)
    pre = _longest(needle, page, suffix=False)
    suf = _longest(needle, page, suffix=True)
    if max(pre, suf) >= MIN_PARTIAL:
        if pre >= suf:
            return found(page, where, page.find(needle[:pre]), pre, "prefix", pre / len(needle))
        return found(page, where, page.find(needle[-suf:]), suf, "suffix", suf / len(needle))
    return Located("page", page_span[0], page_span[1], None, True)
