"""EDGAR-CORPUS item JSON (as written by edgar-crawler and published as EDGAR-CORPUS).

Contract: `is_edgar_corpus(obj)` says whether a parsed JSON object is one filing in that format
(a `cik` plus `item_*` or `section_*` keys); `read_edgar_corpus(obj, source) -> Converted` joins
the non-empty items in their order in the file, each starting a `##` heading with the item's own
first line, and takes the metadata from the JSON's own fields: `cik`, `company`, `filing_type`,
`filing_date`, `period_of_report`, and the accession number from `filing_html_index`,
`complete_text_filing_link`, `htm_filing_link` or `filename` (edgar-crawler names files
`<CIK>_<form>_<year>_<accession>`). EDGAR-CORPUS items have their tables stripped at extraction;
a note says so.
"""

from __future__ import annotations

from parquet_agent.corpus.importer.records import (
    Converted,
    Fact,
    find_accession,
    normalize_cik,
    parse_date,
    put,
)

_ITEM_PREFIXES = ("item_", "section_")


def is_edgar_corpus(obj: object) -> bool:
    return (
        isinstance(obj, dict)
        and "cik" in obj
        and any(isinstance(k, str) and k.startswith(_ITEM_PREFIXES) for k in obj)
    )


def read_edgar_corpus(obj: dict, source: str) -> Converted:
    sections = []
    for key, value in obj.items():
        if not key.startswith(_ITEM_PREFIXES) or not isinstance(value, str) or not value.strip():
            continue
        first, _, rest = value.strip().partition("\n")
        sections.append(f"## {first.strip()}\n\n{rest.strip()}".rstrip())
    if not sections:
        raise ValueError("EDGAR-CORPUS JSON with no non-empty item: nothing to import")
    facts: dict[str, Fact] = {}
    src = "EDGAR-CORPUS JSON fields"
    for link_key in ("filing_html_index", "complete_text_filing_link", "htm_filing_link"):
        put(facts, "accession_number", find_accession(obj.get(link_key)), f"{src} ({link_key})")
    put(facts, "accession_number", find_accession(obj.get("filename")), f"{src} (filename)")
    put(facts, "cik", normalize_cik(obj.get("cik")), src)
    put(facts, "company", obj.get("company"), src)
    put(facts, "form", obj.get("filing_type"), src)
    put(facts, "filing_date", parse_date(obj.get("filing_date")), src)
    put(facts, "period", parse_date(obj.get("period_of_report")), src)
    return Converted(
        source=source,
        reader="edgar_corpus_json",
        source_format="json",
        body="\n\n".join(sections) + "\n",
        facts=facts,
        notes=("EDGAR-CORPUS item text: tables were removed at extraction",),
    )
