"""CPU seconds of a whole-corpus text query, pruned by the skipping index vs scanned, in process.

    .venv/bin/python bench/bench_skip_cpu.py /work/scale/tenth [--repeats 2]

The same work a worker does, without the sandbox, measured in CPU seconds of this process
(`time.process_time`): robust to a loaded machine, where wall-clock scans hit the 30 s limit.
Scan: one DuckDB connection (1 thread, 128 MiB) over `read_parquet` of the corpus files.
Pruned: `pruned.pruned_filings` (parse tree, candidate pages, reading them) + the same query over
the registered candidate rows. Results are checked equal.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

from parquet_agent.corpus.skipindex import SkipIndex
from parquet_agent.corpus.snapshot import CorpusSnapshot
from parquet_agent.tools.pruned import CandidateReader, pruned_filings

sys.path.insert(0, str(Path(__file__).parent))
from bench_skip import SHAPES, _company  # noqa: E402


def _con() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(config={"threads": 1, "memory_limit": "128MiB"})
    return con


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args(argv)
    folder = args.corpus.resolve()
    snapshot = CorpusSnapshot.take(folder)
    skip = SkipIndex.open(folder, snapshot.snapshot_id)
    files = {e.name: os.open(folder / e.name, os.O_RDONLY) for e in snapshot.files}
    reader = CandidateReader(files, {n: pq.read_metadata(folder / n) for n in files})
    paths = ", ".join(f"'{folder / n}'" for n in files)
    out = {"corpus": str(folder), "load_before": os.getloadavg(), "queries": []}
    for lit in [_company(folder), "going concern", "revenue"]:
        for shape, template in SHAPES.items():
            query = template.format(lit=lit.replace("'", "''"))
            scan_s, pruned_s, report = [], [], None
            for _ in range(args.repeats):
                con = _con()
                con.execute(f"CREATE VIEW filings AS SELECT * FROM read_parquet([{paths}])")
                t = time.process_time()
                expected = con.execute(query).fetchall()
                scan_s.append(time.process_time() - t)
                con = _con()
                t = time.process_time()
                table, report = pruned_filings(con, query, skip, reader)
                if table is None:
                    con.execute(f"CREATE VIEW filings AS SELECT * FROM read_parquet([{paths}])")
                else:
                    con.register("filings", table)
                got = con.execute(query).fetchall()
                pruned_s.append(time.process_time() - t)
                assert got == expected, (query, got, expected)
            s, p = statistics.median(scan_s), statistics.median(pruned_s)
            out["queries"].append({"literal": lit, "shape": shape, "scan_cpu_s": round(s, 3),
                                   "pruned_cpu_s": round(p, 3), "speedup": round(s / p, 1),
                                   "rows": expected, "skip_index": report.to_json()})
            print(json.dumps(out["queries"][-1]), file=sys.stderr, flush=True)
    out["load_after"] = os.getloadavg()
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
