"""CorpusSnapshot on real Parquet files: new, missing and changed files; schema errors; JSON."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from parquet_agent.corpus.snapshot import CorpusSnapshot
from parquet_agent.errors import CorpusError, SchemaError, SnapshotChangedError


def test_take_records_every_file(make_corpus):
    folder = make_corpus(rows=40)
    snap = CorpusSnapshot.take(folder)
    assert [f.name for f in snap.files] == ["2025-01.parquet", "2025-02.parquet"]
    assert snap.rows == 40
    assert snap.size == sum(p.stat().st_size for p in folder.glob("*.parquet"))
    entry = snap.files[0]
    assert entry.content_hash.startswith("xxh3_128:") and entry.row_groups == 1
    assert ("parsed_md", "string") in entry.schema
    assert snap.snapshot_id.startswith("snap:")


def test_subfolders_and_other_files_are_not_part_of_it(make_corpus):
    folder = make_corpus(rows=10)
    (folder / "_index").mkdir()
    pq.write_table(pq.read_table(folder / "2025-01.parquet"), folder / "_index" / "x.parquet")
    (folder / "notes.txt").write_text("hello")
    assert [f.name for f in CorpusSnapshot.take(folder).files] == ["2025-01.parquet", "2025-02.parquet"]


def test_check_reports_new_missing_and_changed_separately(make_corpus):
    folder = make_corpus(rows=40, months=(1, 2, 3))
    snap = CorpusSnapshot.take(folder)
    assert snap.check(folder).ok and snap.check(folder).describe() == "unchanged"

    pq.write_table(pq.read_table(folder / "2025-01.parquet"), folder / "2025-04.parquet")
    (folder / "2025-02.parquet").unlink()
    table = pq.read_table(folder / "2025-03.parquet")
    pq.write_table(table.slice(1), folder / "2025-03.parquet")  # one row fewer

    check = snap.check(folder)
    assert check.new == ("2025-04.parquet",)
    assert check.missing == ("2025-02.parquet",)
    assert check.changed == ("2025-03.parquet",)
    assert not check.ok
    text = check.describe()
    assert "CHANGED" in text and "2025-03.parquet" in text and "excluded" in text
    with pytest.raises(SnapshotChangedError, match="2025-03.parquet"):
        check.raise_for_changes()


def test_same_size_change_is_caught_by_the_content_hash(make_corpus):
    folder = make_corpus(rows=20, months=(1,))
    path = folder / "2025-01.parquet"
    snap = CorpusSnapshot.take(folder)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, same mtime restored below
    stat = path.stat()
    path.write_bytes(bytes(data))
    import os

    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert snap.check(folder, quick=True).ok  # size and mtime cannot see it
    check = snap.check(folder)
    assert check.changed == ("2025-01.parquet",)
    assert "content hash differs" in check.details[0]


def test_new_files_alone_keep_the_snapshot_usable(make_corpus):
    folder = make_corpus(rows=10, months=(1,))
    snap = CorpusSnapshot.take(folder)
    pq.write_table(pq.read_table(folder / "2025-01.parquet"), folder / "2025-09.parquet")
    check = snap.check(folder)
    assert check.ok and check.new == ("2025-09.parquet",)
    check.raise_for_changes()


def test_missing_column_names_file_and_column(make_corpus):
    folder = make_corpus(rows=10, months=(1,))
    table = pq.read_table(folder / "2025-01.parquet").drop_columns(["md5"])
    pq.write_table(table, folder / "2025-02.parquet")
    with pytest.raises(SchemaError, match=r"2025-02\.parquet: missing required column\(s\) md5"):
        CorpusSnapshot.take(folder)


def test_wrong_type_names_file_and_column(make_corpus):
    folder = make_corpus(rows=10, months=(1,))
    table = pq.read_table(folder / "2025-01.parquet")
    table = table.set_column(
        table.schema.get_field_index("char_count"), "char_count",
        pa.array([str(v) for v in table["char_count"].to_pylist()]),
    )
    pq.write_table(table, folder / "2025-02.parquet")
    with pytest.raises(SchemaError, match=r"2025-02\.parquet: column 'char_count' has type string"):
        CorpusSnapshot.take(folder)


def test_not_parquet_and_empty_folder_are_clear_errors(tmp_path):
    with pytest.raises(CorpusError, match="no \\*.parquet files"):
        CorpusSnapshot.take(tmp_path)
    (tmp_path / "2025-01.parquet").write_text("not parquet")
    with pytest.raises(SchemaError, match="2025-01.parquet: not a readable Parquet file"):
        CorpusSnapshot.take(tmp_path)
    with pytest.raises(CorpusError, match="does not exist"):
        CorpusSnapshot.take(tmp_path / "nope")


def test_json_round_trip(make_corpus):
    folder = make_corpus(rows=30)
    snap = CorpusSnapshot.take(folder)
    data = json.loads(json.dumps(snap.to_json()))
    assert data["schema_version"] == 1 and data["rows"] == 30
    back = CorpusSnapshot.from_json(data, root=folder)
    assert back == snap and back.snapshot_id == snap.snapshot_id
    assert back.check().ok  # root carried over

    data["files"][0]["rows"] += 1
    with pytest.raises(CorpusError, match="inconsistent"):
        CorpusSnapshot.from_json(data)
    with pytest.raises(CorpusError, match="schema_version"):
        CorpusSnapshot.from_json(dict(data, schema_version=99))
