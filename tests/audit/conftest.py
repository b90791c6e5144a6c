"""Small real datasets for the audit tests: Parquet files in tmp_path, read by real workers.

`filings_dir`: a 3-file filings corpus (120 rows, plain pyarrow files, no sidecar index);
`generic_dir`: two files of another schema (orders), to show any Parquet folder is auditable;
`unpack_audit`: a checked-in audit folder of an older main, unpacked.
"""

from __future__ import annotations

import gzip
import hashlib
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.tools.conftest import filing

FILINGS_ROWS = 120


def filings_rows(month: int) -> list[dict]:
    rows = []
    for i in range(FILINGS_ROWS):
        if 1 + i % 3 != month:
            continue
        row = filing(i)
        row["month"] = month
        rows.append(row)
    return rows


def write_filings(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for month in (1, 2, 3):
        pq.write_table(pa.Table.from_pylist(filings_rows(month)), folder / f"2025-{month:02d}.parquet")
    return folder


def write_orders(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for part in (0, 1):
        rows = [{"order_id": part * 100 + i, "customer": f"c{i % 7}", "amount": float(10 + i),
                 "sku": hashlib.md5(str(i).encode()).hexdigest()[:8]} for i in range(50)]
        if part == 1:
            rows[3]["amount"] = None
            rows[4]["order_id"] = rows[5]["order_id"]  # a duplicate key
        pq.write_table(pa.Table.from_pylist(rows), folder / f"orders-{part}.parquet")
    return folder


def unpack_audit(fixture: Path, into: Path) -> Path:
    """A checked-in audit folder (tests/audit/fixtures/audit-main-*: its journal and findings
    gzipped) unpacked under `into`, as the main that wrote it left it."""
    folder = into / fixture.name
    (folder / "journal").mkdir(parents=True)
    shutil.copy(fixture / "manifest.json", folder / "manifest.json")
    for name in ("journal/audit.jsonl", "findings.json"):
        (folder / name).write_bytes(gzip.decompress((fixture / f"{name}.gz").read_bytes()))
    return folder


@pytest.fixture
def filings_dir(tmp_path: Path) -> Path:
    return write_filings(tmp_path / "filings")


@pytest.fixture
def orders_dir(tmp_path: Path) -> Path:
    return write_orders(tmp_path / "orders")
