"""HTML → Markdown for filings: SEC table clean-up, hidden content, metadata helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

from parquet_agent.corpus.importer.html import html_to_markdown
from parquet_agent.corpus.importer.records import find_accession, header_block, parse_date, Fact

EXCERPTS = Path(__file__).parent / "fixtures" / "import" / "excerpts"


def test_real_sec_table_becomes_a_clean_markdown_table():
    doc = html_to_markdown((EXCERPTS / "aapl-10-k-2024-11-01.net-sales-table.html").read_bytes())
    lines = doc.markdown.strip().splitlines()
    assert lines[0] == "|  | 2024 | Change | 2023 | Change | 2022 |"
    assert lines[1] == "| --- | --- | --- | --- | --- | --- |"
    assert "| Total net sales | $391,035 | 2% | $383,285 | (3)% | $394,328 |" in lines
    assert "| Greater China | 66,952 | (8)% | 72,559 | (2)% | 74,200 |" in lines
    assert doc.tables == 1


def test_split_figures_spacer_columns_and_spanning_headers():
    html = """<table>
      <tr><td></td><td colspan="3" style="text-align:center">Years ended</td></tr>
      <tr><td></td><td colspan="2">2024</td><td></td><td colspan="2">2023</td></tr>
      <tr><td>Revenue</td><td>$</td><td>1,234</td><td></td><td>$</td><td>1,100</td></tr>
      <tr><td>Margin</td><td></td><td>(4.5</td><td>)%</td><td></td><td>3.1</td><td>%</td></tr>
      <tr><td></td><td></td><td></td><td></td><td></td><td></td></tr>
    </table>"""
    lines = html_to_markdown(html).markdown.strip().splitlines()
    assert lines == [
        "|  | Years ended |  |",
        "| --- | --- | --- |",
        "|  | 2024 | 2023 |",
        "| Revenue | $1,234 | $1,100 |",
        "| Margin | (4.5)% | 3.1% |",
    ]


def test_layout_tables_become_lines_and_pipes_are_escaped():
    html = """<p>Check the box:</p>
      <table><tr><td>&#9744;</td><td>Written communications pursuant to Rule 425</td></tr></table>
      <table><tr><td>a | b</td><td>c</td></tr><tr><td>d</td><td>e</td></tr></table>"""
    md = html_to_markdown(html).markdown
    assert "☐ Written communications pursuant to Rule 425" in md
    assert "| a \\| b | c |" in md


def test_hidden_and_non_content_elements_are_dropped_in_order():
    html = """<html><head><title>x.htm</title><style>p{}</style></head><body>
      <div style="display: none"><ix:header><ix:hidden>
        <ix:nonNumeric name="dei:EntityCentralIndexKey">0000320193</ix:nonNumeric>
      </ix:hidden></ix:header></div>
      <p>First <b>paragraph</b> with a_blank and a *footnote.</p><script>var a=1;</script>
      <p>Second&nbsp;paragraph for <ix:nonNumeric name="dei:EntityRegistrantName">Apple
      Inc.</ix:nonNumeric></p></body></html>"""
    doc = html_to_markdown(html)
    assert doc.dei == {"EntityCentralIndexKey": "0000320193", "EntityRegistrantName": "Apple Inc."}
    md = doc.markdown
    assert "0000320193" not in md and "x.htm" not in md and "var a" not in md
    assert md.index("First **paragraph** with a_blank and a *footnote.") < md.index(
        "Second paragraph for Apple Inc.")


@pytest.mark.parametrize(
    "text,iso",
    [("2024-12-31", "2024-12-31"), ("20241231", "2024-12-31"), ("December 31 , 2024", "2024-12-31"),
     ("Sept. 28, 2024", "2024-09-28"), ("31 March 2021", "2021-03-31"), ("3/29/2021", "2021-03-29"),
     ("FY2024", None), ("2024-02-30", None), (None, None)],
)
def test_parse_date(text, iso):
    assert parse_date(text) == iso


def test_accession_from_names_and_urls_and_header_block_leaves_unknowns_out():
    assert find_accession("1001039_8K_2017_0001001039-17-000045.htm") == "0001001039-17-000045"
    assert find_accession("https://www.sec.gov/Archives/edgar/data/1/000100018011000006/x.htm") == (
        "0001000180-11-000006")
    assert find_accession("aapl-10-k-2024-11-01.html") is None
    block = header_block({"form": Fact("10-K", "x"), "period": Fact("2024-09-28", "y")})
    assert block == "CONFORMED SUBMISSION TYPE:\t\t10-K\nCONFORMED PERIOD OF REPORT:\t\t20240928"
