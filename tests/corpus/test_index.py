"""The sidecar index over real Parquet: lookups equal a full scan, headers, staleness."""

from __future__ import annotations

import json
import os
import random

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from parquet_agent.corpus.index import CorpusIndex, build_index
from parquet_agent.corpus.pages import column_format, read_cell
from parquet_agent.corpus.snapshot import CorpusSnapshot
from parquet_agent.errors import StaleIndexError


def _scan(folder, stem):
    con = duckdb.connect()
    cur = con.execute(f"SELECT * FROM read_parquet('{folder}/*.parquet') WHERE file_stem = ?", [stem])
    names = [d[0] for d in cur.description]
    rows = [dict(zip(names, r)) for r in cur.fetchall()]
    con.close()
    return rows


@pytest.mark.parametrize("layout", ["plain", "ready"])
def test_lookups_equal_a_full_scan(make_corpus, layout):
    folder = make_corpus(rows=150, layout=layout)
    summary = build_index(folder)
    assert summary.rows == 150 and "150 rows" in summary.summary()
    index = CorpusIndex.open(folder)
    stems = pq.read_table(folder / "2025-02.parquet", columns=["file_stem"])["file_stem"].to_pylist()
    stems += pq.read_table(folder / "2025-01.parquet", columns=["file_stem"])["file_stem"].to_pylist()
    for stem in random.Random(3).sample(stems, 25):
        (expected,) = _scan(folder, stem)
        assert index.read_row(stem) == expected
        loc = index.locate(stem)
        assert loc.path == folder / loc.file and loc.file.endswith(".parquet")
    assert index.locate("0000000000-00-000000") is None
    assert index.locate("zzzz") is None and index.read_row("") is None


@pytest.mark.parametrize("layout", ["plain", "ready"])
def test_every_indexed_page_holds_its_row(make_corpus, layout):
    folder = make_corpus(rows=150, layout=layout)
    build_index(folder)
    idx = pq.read_table(folder / "_index" / "index.parquet").to_pylist()
    unknown = [r for r in idx if r["md_page_offset"] is None]
    # a plain export's dictionary-encoded Markdown is read by row group (the index says so)
    assert len(unknown) == (0 if layout == "ready" else len(idx))
    for name in {r["file"] for r in idx if r["md_page_offset"] is not None}:
        meta = pq.read_metadata(folder / name)
        column = meta.schema.to_arrow_schema().get_field_index("parsed_md")
        fd = os.open(folder / name, os.O_RDONLY)
        try:
            for r in (r for r in idx if r["file"] == name and r["md_page_offset"] is not None):
                codec, nullable = column_format(meta, r["row_group"], column)
                cell = read_cell(fd, r["md_page_offset"], r["md_page_bytes"], r["md_row_in_page"],
                                 codec=codec, nullable=nullable)
                (expected,) = _scan(folder, r["file_stem"])
                assert (cell.decode() if cell is not None else None) == expected["parsed_md"]
        finally:
            os.close(fd)


def test_index_tables_have_the_contract_columns(make_corpus):
    folder = make_corpus(rows=80, layout="ready")
    build_index(folder)
    idx = pq.read_table(folder / "_index" / "index.parquet")
    assert idx.column_names == ["file_stem", "file", "row_group", "row_in_group",
                                "md_page_offset", "md_page_bytes", "md_row_in_page", "accession",
                                "year", "month", "char_count", "md5", "has_ocr", "source_format"]
    assert idx["md_page_offset"].null_count == 0  # the tool-ready layout is readable by page
    assert idx["file_stem"].to_pylist() == sorted(idx["file_stem"].to_pylist())
    hdr = pq.read_table(folder / "_index" / "headers.parquet")
    for col in ("file_stem", "file", "company", "form_type", "period", "filing_date", "cik",
                "header", "company_norm", "cik_int"):
        assert col in hdr.column_names
    assert hdr.num_rows == 80
    assert hdr["file_stem"].to_pylist() == sorted(hdr["file_stem"].to_pylist())
    assert max(len(h) for h in hdr["header"].to_pylist()) <= 2000
    info = json.loads((folder / "_index" / "index.json").read_text())
    assert info["schema_version"] == 2
    assert info["snapshot_id"] == CorpusSnapshot.take(folder).snapshot_id
    assert not [p for p in folder.iterdir() if p.name.startswith("_index.")]  # no temp leftovers


