"""Importer of real EDGAR filings into a tool-ready corpus (`parquet-agent corpus import`).

One module per source format (`sgml`, `html_filing` over `html`, `edgar_corpus`, `pdf_text`),
shared records and metadata rules in `records`, and the driver in `driver`. See
docs/real-filings.md for the formats, the metadata sources and the documented fallbacks.
"""

from parquet_agent.corpus.importer.driver import ImportedFile, ImportResult, import_corpus

__all__ = ["ImportResult", "ImportedFile", "import_corpus"]
