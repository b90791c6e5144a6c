"""`corpus import` over committed real filings (tests/corpus/fixtures/import/filings, see its
README): formats, metadata with provenance, fallbacks with notes, skipped files with reasons,
the tool-ready output, and the issuer-header parser on the imported rows."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from parquet_agent.corpus.headers import parse_header
from parquet_agent.corpus.importer import import_corpus
from parquet_agent.corpus.index import CorpusIndex
from parquet_agent.corpus.layout import is_tool_ready
from parquet_agent.corpus.manifest import read_corpus_manifest
from parquet_agent.corpus.schema import validate_schema
from tests.realdata import needs_realdata, realdata

FIXTURES = Path(__file__).parent / "fixtures" / "import" / "filings"

# What each fixture filing states about itself (read off the documents and their SEC records).
EXPECTED = {
    "0001011438-98-000429": dict(  # SGML submission, plain-text 8-K
        accession="0000913951", year=1998, month=12, source_format="sgml",
        company="AAMES CAPITAL CORP", form_type="8-K", period="1998-12-15", cik="913951",
    ),
    "0000887919-21-000012": dict(  # inline-XBRL 8-K, accession only in the file name
        accession="0000887919", year=2021, month=None, source_format="xbrl",
        company="PREMIER FINANCIAL BANCORP, INC.", form_type="8-K", period="2021-03-29",
        cik="887919",
    ),
    "0001437749-16-028287": dict(  # plain HTML 8-K, no metadata besides the file name
        accession=None, year=2016, month=None, source_format="html",
        company="Sophiris Bio Inc.", form_type="8-K", period="2016-03-23", cik=None,
    ),
    "0001001039-17-000045": dict(  # raw 8-K HTML + edgar-crawler CSV row
        accession="0001001039", year=2017, month=2, source_format="html",
        company="WALT DISNEY CO/", form_type="8-K", period="2017-02-07", cik="1001039",
    ),
    "0001000180-11-000006": dict(  # EDGAR-CORPUS item JSON
        accession="0001000180", year=2011, month=2, source_format="json",
        company="SANDISK CORP", form_type="10-K", period="2011-01-02", cik="1000180",
    ),
}


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    src = tmp_path_factory.mktemp("src")
    shutil.copytree(FIXTURES, src, dirs_exist_ok=True)
    (src / "broken.json").write_text("{not json", encoding="utf-8")
    (src / "scan.pdf").write_bytes(b"%PDF-1.4\n")
    (src / "notes.xyz").write_text("hello", encoding="utf-8")
    (src / "empty.htm").write_bytes(b"")
    (src / "readme.txt").write_text("some text, no SEC header", encoding="utf-8")
    out = tmp_path_factory.mktemp("out") / "corpus"
    result = import_corpus(src, out)
    rows = {}
    for path in sorted(out.glob("*.parquet")):
        validate_schema(pq.read_schema(path), path.name)
        for row in pq.read_table(path).to_pylist():
            rows[row["file_stem"]] = row
    return result, rows, out


def test_every_supported_filing_imports_and_the_rest_is_listed_with_a_reason(imported):
    result, rows, _ = imported
    assert sorted(rows) == sorted(EXPECTED)
    reasons = {s.source: s.reason for s in result.skipped}
    assert "unreadable as edgar_corpus_json" in reasons["broken.json"]
    assert "convert it to page-marked text" in reasons["scan.pdf"]
    assert "unsupported file type .xyz" in reasons["notes.xyz"]
    assert reasons["empty.htm"] == "empty file"
    assert "without an SEC header" in reasons["readme.txt"]
    dup = reasons["crawler/8k_items/1001039_8K_2017_0001001039-17-000045.json"]
    assert "same filing as crawler/8k_raw/" in dup and "kept the html version" in dup
    assert result.metadata_files == ("crawler/FILINGS_METADATA_TEST.csv",)


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_columns_come_from_the_filings_own_metadata(imported, stem):
    _, rows, _ = imported
    row, want = rows[stem], EXPECTED[stem]
    assert (row["accession"], row["year"], row["month"], row["source_format"]) == (
        want["accession"], want["year"], want["month"], want["source_format"]
    )
    assert row["char_count"] == len(row["parsed_md"])
    assert row["has_ocr"] is False


def test_fallbacks_are_noted_per_file_never_silent(imported):
    result, _, out = imported
    by_stem = {f.file_stem: f for f in result.imported}
    sophiris = by_stem["0001437749-16-028287"]
    assert sophiris.facts["accession_number"]["source"] == "file name"
    assert any("accession number taken from the file name" in n for n in sophiris.notes)
    assert any("no CIK" in n for n in sophiris.notes)
    assert any("year taken from the accession number" in n for n in sophiris.notes)
    sgml = by_stem["0001011438-98-000429"]
    assert {f["source"] for f in sgml.facts.values()} == {"SGML header"}
    assert not any("fall" in n or "taken from" in n for n in sgml.notes)
    # the same provenance is in the manifest, per file
    manifest = read_corpus_manifest(out)
    assert manifest.kind == "imported"
    listed = {f["file_stem"]: f for f in manifest.origin["imported"]}
    assert listed["0001437749-16-028287"]["notes"] == list(sophiris.notes)
    assert listed["0001000180-11-000006"]["source_hash"].startswith("xxh3_128:")
    assert {s["source"] for s in manifest.origin["skipped"]} >= {"broken.json", "scan.pdf"}


def test_output_is_tool_ready_with_an_index(imported):
    result, _, out = imported
    ready, reasons = is_tool_ready(out)
    assert ready, reasons
    assert result.index_built
    index = CorpusIndex.open(out)
    loc = index.locate("0001000180-11-000006")
    assert loc is not None and loc.file == "filings-2011.parquet"
    assert index.locate("no-such-stem") is None


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_header_parser_gets_company_form_period_and_cik_right(imported, stem):
    _, rows, _ = imported
    want = EXPECTED[stem]
    h = parse_header(rows[stem]["parsed_md"])
    assert (h.company, h.form_type, h.period, h.cik) == (
        want["company"], want["form_type"], want["period"], want["cik"]
    )


def test_sgml_keeps_its_own_header_and_only_the_primary_document(imported):
    result, rows, _ = imported
    md = rows["0001011438-98-000429"]["parsed_md"]
    assert md.startswith("ACCESSION NUMBER:\t\t0001011438-98-000429\n")
    assert "CENTRAL INDEX KEY:\t\t\t0000913951" in md
    assert "<DOCUMENT>" not in md and "<TEXT>" not in md
    assert "EX-20.1" not in md.split("\n\n", 1)[1][:200]
    note = next(f for f in result.imported if f.file_stem == "0001011438-98-000429").notes
    assert any("1 other document(s)" in n for n in note)


def test_hidden_ixbrl_header_is_dropped_and_text_order_kept(imported):
    _, rows, _ = imported
    md = rows["0000887919-21-000012"]["parsed_md"]
    assert "EntityCentralIndexKey" not in md and "xbrli:" not in md and "ix:" not in md
    header, body = md.split("\n\n", 1)
    assert "CENTRAL INDEX KEY:\t\t0000887919" in header  # from the hidden dei fact
    assert "0000887919" not in body  # the CIK was only in the hidden header
    assert "PREMIER FINANCIAL BANCORP" in body
    disney = rows["0001001039-17-000045"]["parsed_md"]
    first, second = disney.find("Item 2.02"), disney.find("Item 9.01")
    assert 0 < first < second


def test_cli_import_prints_the_summary_and_refuses_a_non_empty_folder(tmp_path, capsys):
    from parquet_agent.cli import main

    out = tmp_path / "c"
    assert main(["corpus", "import", str(FIXTURES / "sgml"), "--out", str(out)]) == 0
    assert "imported 1 filing(s)" in capsys.readouterr().out
    assert main(["corpus", "import", str(FIXTURES / "sgml"), "--out", str(out)]) == 2
    assert "not an empty folder" in capsys.readouterr().err


def test_parallel_import_writes_the_same_rows(imported, tmp_path):
    _, rows, _ = imported
    src = tmp_path / "src"
    shutil.copytree(FIXTURES, src)
    result = import_corpus(src, tmp_path / "out", jobs=2, index=False)
    assert {f.file_stem: f.md5 for f in result.imported} == {s: r["md5"] for s, r in rows.items()}


FB = realdata("financebench")


@needs_realdata("financebench/corpus_manifest.jsonl")
def test_financebench_page_marked_text_imports_with_manifest_metadata(tmp_path):
    src = tmp_path / "fb"
    (src / "docs_md").mkdir(parents=True)
    shutil.copy(FB / "corpus_manifest.jsonl", src)
    for name in ("3M_2018_10K", "AMCOR_2023Q2_10Q"):
        shutil.copy(FB / "docs_md" / f"{name}.md", src / "docs_md")
    (src / "questions").mkdir()  # has doc_name and cik too, but describes questions, not files
    shutil.copy(FB / "questions" / "financebench_eval.jsonl", src / "questions")
    result = import_corpus(src, tmp_path / "out", index=False)
    assert result.metadata_files == ("corpus_manifest.jsonl",)
    assert "not a FinanceBench corpus_manifest" in result.skipped[0].reason
    by_source = {Path(f.source).stem: f for f in result.imported}
    three_m = by_source["3M_2018_10K"]
    assert (three_m.file_stem, three_m.accession, three_m.year, three_m.month) == (
        "0001558370-19-000470", "0000066740", 2019, 2)
    amcor = by_source["AMCOR_2023Q2_10Q"]  # no accession in the manifest: documented fallback
    assert amcor.file_stem == "AMCOR_2023Q2_10Q"
    assert any("falls back to the document name" in n for n in amcor.notes)
    assert any("month left null" in n for n in amcor.notes) and amcor.month is None
    row = pq.read_table(next((tmp_path / "out").glob("filings-2019.parquet"))).to_pylist()[0]
    assert row["source_format"] == "pdf" and "<!-- page 1 -->" in row["parsed_md"]
    h = parse_header(row["parsed_md"])
    assert (h.form_type, h.cik) == ("10-K", "66740")
    manifest_rows = [json.loads(x) for x in (FB / "corpus_manifest.jsonl").open()]
    assert len(manifest_rows) == 138


def test_the_tools_find_imported_filings_by_cik_and_read_them(imported):
    from parquet_agent.tools import Tools

    _, rows, out = imported
    tools = Tools.open(out, strategy="sql+stream")
    try:
        found = tools.call("search_headers", query="913951")  # the CIK without zero padding
        assert found.ok, found.error
        assert "0001011438-98-000429" in found.model_text()
        read = tools.call("read_filing", file_stem="0001001039-17-000045", max_chars=400)
        assert read.ok, read.error
        assert "WALT DISNEY CO/" in read.model_text()
        sql = tools.call("sql", query="SELECT count(*) AS n, count(accession) AS with_cik FROM filings")
        assert sql.ok, sql.error
        assert json.loads(sql.model_text())["rows"] == [[5, 4]]  # Sophiris has no CIK
    finally:
        tools.close()
