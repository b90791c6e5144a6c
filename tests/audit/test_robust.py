"""Ordinary data that used to break the audit (issue 23, item 8): each input gives a complete
audit (or a clearly named limit), never a traceback and never a silent zero. Small generated
files in tmp_path, the real offline auditor, real sandboxed workers."""

from __future__ import annotations

import decimal
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from parquet_agent.audit import Auditor
from parquet_agent.audit.config import AuditConfig
from parquet_agent.audit.dataset import Dataset
from parquet_agent.audit.tools import AuditTools
from parquet_agent.tools.sandbox import SandboxLimits

N = 200


def write(folder: Path, table: pa.Table, name: str = "t.parquet") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / name)
    return folder


def audit(folder: Path, tmp_path: Path, config: AuditConfig | None = None, **kw):
    return Auditor(config, store=tmp_path / "findings.sqlite").run(
        folder, run_dir=tmp_path / f"run-{folder.name}", **kw)


def by_title(report) -> dict:
    return {f.title: f for f in report.findings}


def test_nan_and_infinity_in_a_double_column(tmp_path):
    x = [float(i) for i in range(N)]
    x[3], x[50], x[90] = math.nan, math.inf, -math.inf
    report = audit(write(tmp_path / "nan", pa.table({"id": list(range(N)), "x": x})), tmp_path)
    assert report.status == "complete"
    found = by_title(report)["x holds NaN or infinity"]
    assert found.category == "validity" and found.evidence.count == 3
    with AuditTools.open(Dataset.open(tmp_path / "nan")) as tools:
        stats = tools.get_stats("x").output
    assert stats["non_finite"] == {"nan": 1, "pos_inf": 1, "neg_inf": 1}
    assert all(isinstance(v, float) for v in stats["values"]["quantiles"])
    assert stats["values"]["max"] == 199.0  # over the finite values


def test_decimal_38_0_is_profiled_as_numbers(tmp_path):
    values = [decimal.Decimal(1000 + i) for i in range(N)]
    values[7] = decimal.Decimal(10) ** 30  # an outlier seen only if the values are read as numbers
    table = pa.table({"id": list(range(N)), "d": pa.array(values, pa.decimal128(38, 0))})
    report = audit(write(tmp_path / "dec", table), tmp_path)
    assert report.status == "complete"
    assert by_title(report)["d isolated above its other values in data"].evidence.count == 1


def test_list_struct_and_map_columns_are_profiled_by_their_leaves(tmp_path):
    lists = [[i, i + 1] for i in range(N)]
    lists[4] = None
    structs = [{"a": i, "b": f"s{i % 4}"} for i in range(N)]
    structs[9] = None
    maps = pa.array([[("k", i)] for i in range(N)], pa.map_(pa.string(), pa.int64()))
    table = pa.table({"id": list(range(N)), "l": lists, "s": structs, "m": maps})
    report = audit(write(tmp_path / "nested", table), tmp_path)
    assert report.status == "complete"
    nulls = {f.columns: f.evidence.count for f in report.findings if f.category == "completeness"}
    assert nulls == {("l",): 1, ("s",): 1}
    with AuditTools.open(Dataset.open(tmp_path / "nested")) as tools:
        leaves = {c: [leaf["path"] for leaf in tools.get_stats(c).output["leaves"]]
                  for c in ("l", "s", "m")}
        l_stats = tools.get_stats("l").output
    assert leaves == {"l": ["l[]"], "s": ["s.a", "s.b"], "m": ["m{keys}", "m{values}"]}
    assert l_stats["values"]["max_length"] == 2


def test_case_colliding_names_are_two_columns(tmp_path):
    region = [f"r{i % 5}" for i in range(N)]
    region[1] = region[2] = None
    table = pa.table({"region": region, "Region": [f"R{i % 3}" for i in range(N)]})
    report = audit(write(tmp_path / "case", table), tmp_path)
    nulls = [(f.columns, f.evidence.count) for f in report.findings if f.category == "completeness"]
    assert nulls == [(("region",), 2)]  # not a second, false one on Region
    dataset = Dataset.open(tmp_path / "case")
    assert dataset.column_names == ("region", "Region_1")
    with AuditTools.open(dataset) as tools:
        upper = tools.get_stats("Region_1").output
    assert upper["nulls"] == 0 and {v["value"] for v in upper["top_values"]} == {"R0", "R1", "R2"}


