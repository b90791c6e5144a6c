"""Records the importer passes between its readers and its driver, and the metadata helpers.

A reader (one module per source format) turns one file into a `Converted`: the filing's body as
Markdown plus the metadata `Fact`s it found, each with where it came from. The driver resolves
those facts into the corpus columns (`file_stem`, `accession`, `year`, `month`), applying the
documented fallbacks and recording a note for each (`resolve`), and prepends an SEC-style header
block (`header_block`) so that the issuer fields live in `parsed_md` like in the reference corpus,
whose rows start with the SEC header.

Metadata keys: `accession_number`, `cik`, `company`, `form`, `period` (ISO date), `filing_date`
(ISO date); a metadata file that states only a year and month gives `year`/`month`. A fact is only ever taken from the filing or from a metadata file that describes it
(never inferred from other text); file-name facts are allowed only as documented fallbacks and
always carry a note.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date

ACCESSION_RE = re.compile(r"(?<!\d)(\d{10})-(\d{2})-(\d{6})(?!\d)")
_ACCESSION_COMPACT_RE = re.compile(r"(?<!\d)(\d{10})(\d{2})(\d{6})(?!\d)")
META_KEYS = ("accession_number", "cik", "company", "form", "period", "filing_date")

_MONTHS = {
    m: i
    for i, names in enumerate(
        [
            ("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"),
            ("may",), ("jun", "june"), ("jul", "july"), ("aug", "august"),
            ("sep", "sept", "september"), ("oct", "october"), ("nov", "november"),
            ("dec", "december"),
        ],
        start=1,
    )
    for m in names
}


@dataclass(frozen=True)
class Fact:
    value: str
    source: str  # where the value was read, e.g. "SGML header", "dei:EntityCentralIndexKey"


@dataclass(frozen=True)
class Converted:
    """One source file read by its format reader."""

    source: str  # path relative to the import root
    reader: str  # sgml | html | ixbrl | edgar_corpus_json | pdf_text
    source_format: str  # the corpus column value
    body: str  # Markdown of the filing itself
    facts: dict[str, Fact] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    header: str | None = None  # the filing's own SEC header text, when it has one
    has_ocr: bool = False


@dataclass(frozen=True)
class Skipped:
    source: str
    reason: str


def parse_date(text: str | None) -> str | None:
    """An ISO date from the forms filings use (`2024-12-31`, `20241231`, `December 31, 2024`,
    `31 December 2024`, `12/31/2024`); None when `text` is not one of them."""
    if not text:
        return None
    s = re.sub(r"\s+", " ", text.strip().replace(",", " ").replace(".", " ")).strip().lower()
    m = re.fullmatch(r"(\d{4})-?(\d{2})-?(\d{2})", s.replace(" ", ""))
    if m:
        y, mo, d = (int(x) for x in m.groups())
    elif m := re.fullmatch(r"([a-z]+) (\d{1,2}) (\d{4})", s):
        y, mo, d = int(m[3]), _MONTHS.get(m[1], 0), int(m[2])
    elif m := re.fullmatch(r"(\d{1,2}) ([a-z]+) (\d{4})", s):
        y, mo, d = int(m[3]), _MONTHS.get(m[2], 0), int(m[1])
    elif m := re.fullmatch(r"(\d{1,2})/(\d{1,2})/(\d{4})", s):
        y, mo, d = int(m[3]), int(m[1]), int(m[2])
    else:
        return None
    try:
        return date(y, mo, d).isoformat()
    except ValueError:
        return None


def find_accession(text: str | None) -> str | None:
    """The accession number in a name or URL (`0001000180-10-000008`, or the compact 18-digit
    form EDGAR uses in folder names), normalised with dashes."""
    if not text:
        return None
    m = ACCESSION_RE.search(text) or _ACCESSION_COMPACT_RE.search(text)
    return "-".join(m.groups()) if m else None


# Crawler namings that carry the CIK, documented by their tools (docs/real-filings.md):
_CIK_NAMINGS = (
    # edgar-crawler and EDGAR-CORPUS: `<CIK>_<FORM>_<YEAR>_<ACCESSION>.<ext>`
    (re.compile(r"(?:^|/)(\d{1,10})_[A-Za-z0-9-]+_\d{4}_\d{10}-\d{2}-\d{6}(?:\.\w+)?$"),
     "edgar-crawler file name <CIK>_<FORM>_<YEAR>_<ACCESSION>"),
    # EDGAR's own archive layout: `.../edgar/data/<CIK>/<accession, 18 digits>/<file>`
    (re.compile(r"(?:^|/)data/(\d{1,10})/\d{18}/[^/]+$"),
     "EDGAR archive path data/<CIK>/<ACCESSION>/"),
    # sec-edgar-downloader: `sec-edgar-filings/<CIK or ticker>/<FORM>/<ACCESSION>/<file>`
    (re.compile(r"(?:^|/)sec-edgar-filings/(\d{1,10})/[^/]+/\d{10}-\d{2}-\d{6}/[^/]+$"),
     "sec-edgar-downloader path sec-edgar-filings/<CIK>/<FORM>/<ACCESSION>/"),
)


def cik_from_name(path: str) -> tuple[str, str] | None:
    """(CIK, naming) when `path` follows a crawler naming that carries the CIK. Never from an
    accession number's prefix: that is the filer agent's CIK as often as the company's."""
    posix = path.replace("\\", "/")
    for pattern, naming in _CIK_NAMINGS:
        m = pattern.search(posix)
        if m and (cik := normalize_cik(m.group(1))):
            return cik, naming
    return None


