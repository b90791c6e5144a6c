"""Page-marked text extracted from PDF filings (the FinanceBench layout), and its manifest.

Contract: `is_page_marked(head)` says whether a text file starts with a `<!-- page 1 -->` marker
line; `read_page_marked(raw, source, meta) -> Converted` keeps the text as it is (markers
included: they let evidence be located by page) and takes its metadata from `meta`, the row of a
FinanceBench `corpus_manifest.jsonl` that describes the file (matched by `doc_name` = the file's
stem), or notes that there is none. `load_financebench_manifest(path) -> {doc_name: row}` reads
that file; `is_financebench_manifest(first_row)` recognises it.

`page_spans(text) -> [(page, start, end)]` gives each page's character range in the text, the
same ranges the FinanceBench pack uses to map evidence pages to offsets.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from parquet_agent.corpus.headers import parse_header
from parquet_agent.corpus.importer.records import Converted, Fact, normalize_cik, parse_date, put

PAGE_MARKER = re.compile(r"^<!-- page (\d+) -->$", re.M)
_FORMS = {"10k": "10-K", "10q": "10-Q", "8k": "8-K", "10k_annualreport": "10-K"}
# a corpus manifest row describes a file (`file`, `md5`); question files also carry doc_name/cik
_MANIFEST_KEYS = {"doc_name", "file", "md5", "cik", "accession_number", "doc_type", "doc_period"}


def is_page_marked(head: bytes) -> bool:
    return head.lstrip(b"\xef\xbb\xbf").startswith(b"<!-- page 1 -->")


def is_financebench_manifest(first_row: object) -> bool:
    return isinstance(first_row, dict) and _MANIFEST_KEYS <= set(first_row)


def load_financebench_manifest(path: Path) -> dict[str, dict]:
    rows = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"line {n} is not JSON: {exc}") from exc
                rows[row["doc_name"]] = row
    return rows


def page_spans(text: str) -> list[tuple[int, int, int]]:
    marks = list(PAGE_MARKER.finditer(text))
    return [
        (int(m.group(1)), m.start(), marks[i + 1].start() if i + 1 < len(marks) else len(text))
        for i, m in enumerate(marks)
    ]


def read_page_marked(raw: bytes, source: str, meta: dict | None) -> Converted:
    text = raw.decode("utf-8")
    facts: dict[str, Fact] = {}
    notes = []
    if meta is None:
        notes.append("no metadata row describes this file (FinanceBench corpus_manifest.jsonl "
                     "matched by doc_name): issuer fields come only from the text")
    else:
        src = "FinanceBench corpus_manifest.jsonl"
        put(facts, "accession_number", meta.get("accession_number"),
            f"{src} (accession_source: {meta.get('accession_source')})")
        put(facts, "cik", normalize_cik(meta.get("cik")),
            f"{src} (cik_source: {meta.get('cik_source')})")
        # The registrant's own name from its cover page, not FinanceBench's short label
        # ("COSTCO" for Costco Wholesale Corporation; "Block" on Square, Inc.'s older 10-Ks):
        # search_headers must find a filing by its legal name.
        cover = parse_header(text).company
        put(facts, "company", cover, "the filing's cover page (parse_header)")
        if cover is None and meta.get("company"):
            put(facts, "company", meta.get("company"), f"{src} (short label)")
            notes.append("no company name on the cover page (an earnings release or a logo-only "
                         "cover): the header uses FinanceBench's short company label")
        doc_type = str(meta.get("doc_type") or "")
        if doc_type in _FORMS:
            put(facts, "form", _FORMS[doc_type], f"{src} (doc_type {doc_type})")
        else:
            notes.append(f"doc_type {doc_type!r} is not an SEC form type (an earnings release "
                         "or similar): form type left out of the header")
        put(facts, "filing_date", parse_date(meta.get("filing_date")), src)
        if "filing_date" not in facts and meta.get("year"):
            how = meta.get("year_month_source")
            put(facts, "year", str(meta["year"]), f"{src} (year_month_source: {how})")
            if meta.get("month"):
                put(facts, "month", str(meta["month"]), src)
        if meta.get("doc_period"):
            notes.append(f"fiscal period {meta['doc_period']} (FinanceBench doc_period); no "
                         "period-of-report date in the metadata")
    return Converted(
        source=source,
        reader="pdf_text",
        source_format="pdf",
        body=text if text.endswith("\n") else text + "\n",
        facts=facts,
        notes=tuple(notes),
        has_ocr=bool(meta and meta.get("has_ocr")),
    )
