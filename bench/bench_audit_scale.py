"""get_stats at scale inside the 128 MiB sandboxed worker: the bounded profile against the old
exact one.

    python bench/bench_audit_scale.py --rows 20000000 --work /tmp/bench-audit-scale

Writes one Parquet file of `--rows` rows (x: DOUBLE, N(0,1) with 20 NaN; id: BIGINT, unique;
tier: VARCHAR, 12 values), then, with the default sandbox limits (1 thread, 128 MiB, no spill,
20 CPU s, 30 s wall per call), runs `AuditTools.get_stats` on each column and, for comparison,
the two queries the profile ran before issue 23 (exact `quantile_cont` and an exact GROUP BY of
the top values). Prints a markdown table: per column, the seconds of get_stats, whether it
succeeded, what it said was approximate, its median against the exact one where that still ran,
and what the old queries gave.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from parquet_agent.audit.dataset import Dataset
from parquet_agent.audit.tools import AuditTools

OLD_QUANTILES = {"x": "SELECT quantile_cont(x, [0.01, 0.25, 0.5, 0.75, 0.99]) FROM data",
                 "id": "SELECT quantile_cont(id, [0.01, 0.25, 0.5, 0.75, 0.99]) FROM data",
                 "tier": "SELECT quantile_disc(length(tier), [0.01, 0.5, 0.99]) FROM data"}
OLD_TOP = ("SELECT left(CAST({c} AS VARCHAR), 100) AS value, count(*) AS n FROM data "
           "GROUP BY 1 ORDER BY n DESC, value NULLS FIRST LIMIT 10")


def build(folder: Path, rows: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "t.parquet"
    if path.exists() and pq.ParquetFile(path).metadata.num_rows == rows:
        return
    rng = np.random.default_rng(0)
    x = rng.standard_normal(rows)
    x[:: max(1, rows // 20)] = np.nan
    tiers = np.array([f"tier-{i:02d}" for i in range(12)])
    table = pa.table({"x": x, "id": np.arange(rows, dtype=np.int64),
                      "tier": pa.array(tiers[rng.integers(0, 12, rows)])})
    pq.write_table(table, path, row_group_size=1 << 20)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench-audit-scale"))
    args = parser.parse_args()
    build(args.work / "data", args.rows)
    dataset = Dataset.open(args.work / "data")
    print(f"{args.rows:,} rows, {dataset.snapshot.size / 2**20:.0f} MiB of Parquet\n")
    print("| column | get_stats s | ok | approximate | median | old exact quantiles | old top GROUP BY |")
    print("|---|---|---|---|---|---|---|")
    with AuditTools.open(dataset) as tools:
        for column in ("x", "id", "tier"):
            started = time.perf_counter()
            stats = tools.get_stats(column)
            seconds = time.perf_counter() - started
            old = [tools.run_query(OLD_QUANTILES[column]), tools.run_query(OLD_TOP.format(c=column))]
            shown = [("ok" if r.ok else r.error.kind) for r in old]
            values = (stats.output or {}).get("values") or {}
            median = (values.get("quantiles") or [None] * 5)[2]
            exact = old[0].output["rows"][0][0][2] if old[0].ok and column != "tier" else None
            approx = "; ".join((stats.output or {}).get("approximate") or []) or "none"
            text = "–" if median is None else f"{median:.4f}" + (
                f" (exact {exact:.4f})" if isinstance(exact, float) else "")
            print(f"| {column} | {seconds:.1f} | {stats.ok if stats.ok else stats.error.kind} | "
                  f"{approx} | {text} | {shown[0]} | {shown[1]} |")


if __name__ == "__main__":
    main()
