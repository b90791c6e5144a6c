"""A dataset is tables: files whose schemas agree are one table, other schemas and other folders
are other tables, each its own view; a single file, nested folders, Hive partitions, CSV and JSON
lines; every tool works per table. Real files in tmp_path, real sandboxed workers."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from parquet_agent.audit import Auditor
from parquet_agent.audit.dataset import Dataset
from parquet_agent.audit.layout import safe_name, unique
from parquet_agent.audit.tools import AuditTools
from parquet_agent.errors import UsageError
from tests.audit.conftest import write_filings


def write_air(root: Path) -> Path:
    """planes (CSV), airports (JSON lines), flights (two Parquet partitions), and events in a
    sub-folder with Hive partitions: four tables."""
    (root / "events" / "year=2024").mkdir(parents=True)
    (root / "events" / "year=2025").mkdir(parents=True)
    (root / "planes.csv").write_text("tailnum,seats\nN1,150\nN2,\nN3,180\n")
    (root / "airports.jsonl").write_text(
        '{"faa": "JFK", "lat": 40.6}\n{"faa": "LAX", "lat": 33.9}\n')
    for part, tails in enumerate((["N1", "N2"], ["N2", "N9"])):
        pq.write_table(pa.table({"tailnum": tails, "dest": ["JFK", "LAX"], "delay": [1.0, 2.0]}),
                       root / f"flights-{part}.parquet")
    for year in (2024, 2025):
        pq.write_table(pa.table({"tailnum": ["N1", "N3", "N3"], "kind": ["a", "b", "b"]}),
                       root / "events" / f"year={year}" / "part-0.parquet")
    (root / "README.md").write_text("notes, not data")
    (root / "_index").mkdir()
    return root


def test_a_folder_of_related_tables_is_tables_each_its_own_view(tmp_path):
    dataset = Dataset.open(write_air(tmp_path / "air"), convert_dir=tmp_path / "conv")
    tables = {t.name: t for t in dataset.tables}
    assert set(tables) == {"airports", "flights", "planes", "events"}
    assert tables["flights"].files == ("flights-0.parquet", "flights-1.parquet")
    assert tables["flights"].rows == 4 and tables["events"].rows == 6
    assert tables["events"].partition_keys == ("year",)
    assert tables["planes"].column("seats").type == "BIGINT"
    assert "data" not in dataset.views()  # several tables: no union of unrelated rows
    assert dataset.column_names[:2] == ("airports.faa", "airports.lat")
    assert {i["file"] for i in dataset.ignored} == {"README.md"}
    # CSV / JSON lines: the snapshot entry is the source's bytes, the conversion is recorded
    entry = next(f for f in dataset.snapshot.files if f.name == "planes.csv")
    assert entry.size == (tmp_path / "air" / "planes.csv").stat().st_size and entry.rows == 3
    converted = {c["file"]: c for c in dataset.describe()["converted"]}
    assert set(converted) == {"planes.csv", "airports.jsonl"}
    assert Path(converted["planes.csv"]["parquet"]).parent == tmp_path / "conv"
    with AuditTools.open(dataset) as tools:
        orphans = tools.run_query("SELECT f.tailnum, f._file, f._row FROM flights f "
                                  "WHERE f.tailnum NOT IN (SELECT tailnum FROM planes)")
        assert orphans.ok and orphans.output["rows"] == [["N9", "flights-1.parquet", 1]]
        stats = tools.get_stats("planes.seats")
        assert stats.ok and stats.output["nulls"] == 1 and stats.output["table"] == "planes"
        assert stats.output["per_file"][0]["_file"] == "planes.csv"
        years = tools.get_stats("events.year")
        assert {v["value"]: v["n"] for v in years.output["top_values"]} == {"2024": 3, "2025": 3}
        assert not tools.get_stats("seats").ok  # a plain name is ambiguous across tables
        sample = tools.schema_sample(2)
        assert sample.ok and set(sample.output["samples"]) == set(tables)
        one = tools.schema_sample(2, table="planes")
        assert set(one.output["samples"]) == {"planes"}
        assert not tools.schema_sample(2, table="nope").ok


def test_a_single_file_is_a_dataset(tmp_path):
    path = tmp_path / "weather.csv"
    path.write_text("station,temp\nA,1.5\nB,2.5\n")
    dataset = Dataset.open(path, convert_dir=tmp_path / "conv")
    assert dataset.lineage == "weather" and dataset.table_names == ("weather",)
    assert dataset.column_names == ("station", "temp") and "data" in dataset.views()
    pq.write_table(pa.table({"x": [1, 2, 3]}), tmp_path / "one.parquet")
    assert Dataset.open(tmp_path / "one.parquet").tables[0].rows == 3
    with pytest.raises(UsageError, match="does not exist"):
        Dataset.open(tmp_path / "missing.parquet")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(UsageError, match="not a data file"):
        Dataset.open(tmp_path / "notes.txt")


def test_names_are_safe_identifiers_and_clashes_are_numbered(tmp_path):
    assert safe_name("Order") == "order_t"  # a reserved keyword
    assert safe_name("2024 Sales (EU)") == "t_2024_sales_eu"
    assert safe_name("---") == "t"
    taken = {"sales"}
    assert unique("sales", taken) == "sales_2" and unique("sales", taken) == "sales_3"
    root = tmp_path / "shop"
    for folder in ("EU Sales", "eu-sales"):  # two folders, one safe name
        (root / folder).mkdir(parents=True)
        pq.write_table(pa.table({"id": [1], "amount": [2.0]}), root / folder / "p.parquet")
    (root / "order.csv").write_text("id,total\n1,3\n")
    (root / "data.csv").write_text("a,b,c\n1,2,3\n")
    dataset = Dataset.open(root, convert_dir=tmp_path / "conv")
    assert dataset.table_names == ("data", "order_t", "eu_sales", "eu_sales_2")
    with AuditTools.open(dataset) as tools:
        assert tools.run_query("SELECT count(*) FROM order_t").output["rows"] == [[1]]
        assert tools.run_query("SELECT sum(amount) FROM eu_sales_2").output["rows"] == [[2.0]]


def test_a_folder_of_csv_is_audited_as_tables_and_snapshotted_in_the_run(tmp_path):
    root = write_air(tmp_path / "air")
    report = Auditor(store=tmp_path / "f.sqlite").run(root, run_dir=tmp_path / "run")
    assert report.status == "complete"
    nulls = [f for f in report.findings if f.category == "completeness"]
    assert [(f.view, f.columns, f.evidence.count) for f in nulls] == [("planes", ("planes.seats",), 1)]
    converted = sorted((tmp_path / "run" / "snapshot").glob("*.parquet"))
    assert len(converted) == 2
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert {f["name"] for f in manifest["snapshot"]["files"]} >= {"planes.csv", "airports.jsonl"}
    # a resume re-opens the same bytes to the same snapshot (the conversion is reused)
    again = Auditor(store=tmp_path / "f.sqlite").run(root, run_dir=tmp_path / "run", resume=True)
    assert again.status == "complete" and len(again.findings) == len(report.findings)


def test_the_filings_corpus_stays_one_table_beside_its_questions_file(tmp_path):
    root = write_filings(tmp_path / "corpus")
    (root / "questions.jsonl").write_text('{"question_id": "Q1"}\n')
    dataset = Dataset.open(root)
    assert dataset.is_filings and dataset.table_names == ("filings",)
    assert [i["file"] for i in dataset.ignored] == ["questions.jsonl"]
    assert "questions file" in dataset.ignored[0]["reason"]


def test_a_csv_whose_late_rows_break_the_sampled_types_is_read_whole(tmp_path):
    """'100+' at line 24,001, past the rows DuckDB samples to sniff types, makes the column
    text (the first reader fails on it); the reader that read the file is recorded."""
    root = tmp_path / "pop"
    root.mkdir()
    lines = ["year,age,value"] + [f"{1950 + i % 70},{'100+' if i == 24_000 else i % 100},{i * 0.5}"
                                  for i in range(25_000)]
    (root / "population.csv").write_text("\n".join(lines) + "\n")
    dataset = Dataset.open(root, convert_dir=tmp_path / "conv")
    (source,) = dataset.sources
    assert "sample_size = -1" in source.converted["reader"]
    with AuditTools.open(dataset) as tools:
        rows = tools.run_query("SELECT count(*), count(*) FILTER (WHERE age = '100+'), "
                               "typeof(any_value(year)) FROM data").output["rows"]
    assert rows == [[25_000, 1, "BIGINT"]]
    again = Dataset.open(root, convert_dir=tmp_path / "conv")  # the conversion reused, reader too
    assert again.sources[0].converted["reader"] == source.converted["reader"]


def test_a_csv_with_mixed_line_endings_and_a_word_among_numbers_is_read_and_typed(tmp_path):
    """A sensor export: CRLF lines, then LF lines with 'nil' for one reading. DuckDB's sniffer
    refuses it; read as text, each column gets the type all its values fit."""
    root = tmp_path / "cgm"
    root.mkdir()
    first = [f"{20 + i / 10:.2f},2010-03-24 {i // 12:02d}:{i % 12 * 5:02d}:00,{200 + i}" for i in range(100)]
    later = [f"{20 + i / 10:.2f},2010-03-25 {i // 12:02d}:{i % 12 * 5:02d}:00,{'nil' if i == 40 else 150 + i}"
             for i in range(100)]
    (root / "cgm.csv").write_bytes(("isig,datetime,glucose\r\n" + "\r\n".join(first) + "\r\n"
                                    + "\n".join(later) + "\n").encode())
    dataset = Dataset.open(root, convert_dir=tmp_path / "conv")
    assert "all_varchar" in dataset.sources[0].converted["reader"]
    with AuditTools.open(dataset) as tools:
        rows = tools.run_query("SELECT count(*), typeof(any_value(isig)), typeof(any_value(datetime)), "
                               "typeof(any_value(glucose)), count(*) FILTER (WHERE glucose = 'nil') "
                               "FROM data").output["rows"]
    assert rows == [[200, "DOUBLE", "TIMESTAMP", "VARCHAR", 1]]


def test_tables_sharing_key_columns_stay_apart_and_a_partition_that_gained_a_column_stays_in(tmp_path):
    """allstar and salaries share three of five column names (their keys): two tables; orders-1
    gained a column over orders-0: one table with schema drift."""
    root = tmp_path / "league"
    root.mkdir()
    pq.write_table(pa.table({"playerID": ["a"], "yearID": [1990], "teamID": ["BOS"], "GP": [1]}),
                   root / "allstar.parquet")
    pq.write_table(pa.table({"yearID": [1990], "teamID": ["BOS"], "playerID": ["a"], "salary": [9]}),
                   root / "salaries.parquet")
    pq.write_table(pa.table({"id": [1], "total": [2.0]}), root / "orders-0.parquet")
    pq.write_table(pa.table({"id": [2], "total": [3.0], "coupon": ["x"]}), root / "orders-1.parquet")
    dataset = Dataset.open(root)
    assert sorted(dataset.table_names) == ["allstar", "orders", "salaries"]


def test_r_style_na_in_a_csv_is_a_null_of_a_typed_column_but_a_code_stays_text(tmp_path):
    """An R export writes NA for a missing number: the column is a DOUBLE with nulls (so its
    missing values are counted as such); a continent code 'NA' among other codes stays text."""
    root = tmp_path / "r"
    root.mkdir()
    lines = ["id,bill_length_mm,continent,year"] + [
        f"{i},{'NA' if i in (3, 271) else 39.1 + i % 9},{['NA', 'EU', 'AS'][i % 3]},{'NA' if i == 5 else 2007 + i % 3}"
        for i in range(344)]
    (root / "penguin_like.csv").write_text("\n".join(lines) + "\n")
    dataset = Dataset.open(root, convert_dir=tmp_path / "conv")
    with AuditTools.open(dataset) as tools:
        rows = tools.run_query(
            "SELECT typeof(any_value(bill_length_mm)), count(*) - count(bill_length_mm), "
            "typeof(any_value(continent)), count(*) FILTER (WHERE continent = 'NA'), "
            "typeof(any_value(year)), count(*) - count(year) FROM data").output["rows"]
    assert rows == [["DOUBLE", 2, "VARCHAR", 115, "BIGINT", 1]]


def test_a_csv_whose_sniffed_quoting_breaks_on_a_late_row_is_read_whole(tmp_path):
    """Text columns and, past the rows DuckDB sniffs, a quoted name with a comma (the UN's
    "China, Taiwan Province of China" at line 53,384): read by the whole-file reader, not a
    traceback."""
    root = tmp_path / "un"
    root.mkdir()
    taiwan = '"China, Taiwan Province of China"'
    lines = ["LocID,Location,Time,Sex,Value"] + [
        f"{i % 300},{taiwan if i == 24_000 else f'Place {i % 300}'},"
        f"{1950 + i % 150},{'Male' if i % 2 else 'Female'},{i * 3}" for i in range(25_000)]
    (root / "population.csv").write_text("\n".join(lines) + "\n")
    dataset = Dataset.open(root, convert_dir=tmp_path / "conv")
    assert "sample_size = -1" in dataset.sources[0].converted["reader"]
    with AuditTools.open(dataset) as tools:
        rows = tools.run_query("SELECT count(*), count(*) FILTER (WHERE Location LIKE 'China,%') "
                               "FROM data").output["rows"]
    assert rows == [[25_000, 1]]