def test_reserved_column_names_do_not_stop_the_audit(tmp_path):
    table = pa.table({"file_row_number": [10 * i for i in range(N)], "_file": ["x"] * N,
                      "_row": list(range(N)), "v": [None if i == 5 else i for i in range(N)]})
    report = audit(write(tmp_path / "reserved", table), tmp_path)
    assert report.status == "complete"
    found = by_title(report)["v is null"]
    assert found.evidence.examples[0]["_row"] == 5 and found.evidence.examples[0]["_file"] == "t.parquet"
    assert Dataset.open(tmp_path / "reserved").column_names == (
        "file_row_number", "_file_1", "_row_1", "v")


def test_an_empty_file_audits_and_resumes(tmp_path):
    empty = pa.table({"id": pa.array([], pa.int64()), "name": pa.array([], pa.string())})
    folder = write(tmp_path / "empty", empty)
    report = audit(folder, tmp_path)
    assert report.status == "complete"
    again = audit(folder, tmp_path, resume=True)
    assert again.status == "complete"
    csv = tmp_path / "header.csv"
    csv.write_text("id,name\n")  # a header and no row
    assert audit(csv, tmp_path).status == "complete"


def test_an_empty_partition_beside_full_ones(tmp_path):
    folder = tmp_path / "parts"
    for part in range(3):
        rows = 0 if part == 1 else 50
        write(folder, pa.table({"id": pa.array(range(rows), pa.int64())}), f"p{part}.parquet")
    report = audit(folder, tmp_path)
    assert report.status == "complete"
    assert [f.title for f in report.findings if f.category == "volume"] == ["p1.parquet has too few rows"]


def test_the_step_budget_is_sized_to_the_schema(tmp_path):
    columns = 64  # over the former fixed budget of 60 steps
    table = pa.table({f"c{i}": [j % (i + 2) for j in range(20)] for i in range(columns)})
    report = audit(write(tmp_path / "wide", table), tmp_path)
    assert report.status == "complete"
    profiled = {s.arguments["column"] for s in report.steps if s.tool == "get_stats"}
    assert len(profiled) == columns


def test_a_budget_set_too_small_names_its_knob(tmp_path):
    table = pa.table({f"c{i}": list(range(20)) for i in range(6)})
    report = audit(write(tmp_path / "small", table), tmp_path, AuditConfig(max_steps=3))
    assert report.status == "incomplete"
    assert "[audit] max_steps = 3" in report.reason


def test_get_stats_stays_inside_a_small_worker_memory(tmp_path):
    """The memory-bounded path: 300,000 distinct values under a 16 MiB DuckDB limit (the exact
    GROUP BY and quantile_cont ran out of memory there), with what was approximate said."""
    import numpy as np

    n = 300_000
    x = np.random.default_rng(1).standard_normal(n)
    table = pa.table({"x": x, "s": [f"key-{i % 200_000:09d}" for i in range(n)]})
    dataset = Dataset.open(write(tmp_path / "big", table))
    with AuditTools.open(dataset, limits=SandboxLimits(memory_limit="16MiB")) as tools:
        stats = {column: tools.get_stats(column) for column in ("x", "s")}
    for result in stats.values():
        assert result.ok, result.error
        assert result.output["rows"] == n and result.output["approximate"]
    assert abs(stats["x"].output["values"]["quantiles"][2]) < 0.05  # the median of N(0, 1)
    assert stats["x"].output["top_values_skipped"].startswith("near-unique")
    top = stats["s"].output["top_values"]  # 100,000 keys twice: candidates sketched, counted
    assert len(top) == 10 and {t["n"] for t in top} == {2}


@pytest.mark.slow
def test_two_million_rows_inside_the_128_mib_worker(tmp_path):
    import numpy as np

    n = 2_000_000
    x = np.random.default_rng(0).standard_normal(n)
    x[::100_000] = np.nan  # 20 real findings the former out-of-memory profile never reached
    report = audit(write(tmp_path / "two-million", pa.table({"x": x})), tmp_path)
    assert report.status == "complete"
    assert by_title(report)["x holds NaN or infinity"].evidence.count == 20


def test_an_empty_annotation_is_not_a_missing_value(tmp_path):
    """A notes column is null where there is nothing to note; a null amount is missing."""
    table = pa.table({"id": list(range(N)), "amount": [None if i in (3, 9) else i * 1.5 for i in range(N)],
                      "notes": ["late" if i % 40 == 0 else None for i in range(N)],
                      "needed_note": [None] * (N - 1) + ["special election"]})
    titles = set(by_title(audit(write(tmp_path / "notes", table), tmp_path)))
    assert "amount is null" in titles
    assert not {"notes is null", "needed_note is null"} & titles