def normalize_cik(value: str | int | None) -> str | None:
    digits = re.sub(r"\D", "", str(value or ""))
    return digits.zfill(10) if digits and int(digits) > 0 else None


def put(facts: dict[str, Fact], key: str, value: str | None, source: str) -> None:
    """Record a fact unless it is empty or one was already found (readers add facts from the
    most to the least authoritative source)."""
    if value is not None and str(value).strip() and key not in facts:
        facts[key] = Fact(str(value).strip(), source)


def header_block(facts: dict[str, Fact]) -> str:
    """An SEC-header-style block with the facts we have, in EDGAR's field names and formats
    (dates as YYYYMMDD); fields we do not have are left out, never filled in."""
    lines = []
    for label, key in (
        ("ACCESSION NUMBER", "accession_number"),
        ("CONFORMED SUBMISSION TYPE", "form"),
        ("CONFORMED PERIOD OF REPORT", "period"),
        ("FILED AS OF DATE", "filing_date"),
        ("COMPANY CONFORMED NAME", "company"),
        ("CENTRAL INDEX KEY", "cik"),
    ):
        fact = facts.get(key)
        if fact is None:
            continue
        value = fact.value.replace("-", "") if key in ("period", "filing_date") else fact.value
        lines.append(f"{label}:\t\t{value}")
    return "\n".join(lines)


@dataclass(frozen=True)
class Resolved:
    """The corpus columns for one filing and the notes on how they were found."""

    file_stem: str
    accession: str | None  # CIK, 10 digits
    year: int | None
    month: int | None
    notes: tuple[str, ...]


def resolve(conv: Converted, doc_name: str) -> Resolved:
    """Apply the documented fallbacks (docs/real-filings.md) to a reader's facts."""
    facts, notes = conv.facts, list(conv.notes)
    acc = facts.get("accession_number")
    if acc is not None:
        file_stem = acc.value
        if acc.source == "file name":
            notes.append("accession number taken from the file name (the filing states none)")
    else:
        file_stem = doc_name
        notes.append(f"no accession number in the filing's metadata: file_stem falls back to the "
                     f"document name {doc_name!r}")
    cik = facts.get("cik")
    if cik is None:
        notes.append("no CIK in the filing's metadata: accession (CIK) column left null")
    elif cik.source.startswith("file name"):
        notes.append(f"CIK taken from the {cik.source[len('file name ('):-1]} (the filing "
                     "states none)")
    year = month = None
    filed = facts.get("filing_date")
    if filed is not None:
        year, month = int(filed.value[:4]), int(filed.value[5:7])
        if filed.source == "file name":
            notes.append("filing date taken from the date in the file name")
    elif "year" in facts:  # a metadata file that states year/month but no filing date
        year = int(facts["year"].value)
        month = int(facts["month"].value) if "month" in facts else None
        notes.append(f"no filing date: year{'/month' if month else ''} from "
                     f"{facts['year'].source}" + ("" if month else "; month left null"))
    elif acc is not None:
        year = 1900 + int(acc.value[11:13])
        year += 100 if year < 1950 else 0
        notes.append("no filing date: year taken from the accession number (assigned in the "
                     "filing year); month left null")
    else:
        notes.append("no filing date and no accession number: year and month left null")
    return Resolved(file_stem, cik.value if cik else None, year, month, tuple(notes))
