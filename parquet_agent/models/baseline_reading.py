"""How the baseline reads questions and tool outputs: every assumption about the tools' JSON
shapes lives here, written defensively (a missing or renamed field yields nothing, never a
crash), so the policy in `baseline.py` never touches raw tool JSON.

Fields relied on (all optional; anything else is ignored):
- any tool: `{"error": {...}}` marks a failed call;
- `search_headers`: `results: [{file_stem, company, form_type, period, filing_date, cik}]`
  (also accepted: `rows`/`hits`/`items`);
- `sql`: `columns: [...]` + `rows: [[...], ...]` (rows as lists or as objects);
- `read_filing`: `file_stem`, `start`, `text` (plain read) or `windows: [{start, text}]`
  (pattern read).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_STOP = frozenset(
    """a an the of for in on at to by and or is are was were be been what which who whom whose
    how much many did does do had has have its it this that these those as with from per than
    then into over under between during their there give response question relying details
    shown based answer please provide using use your you year years fiscal fy amount total
    value number usd million millions billion billions dollars dollar percent percentage round
    rounded decimal places place calculate calculated report reported company companies
    statement statements according filing filings also all any can could would should will
    about after before other same each most more less least end ended ending inc corp
    corporation ltd llc plc holdings group""".split()
)
_NOT_NAMES = frozenset(
    """What Which Who How When Where Why Is Are Was Were Did Does Do Give Based Using Use
    According Please Provide Calculate Round Answer Assume If In For The Of By On At As Among
    Between From Compared Considering Response Question FY Q1 Q2 Q3 Q4 USD GAAP EPS EBITDA
    EBIT CAPEX ROA ROE YoY TTM Form Inc Corp Corporation Company Co Ltd LLC Annual Report
    Quarterly Statement Statements Cash Flow Flows Balance Sheet Income Net Total Has Have Here
    You We Our Among Are Was Were Answer Fixed Operating Adjusted Non Real Sales Gross Revenue
    Segment Segments Ratio Margin Free Days Average Change Growth Year Years Quarter Dated January
    February March April May June July August September October November December""".split()
)
# Financial acronyms that look like names but are metrics.
_ACRONYMS = frozenset(
    """M&A PP&E COGS DPO DSO DIO P&L D&A SG&A R&D FX ROA ROE ROIC ROCE EPS CAPEX GAAP CEO CFO US
    USA YOY NI FCF LTM TTM EBITDA EBIT OCF NOPAT WACC CAGR AR AP""".split()
)
_FORM = re.compile(r"\b(10-K|10-Q|8-K|20-F|40-F|6-K|S-1|DEF 14A)\b", re.IGNORECASE)
_YEAR = re.compile(r"(?<!\d)(?:FY\s?)?((?:19|20)\d{2})(?!\d)")
_CIK = re.compile(r"\bCIK\s*(?:number\s*)?(\d{1,10})\b", re.IGNORECASE)


@dataclass(frozen=True)
class QuestionTerms:
    text: str
    companies: tuple[str, ...]  # name variants to search for, best first
    years: tuple[str, ...]
    form_type: str | None
    cik: str | None
    phrases: tuple[str, ...]  # key terms to look for in a filing, most specific first
    stems: tuple[str, ...]  # lower-case stems for scoring sentences
    numeric: bool  # the answer is probably a number


def read_question(text: str) -> QuestionTerms:
    tokens = re.findall(r"[A-Za-z0-9][A-Za-z0-9&.\-']*", text)
    names = _names(text)
    name_words = {w.lower() for n in names for w in n.split()}
    years = tuple(dict.fromkeys(_YEAR.findall(text)))
    form = _FORM.search(text)
    form_type = form.group(1).upper() if form else None
    if form_type is None and re.search(r"\bQ[1-4]\b|quarter", text, re.IGNORECASE):
        form_type = "10-Q"
    elif form_type is None and re.search(r"\bFY|annual|fiscal year", text, re.IGNORECASE):
        form_type = "10-K"
    cik = _CIK.search(text)
    content: list[str | None] = []  # None: a word that separates bigrams
    for tok in tokens:
        low = tok.lower().strip(".'")
        low = re.sub(r"'s$", "", low)
        if (low in _STOP or low in name_words or _YEAR.fullmatch(tok) or len(low) < 3
                or _FORM.fullmatch(tok) or re.fullmatch(r"fy\d{2,4}|q[1-4]", low)):
            content.append(None)
            continue
        content.append(low)
    bigrams = []
    for a, b in zip(content, content[1:]):
        if a and b:
            bigrams.append(f"{a} {b}")
    unigrams = sorted({c for c in content if c}, key=lambda w: (-len(w), w))
    stems = tuple(dict.fromkeys(_stem(c) for c in content if c))
    phrases = tuple(dict.fromkeys([_stem_phrase(b) for b in bigrams] + [_stem(u) for u in unigrams]))
    numeric = bool(re.search(
        r"\bhow (much|many)\b|\b(amount|value|ratio|margin|revenues?|income|expenses?|costs?|"
        r"sales|capex|expenditures?|eps|dividends?|number|total|percent(age)?|cash|debt|assets|"
        r"liabilities|shares|employees|price)\b", text, re.IGNORECASE))
    return QuestionTerms(text, names, years, form_type, cik.group(1) if cik else None, phrases,
                         stems, numeric)


def _names(text: str) -> tuple[str, ...]:
    """Company-name candidates: runs of capitalised tokens (3M, Johnson & Johnson, Best Buy)."""
    runs: list[list[str]] = []
    current: list[str] = []
    for tok in re.findall(r"[A-Za-z0-9][A-Za-z0-9&.\-']*|&", text):
        clean = re.sub(r"'s$", "", tok).rstrip(".")
        capital = clean[:1].isupper() or (clean[:1].isdigit() and any(ch.isupper() for ch in clean))
        if tok == "&" or (current and clean.lower() in ("of", "and")):
            if current:
                current.append(tok)
            continue
        if capital and clean not in _NOT_NAMES and clean.upper() not in _ACRONYMS \
                and not _YEAR.fullmatch(clean) \
                and not re.fullmatch(r"FY\d+|Q[1-4]|\d+[A-Z]?-[A-Z]", clean) and not _FORM.fullmatch(clean):
            current.append(clean)
            continue
        if current:
            runs.append(current)
        current = []
    if current:
        runs.append(current)
    out: list[str] = []
    for run in runs:
        while run and run[-1].lower() in ("of", "and", "&"):
            run.pop()
        if run:
            out.append(" ".join(run))
    # A name in possessive or after "for/of/by/at" is most likely the company; then longer
    # names (more specific); then their first word as a fallback.
    def weight(n: str) -> tuple:
        cue = re.search(rf"(\b(for|of|by|at|did|does|has)\s+{re.escape(n)})|({re.escape(n)}'s)", text)
        return (0 if cue else 1, -len(n.split()), text.find(n))

    ordered = sorted(dict.fromkeys(out), key=weight)
    variants = list(ordered)
    for n in ordered:
        first = n.split()[0]
        if first not in variants and len(first) >= 3:
            variants.append(first)
    return tuple(variants)


def _stem(word: str) -> str:
    # Literal, case-insensitive substring search finds "expenditures" from "expenditure".
    for suffix in ("ies", "es", "s"):
        if len(word) > 5 and word.endswith(suffix) and not word.endswith("ss"):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def _stem_phrase(phrase: str) -> str:
    words = phrase.split()
    return " ".join(words[:-1] + [_stem(words[-1])])


# -- tool outputs ---------------------------------------------------------------------------


def parse_output(content: str) -> Any:
    try:
        return json.loads(content)
    except (ValueError, TypeError):
        return None


def is_error(data: Any) -> bool:
    return isinstance(data, dict) and "error" in data and not any(
        k in data for k in ("results", "rows", "text", "windows"))


@dataclass(frozen=True)
class Candidate:
    file_stem: str
    company: str = ""
    form_type: str = ""
    period: str = ""
    filing_date: str = ""
    head: str = ""  # header text when found by SQL


def header_candidates(data: Any) -> list[Candidate]:
    if not isinstance(data, dict):
        return []
    rows: list[Any] = next((data[k] for k in ("results", "rows", "hits", "items")
                            if isinstance(data.get(k), list)), [])
    out = []
    for r in rows:
        if isinstance(r, dict) and r.get("file_stem"):
            out.append(Candidate(str(r["file_stem"]), str(r.get("company") or ""),
                                 str(r.get("form_type") or ""), str(r.get("period") or ""),
                                 str(r.get("filing_date") or "")))
    return out


def sql_rows(data: Any) -> list[dict[str, Any]]:
    """SQL output as a list of {column: value}."""
    if not isinstance(data, dict):
        return []
    rows = data.get("rows")
    if not isinstance(rows, list):
        return []
    columns = data.get("columns") if isinstance(data.get("columns"), list) else None
    out = []
    for r in rows:
        if isinstance(r, dict):
            out.append(r)
        elif isinstance(r, list) and columns and len(r) == len(columns):
            out.append(dict(zip(columns, r)))
    return out


def sql_candidates(data: Any) -> list[Candidate]:
    return [Candidate(str(r["file_stem"]), head=str(r.get("head") or ""))
            for r in sql_rows(data) if r.get("file_stem")]


@dataclass(frozen=True)
class Passage:
    file_stem: str
    start: int  # offset of `text` in parsed_md
    text: str


def read_passages(data: Any, file_stem: str) -> list[Passage]:
    """Passages from a read_filing output, or from a scoped SQL excerpt (`start1`, `excerpt`)."""
    if not isinstance(data, dict):
        return []
    stem = str(data.get("file_stem") or file_stem)
    out = []
    if isinstance(data.get("windows"), list):
        for w in data["windows"]:
            if isinstance(w, dict) and isinstance(w.get("text"), str) and isinstance(w.get("start"), int):
                out.append(Passage(stem, w["start"], w["text"]))
    elif isinstance(data.get("text"), str) and isinstance(data.get("start"), int):
        out.append(Passage(stem, data["start"], data["text"]))
    for r in sql_rows(data):
        pos, start1, excerpt = r.get("pos"), r.get("start1"), r.get("excerpt")
        if isinstance(excerpt, str) and isinstance(start1, int) and isinstance(pos, int) and pos > 0:
            out.append(Passage(stem, start1 - 1, excerpt))
    return out
