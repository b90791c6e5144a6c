"""corpus prepare on real files: a plain one-row-group export becomes tool-ready, same rows."""

from __future__ import annotations

import json

import duckdb
import pyarrow.parquet as pq
import pytest

from parquet_agent.corpus.layout import is_tool_ready
from parquet_agent.corpus.manifest import read_corpus_manifest
from parquet_agent.corpus.prepare import prepare
from parquet_agent.corpus.snapshot import CorpusSnapshot
from parquet_agent.errors import CorpusError


def _rows(folder):
    con = duckdb.connect()
    rows = con.execute(f"SELECT * FROM read_parquet('{folder}/*.parquet') ORDER BY file_stem").fetchall()
    con.close()
    return rows


def test_plain_export_is_not_tool_ready_and_says_why(make_corpus):
    folder = make_corpus(rows=60)
    ready, reasons = is_tool_ready(folder)
    assert not ready
    assert any("not sorted by file_stem" in r for r in reasons)
    assert any("no bloom filter" in r and "2025-01.parquet" in r for r in reasons)


@pytest.mark.parametrize("bucket_mib", [128, 0.02])  # one range, and many spilled ranges
def test_prepare_a_plain_export_gives_the_same_rows(make_corpus, tmp_path, bucket_mib):
    src = make_corpus(rows=200)
    (src / "questions.jsonl").write_text('{"question_id": "Q001"}\n')
    out = tmp_path / "prepared"
    result = prepare(src, out, row_group_mib=0.02, bucket_mib=bucket_mib)
    assert result.rows == 200 and result.md5_mismatches == 0
    assert all(f.spilled for f in result.files)  # the export was not sorted
    assert _rows(out) == _rows(src)
    assert is_tool_ready(out) == (True, [])
    for f in ("2025-01.parquet", "2025-02.parquet"):
        meta = pq.ParquetFile(out / f).metadata
        assert meta.num_row_groups > 3  # byte-capped
        stems = pq.read_table(out / f, columns=["file_stem"])["file_stem"].to_pylist()
        assert stems == sorted(stems)
    assert (out / "questions.jsonl").read_text() == '{"question_id": "Q001"}\n'
    assert "rows/s" in result.summary() and "peak RSS" in result.summary()
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_prepare_records_lineage_in_the_manifest(make_corpus, tmp_path):
    src = make_corpus(rows=50)
    out = tmp_path / "prepared"
    prepare(src, out)
    manifest = read_corpus_manifest(out)
    assert manifest.kind == "prepared" and manifest.tool_ready and manifest.rows == 50
    src_snap = CorpusSnapshot.take(src)
    origin = manifest.origin
    assert origin["source_snapshot_id"] == src_snap.snapshot_id
    assert [(f["name"], f["content_hash"]) for f in origin["source_files"]] == [
        (f.name, f.content_hash) for f in src_snap.files
    ]
    assert origin["verified"]["rows"] == 50
    # the same files (taken_at is when, to the second: a later snapshot may differ there)
    assert manifest.snapshot.files == CorpusSnapshot.take(out).files
    assert json.loads((out / "manifest.json").read_text())["schema_version"] == 1


def test_prepare_counts_rows_whose_md5_is_wrong(make_corpus, tmp_path):
    src = make_corpus(rows=30, months=(1,))
    table = pq.read_table(src / "2025-01.parquet")
    md5 = table["md5"].to_pylist()
    md5[3] = "0" * 32
    table = table.set_column(table.schema.get_field_index("md5"), "md5", [md5])
    pq.write_table(table, src / "2025-01.parquet")
    result = prepare(src, tmp_path / "out")
    assert result.md5_mismatches == 1 and "does not match their text" in result.summary()
    assert _rows(tmp_path / "out") == _rows(src)  # reported, never "fixed"


def test_prepare_refuses_a_folder_with_parquet_files(make_corpus, tmp_path):
    src = make_corpus("a", rows=10)
    other = make_corpus("b", rows=10)
    with pytest.raises(CorpusError, match="already holds Parquet files"):
        prepare(src, other)
    with pytest.raises(CorpusError, match="different --out"):
        prepare(src, src)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "manifest.json").write_text("mine")  # issue 27 item 4: never written over
    with pytest.raises(CorpusError, match=r"is not empty \(manifest.json, ...\)"):
        prepare(src, notes)
    assert [p.name for p in notes.iterdir()] == ["manifest.json"]
    assert (notes / "manifest.json").read_text() == "mine"


def test_extra_columns_are_dropped_and_recorded(make_corpus, tmp_path):
    src = make_corpus(rows=20, months=(1,))
    table = pq.read_table(src / "2025-01.parquet")
    pq.write_table(table.append_column("ticker", [["X"] * table.num_rows]), src / "2025-01.parquet")
    prepare(src, tmp_path / "out")
    assert read_corpus_manifest(tmp_path / "out").origin["dropped_columns"] == ["ticker"]
    assert "ticker" not in pq.read_schema(tmp_path / "out" / "2025-01.parquet").names
