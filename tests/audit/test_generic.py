"""Any Parquet dataset, not only the filings corpus: the generic planter's defects, audited by
the blind baseline and scored."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from parquet_agent.audit import Auditor
from parquet_agent.audit.planter import plant
from parquet_agent.audit.scoring import score


def test_generic_dataset_planted_audited_scored(tmp_path):
    clean = tmp_path / "orders"
    clean.mkdir()
    for part in range(3):
        rows = [{"order_id": f"o{part}-{i:04d}", "customer": f"c{i % 9}",
                 "amount": float(20 + (i * 37) % 50)} for i in range(80)]
        pq.write_table(pa.Table.from_pylist(rows), clean / f"part-{part}.parquet")
    manifest = plant(clean, tmp_path / "dirty", seed=4, rate=0.05)
    assert {d["id"] for d in manifest["defects"]} == {
        "null_value", "scale_error", "null_key", "half_file", "type_change"}
    before = Auditor(store=tmp_path / "f.sqlite").run(clean, run_dir=tmp_path / "a0", lineage="orders")
    after = Auditor(store=tmp_path / "f.sqlite").run(tmp_path / "dirty", run_dir=tmp_path / "a1",
                                                     lineage="orders")
    result = score(after, manifest, clean=before)
    found = {d for ids in result.matches.values() for d in ids}
    assert {"null_value", "null_key", "scale_error", "type_change"} <= found
    assert result.overall["precision"] >= 0.8
