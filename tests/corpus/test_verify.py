"""corpus verify: every difference from a manifest, file by file; expected-shape manifests."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from parquet_agent.cli import main
from parquet_agent.corpus.manifest import read_corpus_manifest, write_corpus_manifest
from parquet_agent.corpus.verify import verify
from parquet_agent.errors import CorpusError

GIB = 1024**3


def test_manifest_round_trip_and_kind(make_corpus):
    folder = make_corpus(rows=30)
    path = write_corpus_manifest(folder, origin={"generator": "test", "seed": 1})
    m = read_corpus_manifest(folder)
    assert path == folder / "manifest.json" and m.kind == "synthetic"
    assert m.origin == {"generator": "test", "seed": 1} and m.rows == 30
    assert not m.tool_ready and m.layout_version is None and m.layout_reasons
    data = json.loads(path.read_text())
    assert data["schema_version"] == 1 and data["bytes"] == m.bytes
    assert all(f["rows_digest"].startswith("sha256:") for f in data["files"])
    with pytest.raises(CorpusError, match="kind"):
        write_corpus_manifest(folder, origin={}, kind="other")
    with pytest.raises(CorpusError, match="JSON-serialisable"):
        write_corpus_manifest(folder, origin={"x": object()})


def test_a_copy_matches_and_every_change_is_named(make_corpus, tmp_path):
    folder = make_corpus(rows=60, months=(1, 2, 3))
    write_corpus_manifest(folder, origin={})
    manifest = tmp_path / "m.json"
    manifest.write_text((folder / "manifest.json").read_text())
    report = verify(folder, manifest)
    assert report.ok and "matches the manifest" in report.describe()

    table = pq.read_table(folder / "2025-01.parquet")
    pq.write_table(table.slice(1), folder / "2025-01.parquet")
    (folder / "2025-02.parquet").unlink()
    pq.write_table(table, folder / "2025-05.parquet")
    report = verify(folder, manifest)
    assert not report.ok
    text = "\n".join(report.differences)
    assert "2025-01.parquet: rows 19, manifest says 20" in text
    assert "2025-01.parquet: bytes" in text and "content hash differs" in text
    assert "(file_stem, md5) rows differs" in text
    assert "2025-02.parquet: missing" in text
    assert "2025-05.parquet: not in the manifest (extra file)" in text
    assert "total: rows" in text
    assert "ok    2025-03.parquet" in report.describe()


def test_expected_shape_matches_files_by_month_within_tolerance(make_corpus, tmp_path):
    folder = make_corpus(rows=40, months=(1, 2))
    sizes = {p.name: p.stat().st_size for p in folder.glob("*.parquet")}
    shape = {
        "schema_version": 1,
        "kind": "expected-shape",
        "tolerances": {"gib": 0.0000005},
        "totals": {"files": 2, "rows": 40, "bytes": sum(sizes.values())},
        "files": [
            {"year": 2025, "month": 1, "rows": 20, "gib": round(sizes["2025-01.parquet"] / GIB, 6)},
            {"year": 2025, "month": 2, "rows": 21, "gib": 0.5},
        ],
    }
    path = tmp_path / "shape.json"
    path.write_text(json.dumps(shape))
    report = verify(folder, path)
    assert report.differences == (
        "2025-02 (2025-02.parquet): rows 20, manifest says 21",
        f"2025-02 (2025-02.parquet): {sizes['2025-02.parquet'] / GIB:.4f} GiB, manifest says "
        "0.5 GiB (±5e-07, rounded)",
    )
    assert report.checked == ("2025-01 (2025-01.parquet): rows, gib",)


def test_cli_verify_exit_codes(make_corpus, tmp_path, capsys):
    folder = make_corpus(rows=20)
    write_corpus_manifest(folder, origin={})
    assert main(["corpus", "verify", str(folder)]) == 0
    assert main(["corpus", "verify", str(folder), "--require-tool-ready"]) == 1
    out = capsys.readouterr().out
    assert "NOT tool-ready" in out and "corpus prepare" in out
    assert main(["corpus", "verify", str(folder), "--manifest", str(tmp_path / "none.json")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_cli_prepare_index_verify(make_corpus, tmp_path, capsys):
    src = make_corpus(rows=40)
    out = tmp_path / "ready"
    assert main(["corpus", "prepare", str(src), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "prepared 40 rows" in printed and "index: 40 rows" in printed
    assert main(["corpus", "verify", str(out), "--require-tool-ready"]) == 0
    assert main(["corpus", "index", str(out)]) == 0
