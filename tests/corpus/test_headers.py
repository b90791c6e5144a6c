"""parse_header on real SEC filings (committed snippets, FinanceBench when present) and on
the shapes generated corpora use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from parquet_agent.corpus.headers import (
    IssuerHeader,
    normalize_cik,
    normalize_company,
    parse_date,
    parse_header,
)
from tests.realdata import needs_realdata, realdata

FIXTURES = Path(__file__).parent / "fixtures" / "real"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())
REALDATA = realdata()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_filing_snippets(name):
    got = parse_header((FIXTURES / name).read_text(encoding="utf-8"))
    want = EXPECTED[name]
    if "company" in want:
        assert normalize_company(got.company) == normalize_company(want["company"]), got
    if "cik" in want:
        assert got.cik == normalize_cik(want["cik"])
    if "form_type" in want:
        assert got.form_type == want["form_type"]
    if "period" in want:
        assert got.period == want["period"]
    if "filing_date" in want:
        assert got.filing_date == want["filing_date"]


def test_snippets_keep_the_registrant_spelling():
    aapl = parse_header((FIXTURES / "ixbrl-md-aapl-10-k-2024-11-01.md").read_text())
    assert aapl == IssuerHeader("Apple Inc.", "10-K", "2024-09-28", None, None)
    # 8-K cover printing the date above its label, name inside a Markdown table
    sophiris = parse_header((FIXTURES / "html-md-0001437749-16-028287.md").read_text())
    assert (sophiris.company, sophiris.period) == ("Sophiris Bio Inc.", "2016-03-23")
    # a 2001 20-F flattened onto one line, fields separated by rules
    aegon = parse_header((FIXTURES / "html-md-0000928385-01-500187.md").read_text())
    assert (aegon.company, aegon.form_type) == ("AEGON N.V.", "20-F")


@needs_realdata("financebench/corpus_manifest.jsonl")
def test_financebench_pdf_text_covers():
    """Page-marked PDF text (not committed: CC-BY-NC). Every 10-K/10-Q/8-K gives its form
    and period; the registrant name is found unless the PDF shows it only as a logo."""
    rows = [json.loads(x) for x in (REALDATA / "financebench/corpus_manifest.jsonl").read_text().splitlines()]
    filings = [r for r in rows if r["doc_type"] in ("10k", "10q", "8k")]
    assert len(filings) > 100
    named = 0
    for r in filings:
        h = parse_header((REALDATA / r["file"]).read_text(encoding="utf-8"))
        assert h.form_type == {"10k": "10-K", "10q": "10-Q", "8k": "8-K"}[r["doc_type"]], r["doc_name"]
        assert h.period is not None, r["doc_name"]
        named += h.company is not None
    logo_only = sum(r["doc_name"].startswith("COCACOLA") for r in filings)
    assert named == len(filings) - logo_only
    costco = parse_header((REALDATA / "financebench/docs_md/COSTCO_2022_10K.md").read_text())
    assert costco == IssuerHeader("Costco Wholesale Corporation", "10-K", "2022-08-28", None, None)


def test_labelled_fields_in_tables_and_bold():
    md = (
        "# Acme Widgets Inc. — Annual Report\n\n"
        "| Field | Value |\n| --- | --- |\n"
        "| Registrant | Acme Widgets Inc. |\n| Central Index Key | 0000012345 |\n"
        "| Form type | 10-K |\n| Period of report | 2024-12-31 |\n| Filing date | March 3, 2025 |\n"
    )
    assert parse_header(md) == IssuerHeader("Acme Widgets Inc.", "10-K", "2024-12-31", "2025-03-03", "12345")
    bold = "**Company:** Northwind Mining Co\n**CIK:** 987\n**Form:** 8-K\n**Filed:** 01/15/2025\n"
    assert parse_header(bold) == IssuerHeader("Northwind Mining Co", "8-K", None, "2025-01-15", "987")


def test_generated_style_cover_page():
    md = (
        "UNITED STATES SECURITIES AND EXCHANGE COMMISSION\n\nFORM 10-Q\n\n"
        "QUARTERLY REPORT PURSUANT TO SECTION 13 OR 15(d)\n\n"
        "For the quarterly period ended June 30, 2025\n\n"
        "Commission File Number: 001-34567\n\n"
        "NORTHWIND MINING COMPANY\n(Exact name of registrant as specified in its charter)\n\n"
        "Nevada\n(State of incorporation)\n\nCentral Index Key: 0001234567\n"
    )
    h = parse_header(md)
    assert h == IssuerHeader("NORTHWIND MINING COMPANY", "10-Q", "2025-06-30", None, "1234567")


def test_no_header_and_odd_input():
    assert parse_header("") == IssuerHeader()
    assert parse_header(None) == IssuerHeader()
    assert parse_header("Exhibit 99.1\n\nPress release: revenue rose.") == IssuerHeader()
    assert parse_header("(Exact name of registrant as specified in its charter)") .company is None
    assert parse_header("x" * 300_000).company is None


@pytest.mark.parametrize(
    "text, iso",
    [
        ("September 28, 2024", "2024-09-28"), ("Sept. 28, 2024", "2024-09-28"),
        ("28 September 2024", "2024-09-28"), ("2024-09-28", "2024-09-28"),
        ("09/28/2024", "2024-09-28"), ("20240928", "2024-09-28"), ("DECEMBER 31,\n2024", "2024-12-31"),
        ("February 30, 2024", None), ("no date", None), (None, None),
    ],
)
def test_parse_date(text, iso):
    assert parse_date(text) == iso


def test_normalizers():
    assert normalize_company("Apple Inc.") == normalize_company("APPLE INC") == "apple"
    assert normalize_company("The Procter & Gamble Company") == "procter and gamble"
    assert normalize_company("1895 Bancorp of Wisconsin, Inc. /MD/") == "1895 bancorp of wisconsin"
    assert normalize_company(None) is None and normalize_company("Inc.") is None
    assert normalize_cik("0000320193") == normalize_cik(320193) == "320193"
    assert normalize_cik("0000000000") is None and normalize_cik("12345678901") is None


def test_ocr_mangled_label_and_xbrl_preamble():
    ocr = (
        "## FORM 8-K\n\nDate of Report (Date of earliest event reported): April 8, 2025\n\n"
        "### ABARTEX HOLDINGS INC\n\n*(Exact narnc of rcglstrant as spcclflcd ln lts charter)*\n\n"
        "**Commission File Number: 001-25101**  \n**91-8416565** (IRS Employer Identification No.)\n"
    )
    assert parse_header(ocr) == IssuerHeader("ABARTEX HOLDINGS INC", "8-K", "2025-04-08", None, None)
    # what a converter leaves of an iXBRL hidden header (as in the real Apple 10-K above)
    preamble = "aapl-20240928\n\nfalse2024FY0000320193P1YP1Yhttp://fasb.org/us-gaap/2024#X\n\nFORM 10-K\n"
    assert parse_header(preamble).cik == "320193"
    assert parse_header("false--12-31FY20240001718406http://fasb.org/x\n").cik == "1718406"
    # a file number line after the label is never taken for the name
    no_name = "FORM 10-K\n\nCommission file number 001-25101\n\n91-8416565 (IRS Employer Identification No.)\n"
    assert parse_header(no_name).company is None
