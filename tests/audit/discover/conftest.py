"""Discovery runs over real Parquet files through the real sandboxed audit tools."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from parquet_agent.audit.dataset import Dataset
from parquet_agent.audit.discover import Discovery, discover
from parquet_agent.audit.discover.scope import tables_of
from parquet_agent.audit.tools import AuditTools


def write_tables(folder: Path, tables: dict[str, list[dict]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in tables.items():
        pq.write_table(pa.Table.from_pylist(rows), folder / f"{name}.parquet")
    return folder


def run_discovery(folder: Path) -> Discovery:
    dataset = Dataset.open(folder)
    with AuditTools.open(dataset) as tools:
        return discover(tools, tables_of(dataset))


def reported(found: Discovery, rule: str | None = None) -> list:
    return [c for c in found.candidates if c.report and (rule is None or c.rule == rule)]


@pytest.fixture
def shop(tmp_path: Path):
    """customers / orders / products, clean, and a builder of damaged copies."""
    def build(name: str, *, dup_customer=False, orphans=0) -> Path:
        customers = [{"customer_id": f"C{i:04d}", "name": f"Person {i % 40}", "city": f"Town {i % 7}"}
                     for i in range(120)]
        if dup_customer:
            customers[5]["customer_id"] = customers[6]["customer_id"]
        products = [{"sku": f"P-{i:03d}", "label": f"Product number {i}"} for i in range(30)]
        orders = [{"order_id": i, "customer_id": f"C{(i * 7) % 120:04d}", "sku": f"P-{(i * 11) % 30:03d}",
                   "qty": 1 + i % 5} for i in range(400)]
        for k in range(orphans):
            orders[10 + k * 13]["customer_id"] = f"X{k:04d}"
        return write_tables(tmp_path / name, {"customers": customers, "products": products,
                                              "orders": orders})
    return build
