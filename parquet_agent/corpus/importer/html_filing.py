"""One HTML primary document as filed (raw 8-K HTML, inline-XBRL 10-K/10-Q, old HTML filings).

Contract: `read_html_filing(raw, source, crawler_row) -> Converted`. The body is
`html_to_markdown(raw)`. Metadata, most authoritative first:
1. the document's own iXBRL `dei:` facts (CIK, registrant name, document type, period end);
2. `crawler_row`, the edgar-crawler metadata CSV row that names this file (`filename` column):
   CIK, company, form, filing date, period of report, accession (from the `html_index` URL);
3. documented fallbacks, each with a note: an accession number in the file name
   (`parity_gate/10-K/0000950153-99-001234.html`, edgar-crawler's `<CIK>_<form>_<year>_<acc>`),
   the CIK in a crawler naming (`records.cik_from_name`: edgar-crawler's file name, EDGAR's
   `data/<CIK>/<accession>/` path, sec-edgar-downloader's folders; never an accession prefix),
   and a filing date in the file name (`aapl-10-k-2024-11-01.html`).

`load_crawler_metadata(path) -> {filename: row}` reads edgar-crawler's metadata CSV;
`is_crawler_metadata(header)` recognises its header row.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path, PurePosixPath

from parquet_agent.corpus.importer.html import html_to_markdown
from parquet_agent.corpus.importer.records import (
    Converted,
    Fact,
    cik_from_name,
    find_accession,
    normalize_cik,
    parse_date,
    put,
)

_CRAWLER_COLUMNS = {"CIK", "Company", "Type", "Filing Date", "filename"}
_NAME_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")


def is_crawler_metadata(header: list[str]) -> bool:
    return _CRAWLER_COLUMNS <= set(header)


def load_crawler_metadata(path: Path) -> dict[str, dict]:
    with open(path, encoding="utf-8", newline="") as f:
        return {row["filename"]: row for row in csv.DictReader(f) if row.get("filename")}


def read_html_filing(raw: bytes, source: str, crawler_row: dict | None) -> Converted:
    doc = html_to_markdown(raw)
    if not doc.markdown.strip():
        raise ValueError("the HTML has no visible text")
    facts: dict[str, Fact] = {}
    dei = doc.dei
    put(facts, "cik", normalize_cik(dei.get("EntityCentralIndexKey")), "dei:EntityCentralIndexKey")
    put(facts, "company", dei.get("EntityRegistrantName"), "dei:EntityRegistrantName")
    put(facts, "form", dei.get("DocumentType"), "dei:DocumentType")
    put(facts, "period", parse_date(dei.get("DocumentPeriodEndDate")), "dei:DocumentPeriodEndDate")
    if crawler_row is not None:
        src = "edgar-crawler metadata CSV"
        put(facts, "accession_number", find_accession(crawler_row.get("html_index")), src)
        put(facts, "cik", normalize_cik(crawler_row.get("CIK")), src)
        put(facts, "company", crawler_row.get("Company"), src)
        put(facts, "form", crawler_row.get("Type"), src)
        put(facts, "filing_date", parse_date(crawler_row.get("Filing Date")), src)
        put(facts, "period", parse_date(crawler_row.get("Period of Report")), src)
    name = PurePosixPath(source).name
    put(facts, "accession_number", find_accession(name), "file name")
    if (named := cik_from_name(source)) is not None:
        put(facts, "cik", named[0], f"file name ({named[1]})")
    if "filing_date" not in facts and (m := _NAME_DATE.search(name)):
        put(facts, "filing_date", parse_date(m.group(0)), "file name")
    notes = []
    if dei:
        notes.append(f"inline XBRL: hidden iXBRL header dropped; {len(dei)} dei facts read")
    return Converted(
        source=source,
        reader="ixbrl" if dei else "html",
        source_format="xbrl" if dei else "html",
        body=doc.markdown,
        facts=facts,
        notes=tuple(notes),
    )