def test_header_search_finds_name_variants_and_padded_ciks(make_corpus):
    folder = make_corpus(rows=120)
    build_index(folder)
    path = folder / "_index" / "headers.parquet"
    con = duckdb.connect()
    # every row of Apex (CIK 98765) is found by its CIK, padded or not in the source
    apex = con.execute(f"SELECT count(*) FROM '{path}' WHERE cik_int = 98765").fetchone()[0]
    assert apex == 30
    # SGML rows carry the name upper-cased, cover pages as written: one normalised key
    names = con.execute(
        f"SELECT DISTINCT company FROM '{path}' WHERE company_norm = 'apex fluid dynamics'"
    ).fetchall()
    assert {n for (n,) in names} >= {"APEX FLUID DYNAMICS, INC.", "Apex Fluid Dynamics, Inc."}
    forms = dict(con.execute(f"SELECT form_type, count(*) FROM '{path}' GROUP BY 1").fetchall())
    assert set(forms) - {None} <= {"10-K", "10-Q", "8-K", "DEF 14A"}


def test_stale_index_is_refused_with_the_command_to_rerun(make_corpus):
    folder = make_corpus(rows=40)
    build_index(folder)
    snap = CorpusSnapshot.take(folder)
    CorpusIndex.open(folder, snapshot=snap)  # fresh: fine

    table = pq.read_table(folder / "2025-01.parquet")
    pq.write_table(table.slice(2), folder / "2025-01.parquet")
    with pytest.raises(StaleIndexError, match=r"parquet-agent corpus index .*corpus"):
        CorpusIndex.open(folder)
    with pytest.raises(StaleIndexError, match="was built for snapshot"):
        CorpusIndex.open(folder, snapshot=CorpusSnapshot.take(folder))
    build_index(folder)
    CorpusIndex.open(folder)

    pq.write_table(table, folder / "2025-07.parquet")  # a new file is not in the index
    with pytest.raises(StaleIndexError, match="2025-07.parquet"):
        CorpusIndex.open(folder)


def test_missing_index_says_how_to_build_it(make_corpus):
    folder = make_corpus(rows=10)
    with pytest.raises(StaleIndexError, match="no sidecar index.*corpus index"):
        CorpusIndex.open(folder)


def test_external_header_sort_over_many_runs(tmp_path):
    """The merge that sorts headers.parquet in bounded memory, with tiny runs and chunks so
    that every path (many runs, LRU evictions, chunks spanning runs) is exercised."""
    from parquet_agent.corpus.index import HEADERS_SCHEMA, _sort_headers

    rng = random.Random(5)
    stems = [f"{rng.randrange(10**6):06d}" for _ in range(3000)]  # duplicates included
    columns = {name: [None] * len(stems) for name in HEADERS_SCHEMA.names}
    columns["file_stem"] = stems
    columns["header"] = [f"h{i}:{s}" for i, s in enumerate(stems)]
    table = pa.table(columns).cast(HEADERS_SCHEMA)
    pq.write_table(table, tmp_path / "u.parquet", row_group_size=97)
    _sort_headers(tmp_path / "u.parquet", tmp_path / "o.parquet", tmp_path,
                  run_rows=400, group_rows=37, chunk_rows=250, cache_groups=3)
    out = pq.read_table(tmp_path / "o.parquet")
    assert out["file_stem"].to_pylist() == sorted(stems)
    assert sorted(out["header"].to_pylist()) == sorted(columns["header"])
    assert all(h.endswith(":" + s) for h, s in zip(out["header"].to_pylist(), out["file_stem"].to_pylist()))
    assert not (tmp_path / "runs.parquet").exists()
