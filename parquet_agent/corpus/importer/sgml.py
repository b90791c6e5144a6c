"""Complete EDGAR submission text files (`<accession>.txt`, SGML): the SEC header + the primary
document.

Contract: `is_sgml(head)` says whether the first bytes look like a complete submission;
`read_sgml(raw, source) -> Converted` keeps the SEC header verbatim (from `ACCESSION NUMBER:` to
`</SEC-HEADER>`), takes its facts (accession, form, period, filing date, the first filer's name
and CIK; SUBJECT COMPANY when there is no FILER), and converts the primary document: the first
`<DOCUMENT>` whose `<TYPE>` is the submission type, else the first document. An HTML primary
document goes through `html_to_markdown`; a plain-text one (pre-2001 filings) is kept as text.
Exhibits and XBRL attachments are not imported (a note counts them). Raises ValueError with the
reason when the file has no SEC header or no document.
"""

from __future__ import annotations

import re

from parquet_agent.corpus.importer.html import html_to_markdown, tidy_text
from parquet_agent.corpus.importer.records import Converted, Fact, normalize_cik, parse_date, put

_HEADER_RE = re.compile(r"<SEC-HEADER>(.*?)</SEC-HEADER>", re.S | re.I)
_DOC_RE = re.compile(r"<DOCUMENT>(.*?)</DOCUMENT>", re.S | re.I)
_TEXT_RE = re.compile(r"<TEXT>(.*?)(?:</TEXT>|\Z)", re.S | re.I)
_FIELD_RE = re.compile(r"^\s*([A-Z][A-Z0-9 \-/]+?):[ \t]*(.*?)\s*$", re.M)
_HTML_HINT = re.compile(r"<(html|body|table|div|p|font)\b", re.I)


_START_RE = re.compile(
    rb"^(<SEC-DOCUMENT>|<SEC-HEADER>|<IMS-HEADER>|-----BEGIN PRIVACY-ENHANCED MESSAGE-----)", re.M
)


def is_sgml(head: bytes) -> bool:
    """A complete submission opens with one of these lines within its first 2 KB."""
    return _START_RE.search(head[:2048]) is not None


def _header_fields(header: str) -> tuple[dict[str, str], dict[str, str]]:
    """Top-level fields, and the fields of the first FILER (or SUBJECT COMPANY) block."""
    top: dict[str, str] = {}
    company: dict[str, str] = {}
    section = None
    for m in _FIELD_RE.finditer(header):
        key, value = m.group(1).strip(), m.group(2).strip()
        if not value:
            if key in ("FILER", "SUBJECT COMPANY", "FILED BY", "REPORTING-OWNER", "ISSUER"):
                section = key
            continue
        if section is None:
            top.setdefault(key, value)
        elif section in ("FILER", "SUBJECT COMPANY") and (
            not company or company.get("_section") == section
        ):
            company.setdefault("_section", section)
            company.setdefault(key, value)
    return top, company


def _strip_wrappers(text: str) -> str:
    text = re.sub(r"^\s*<(XBRL|XML)>", "", text, flags=re.I)
    return re.sub(r"</(XBRL|XML)>\s*$", "", text, flags=re.I)


def read_sgml(raw: bytes, source: str) -> Converted:
    text = raw.decode("utf-8", errors="replace")
    hm = _HEADER_RE.search(text)
    if hm is None:
        raise ValueError("no <SEC-HEADER> block: not a complete EDGAR submission")
    header_raw = hm.group(1)
    start = header_raw.find("ACCESSION NUMBER:")
    header = header_raw[start if start >= 0 else 0 :].strip("\n")
    header = "\n".join(line.rstrip() for line in header.splitlines())
    top, company = _header_fields(header_raw)
    facts: dict[str, Fact] = {}
    src = "SGML header"
    put(facts, "accession_number", top.get("ACCESSION NUMBER"), src)
    put(facts, "form", top.get("CONFORMED SUBMISSION TYPE"), src)
    put(facts, "period", parse_date(top.get("CONFORMED PERIOD OF REPORT")), src)
    put(facts, "filing_date", parse_date(top.get("FILED AS OF DATE")), src)
    put(facts, "company", company.get("COMPANY CONFORMED NAME"), src)
    put(facts, "cik", normalize_cik(company.get("CENTRAL INDEX KEY")), src)

    documents = _DOC_RE.findall(text)
    if not documents:
        raise ValueError("SEC header found but no <DOCUMENT> in the submission")
    form = facts["form"].value if "form" in facts else None
    primary = documents[0]
    for doc in documents:
        tm = re.search(r"<TYPE>([^\n<]+)", doc, re.I)
        if form and tm and tm.group(1).strip().upper() == form.upper():
            primary = doc
            break
    notes = []
    if len(documents) > 1:
        notes.append(f"primary document imported; {len(documents) - 1} other document(s) of "
                     "the submission (exhibits, XBRL files) left out")
    body_m = _TEXT_RE.search(primary)
    body = _strip_wrappers(body_m.group(1) if body_m else primary)
    if re.match(r"\s*begin \d{3} ", body):
        raise ValueError("the primary document is uuencoded (PDF or binary): not supported")
    if _HTML_HINT.search(body[:20000]):
        doc = html_to_markdown(body)
        markdown = doc.markdown
        put(facts, "cik", normalize_cik(doc.dei.get("EntityCentralIndexKey")),
            "dei:EntityCentralIndexKey")
    else:
        markdown = tidy_text(body)
        notes.append("plain-text primary document kept as text (its tables are space-aligned)")
    return Converted(
        source=source,
        reader="sgml",
        source_format="sgml",
        body=markdown,
        facts=facts,
        notes=tuple(notes),
        header=header,
    )
