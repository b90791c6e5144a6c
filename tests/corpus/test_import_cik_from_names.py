"""The CIK of real filings imported without their metadata files: from the filing's own text
(SGML header, iXBRL dei facts, EDGAR-CORPUS JSON) or from a documented crawler naming, recorded
in the per-file provenance; never from an accession number's prefix (issue 13)."""

from __future__ import annotations

import json
import shutil

import pytest

from parquet_agent.corpus.importer import import_corpus
from parquet_agent.corpus.importer.records import cik_from_name
from tests.realdata import needs_realdata, realdata

REALDATA = realdata()
needs_crawler = needs_realdata("edgar_crawler")
METADATA = {"manifest.jsonl", "FILINGS_METADATA_TEST.csv", "PROVENANCE.md"}


def _truth() -> dict[str, str]:
    """file (relative to realdata) -> CIK, from the manifests written when the data was taken."""
    out = {}
    for manifest in REALDATA.glob("*/manifest.jsonl"):
        for line in manifest.read_text().splitlines():
            row = json.loads(line)
            if row.get("cik"):
                out[row["file"]] = row["cik"].zfill(10)
    return out


def _import(tmp_path, folders: list[str]):
    src = tmp_path / "src"
    for folder in folders:
        for path in (REALDATA / folder).rglob("*"):
            if path.is_file() and path.name not in METADATA:
                dest = src / folder / path.relative_to(REALDATA / folder)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, dest)
    result = import_corpus(src, tmp_path / "out", index=False)
    return {f.source: f for f in result.imported}


@pytest.mark.parametrize("name, cik", [
    ("1001039_8K_2017_0000950157-17-001598.htm", "0001001039"),  # agent's accession prefix
    ("8k_raw/100493_8K_2022_0000100493-22-000006.htm", "0000100493"),
    ("1000180_10K_2010_0001000180-10-000008.json", "0001000180"),
    ("Archives/edgar/data/320193/000032019324000123/aapl-20240928.htm", "0000320193"),
    ("sec-edgar-filings/0000320193/10-K/0000320193-24-000123/primary-document.html",
     "0000320193"),
])
def test_documented_namings_give_the_cik(name, cik):
    assert cik_from_name(name)[0] == cik


@pytest.mark.parametrize("name", [
    "0000950157-17-001598.htm",  # an accession number alone: its prefix is the filer agent
    "parity_gate/10-K/0000950153-99-001234.html",
    "aapl-10-k-2024-11-01.html",
    "sec-edgar-filings/AAPL/10-K/0000320193-24-000123/primary-document.html",  # a ticker
])
def test_no_cik_from_other_names(name):
    assert cik_from_name(name) is None


@needs_crawler
def test_raw_8k_html_without_the_crawler_csv_gets_every_cik(tmp_path):
    """Before: 8 of the 14 raw 8-K HTML files got a null CIK without the metadata CSV."""
    truth = _truth()
    imported = _import(tmp_path, ["edgar_crawler/8k_raw"])
    assert len(imported) == 14
    by_name = 0
    for source, f in imported.items():
        assert f.accession == truth[source], source
        cik_source = f.facts["cik"]["source"]
        assert cik_source in ("dei:EntityCentralIndexKey",) or cik_source.startswith(
            "file name (edgar-crawler"), source  # the document's own iXBRL facts come first
        if cik_source.startswith("file name"):
            by_name += 1
            assert any("CIK taken from the edgar-crawler file name" in n for n in f.notes)
    assert by_name == 8  # the ones that were null before


@pytest.mark.slow
@needs_crawler
def test_every_realdata_file_that_carries_its_cik_gets_it_right(tmp_path):
    truth = _truth()
    imported = _import(tmp_path, ["edgar_crawler", "edgartools"])
    wrong = {s: (f.accession, truth.get(s)) for s, f in imported.items()
             if f.accession is not None and f.accession != truth.get(s)}
    assert not wrong
    named = [s for s in imported if cik_from_name(s)]
    from_text = [s for s, f in imported.items()
                 if f.facts.get("cik") and not f.facts["cik"]["source"].startswith("file name")]
    assert all(imported[s].accession == truth[s] for s in named + from_text)
    # the crawler-named 8-K HTML and 10-K items (8-K item JSONs are the same filings as the
    # raw 8-K HTML: the HTML is kept)
    assert len(named) == 42
