"""CPU seconds of a whole-corpus text query, pruned by the skipping index vs scanned, in process.

    .venv/bin/python bench/bench_skip_cpu.py /work/scale/tenth [--repeats 3] [--only company ...] [--shape ilike ...]

The same work a worker does, without the sandbox, measured in CPU seconds of this process
(`time.process_time`): robust to a loaded machine, where wall-clock scans hit the 30 s limit.
Scan: one DuckDB connection (1 thread, 128 MiB) over `read_parquet` of the corpus files.
Pruned: `pruned.pruned_filings` (parse tree, candidate pages, reading them) + the same query over
the registered candidate rows, or over the files when it decides to scan. The two sides run
interleaved, `--repeats` times, the side that goes first alternating; results are checked equal.
Sections (`--only`, default all): `company` (a selective literal), `rare` ("going concern"),
`common` ("revenue"), `unprunable` (no condition on parsed_md the index can use). Each query
also reports `decision_cpu_s`: the median CPU of `pruned_filings` alone (parse tree, candidates
and, when pruned, reading them); for a query that then scans, that is all the index adds (the
overhead, without the scan's noise).
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
from bench_skip import SHAPES, UNPRUNABLE, _company  # noqa: E402

SECTIONS = ("company", "rare", "common", "unprunable")


def _con() -> duckdb.DuckDBPyConnection:
    return duckdb.connect(config={"threads": 1, "memory_limit": "128MiB"})


class _Sides:
    """The scan and the pruned way of running one query, each timed in CPU seconds."""

    def __init__(self, skip: SkipIndex, reader: CandidateReader, paths: str):
        self.skip, self.reader, self.paths = skip, reader, paths

    def scan(self, query: str) -> tuple[float, list]:
        con = _con()
        t = time.process_time()  # the view's binding (footers) counted, as on the pruned side
        con.execute(f"CREATE VIEW filings AS SELECT * FROM read_parquet([{self.paths}])")
        rows = con.execute(query).fetchall()
        return time.process_time() - t, rows

    def pruned(self, query: str) -> tuple[float, float, list, dict]:
        con = _con()
        t = time.process_time()
        table, report = pruned_filings(con, query, self.skip, self.reader)
        decided = time.process_time() - t
        if table is None:
            con.execute(f"CREATE VIEW filings AS SELECT * FROM read_parquet([{self.paths}])")
        else:
            con.register("filings", table)
        rows = con.execute(query).fetchall()
        return time.process_time() - t, decided, rows, report.to_json()


def _measure(sides: _Sides, query: str, repeats: int) -> dict:
    scan_s, pruned_s, decided_s, report, expected = [], [], [], None, None
    for i in range(repeats):
        first_scan = i % 2 == 0  # alternate who goes first: neither side always finds caches warm
        if first_scan:
            s, expected = sides.scan(query)
        p, d, got, report = sides.pruned(query)
        if not first_scan:
            s, expected = sides.scan(query)
        assert got == expected, (query, got, expected)
        scan_s.append(round(s, 3))
        pruned_s.append(round(p, 3))
        decided_s.append(round(d, 4))
    s, p = round(statistics.median(scan_s), 3), round(statistics.median(pruned_s), 3)
    return {"scan_cpu_s": s, "pruned_cpu_s": p, "speedup": round(s / p, 2),
            "pruned_over_scan": round(p / s - 1, 4), "decision_cpu_s": round(statistics.median(decided_s), 4),
            "scan_runs": scan_s, "pruned_runs": pruned_s, "rows": expected, "skip_index": report}


def _queries(folder: Path, only: list[str], shapes: list[str]) -> list[tuple[str, str, str]]:
    """(section, label, query) for the chosen sections and shapes (or unprunable query names)."""
    literals = {"company": _company(folder), "rare": "going concern", "common": "revenue"}
    out = []
    for section in only:
        if section == "unprunable":
            out += [(section, name, q) for name, q in UNPRUNABLE.items() if name in shapes]
            continue
        lit = literals[section]
        out += [(section, f"{lit} / {shape}", t.format(lit=lit.replace("'", "''")))
                for shape, t in SHAPES.items() if shape in shapes]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--only", action="append", choices=SECTIONS, help="section(s) to run (default: all)")
    ap.add_argument("--shape", action="append", choices=[*SHAPES, *UNPRUNABLE],
                    help="query shape(s) / unprunable query name(s) to run (default: all)")
    ap.add_argument("--out", type=Path, help="also write the JSON here after each query")
    args = ap.parse_args(argv)
    folder = args.corpus.resolve()
    snapshot = CorpusSnapshot.take(folder)
    skip = SkipIndex.open(folder, snapshot.snapshot_id)
    files = {e.name: os.open(folder / e.name, os.O_RDONLY) for e in snapshot.files}
    reader = CandidateReader(files, {n: pq.read_metadata(folder / n) for n in files})
    sides = _Sides(skip, reader, ", ".join(f"'{folder / n}'" for n in files))
    out = {"corpus": str(folder), "pages": skip.count, "repeats": args.repeats,
           "load_before": os.getloadavg(), "queries": []}
    for section, label, query in _queries(folder, args.only or list(SECTIONS), args.shape or [*SHAPES, *UNPRUNABLE]):
        out["queries"].append({"section": section, "label": label, "query": query,
                               **_measure(sides, query, args.repeats), "load": os.getloadavg()})
        print(json.dumps(out["queries"][-1]), file=sys.stderr, flush=True)
        if args.out:
            args.out.write_text(json.dumps(out, indent=2))
    out["load_after"] = os.getloadavg()
    if args.out:
        args.out.write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
