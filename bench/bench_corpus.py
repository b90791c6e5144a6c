"""Corpus benchmarks: prepare throughput and peak RSS, index build, and single-filing reads
through the index vs `WHERE file_stem = ...` in the plain-export and the prepared layouts.

    .venv/bin/python bench/bench_corpus.py --corpus /work/scale/tenth --work /work/scale/tenth-bench

`--corpus` is a built corpus (`corpus build`, tool-ready). The script, in one run:
1. writes the same rows as a plain pandas/pyarrow-style export (shuffled, ONE row group per
   monthly file) into WORK/plain (months already there are kept);
2. runs `parquet-agent corpus prepare WORK/plain --out WORK/prepared` in a child process:
   wall time, rows/s, MB/s (Parquet in and Markdown), peak RSS of the child;
3. runs `parquet-agent corpus index` on WORK/prepared in a child: time and peak RSS;
4. reads N random filings, each variant in a fresh child process:
   - `index`: CorpusIndex.locate + pyarrow read_row_group(parsed_md) of the prepared layout;
   - `duckdb-prepared`: `SELECT parsed_md ... WHERE file_stem = ?` over WORK/prepared, worker
     config (1 thread, memory_limit 128 MiB, no spill);
   - `duckdb-plain`: the same over WORK/plain with the worker config, then with 2 GiB;
   medians, p90, peak RSS and errors;
5. one page of a header search on `_index/headers.parquet` (company_norm contains).
Results go to WORK/bench_corpus.json and a Markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

from parquet_agent.files import claim_folder

PY = sys.executable


def _child(code: str, *args: str) -> dict:
    """Run `code` in a fresh interpreter; it prints one JSON line (with its own peak RSS)."""
    proc = subprocess.run([PY, "-c", code, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"child failed: {proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


_TIMED_CMD = r"""
import json, resource, sys, time, subprocess
# this small parent forks the command: the child's ru_maxrss starts from the parent's (~10 MiB)
t = time.perf_counter()
p = subprocess.run(sys.argv[1:], capture_output=True, text=True)
dt = time.perf_counter() - t
print(p.stdout[-2000:], file=sys.stderr)
if p.returncode: print(p.stderr[-3000:], file=sys.stderr); sys.exit(p.returncode)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"seconds": dt, "cpu_seconds": ru.ru_utime + ru.ru_stime, "peak_rss_mib": ru.ru_maxrss / 1024}))
"""


def timed_command(*cmd: str) -> dict:
    """Wall time and peak RSS of one command (measured by a fresh parent that runs only it)."""
    proc = subprocess.run([PY, "-c", _TIMED_CMD, *cmd], capture_output=True, text=True)
    sys.stderr.write(proc.stderr[-2000:])
    if proc.returncode:
        raise SystemExit(f"command failed: {' '.join(cmd)}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def write_plain(src: Path, dst: Path, seed: int = 0) -> dict:
    """Same rows as `src`, each monthly file written as ONE row group in shuffled order.

    The shuffle permutes the source row groups and the rows inside each, so the file is not
    sorted by file_stem and holds the month's Markdown once in memory (a full shuffle would hold
    it twice: about 11 GB for the largest month at full scale)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    dst.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    started = time.perf_counter()
    for path in sorted(src.glob("*.parquet")):
        if (dst / path.name).exists():  # resumable: a month already written is kept
            continue
        pf = pq.ParquetFile(path)
        groups = list(range(pf.num_row_groups))
        rng.shuffle(groups)
        parts = []
        for g in groups:
            part = pf.read_row_group(g)
            order = list(range(part.num_rows))
            rng.shuffle(order)
            parts.append(part.take(order))
        table = pa.concat_tables(parts)
        del parts
        tmp = dst / f".{path.name}.tmp"
        pq.write_table(table, tmp, row_group_size=table.num_rows, compression="zstd")
        tmp.rename(dst / path.name)
        del table
    return {"seconds": time.perf_counter() - started}


_LOOKUP = r"""
import json, sys, time, statistics
mode, folder, stems = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
times, errors, nbytes = [], [], 0
if mode == "index":
    import pyarrow.parquet as pq
    from parquet_agent.corpus.index import CorpusIndex
    index = CorpusIndex.open(folder)
    index.locate(stems[0])  # load the index once, as a long-lived worker would
    for s in stems:
        t = time.perf_counter()
        loc = index.locate(s)
        group = pq.ParquetFile(loc.path).read_row_group(loc.row_group, columns=["parsed_md"])
        text = group.column(0)[loc.row_in_group].as_py()
        times.append((time.perf_counter() - t) * 1000)
        nbytes += len(text)
else:
    import duckdb
    limit = sys.argv[4]
    con = duckdb.connect(config={"threads": 1, "memory_limit": limit, "temp_directory": ""})
    for s in stems:
        t = time.perf_counter()
        try:
            (text,) = con.execute(
                f"SELECT parsed_md FROM read_parquet('{folder}/*.parquet') WHERE file_stem = ?", [s]
            ).fetchone()
            nbytes += len(text)
            times.append((time.perf_counter() - t) * 1000)
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {str(exc)[:160]}")
            if len(errors) >= 3:
                break
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent across fork + exec
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
out = {"mode": mode, "n": len(times), "errors": len(errors), "first_error": errors[0] if errors else None,
       "peak_rss_mib": hwm / 1024, "chars": nbytes}
if times:
    ts = sorted(times)
    out |= {"median_ms": statistics.median(ts), "p90_ms": ts[int(0.9 * (len(ts) - 1))]}
print(json.dumps(out))
"""

_HEADERS = r"""
import json, sys, time, statistics, duckdb
path, words = sys.argv[1], json.loads(sys.argv[2])
con = duckdb.connect(config={"threads": 1, "memory_limit": "128MB"})
times = []
for w in words * 3:
    t = time.perf_counter()
    con.execute(f"SELECT count(*) FROM read_parquet('{path}') WHERE contains(company_norm, ?)", [w]).fetchone()
    con.execute(f"SELECT file_stem, company, form_type, period, filing_date, cik, file FROM read_parquet('{path}') "
                "WHERE contains(company_norm, ?) ORDER BY file_stem LIMIT 20 OFFSET 0", [w]).fetchall()
    times.append((time.perf_counter() - t) * 1000)
print(json.dumps({"median_ms": statistics.median(times), "p90_ms": sorted(times)[int(0.9 * (len(times) - 1))], "n": len(times)}))
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True, type=Path)
    ap.add_argument("--work", required=True, type=Path)
    ap.add_argument("--lookups", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--skip-plain-2gib", action="store_true")
    args = ap.parse_args()
    import pyarrow.parquet as pq

    work: Path = args.work
    # new, empty or an earlier run's of this script (only its own entries replaced)
    claim_folder(work, "bench/bench_corpus.py", clear=("plain", "prepared", "bench_corpus.json"))
    results: dict = {"corpus": str(args.corpus), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    files = sorted(args.corpus.glob("*.parquet"))
    rows = sum(pq.ParquetFile(p).metadata.num_rows for p in files)
    results["rows"] = rows
    results["corpus_bytes"] = sum(p.stat().st_size for p in files)

    plain = work / "plain"
    results["write_plain"] = write_plain(args.corpus, plain)
    results["plain_bytes"] = sum(p.stat().st_size for p in plain.glob("*.parquet"))
    results["plain_row_groups"] = sum(pq.ParquetFile(p).metadata.num_row_groups for p in plain.glob("*.parquet"))

    prepared = work / "prepared"
    cli = [PY, "-m", "parquet_agent", "corpus"]
    results["prepare"] = timed_command(*cli, "prepare", str(plain), "--out", str(prepared), "--no-index")
    text_bytes = sum(
        pq.ParquetFile(p).metadata.row_group(g).column(4).total_uncompressed_size
        for p in prepared.glob("*.parquet") for g in range(pq.ParquetFile(p).metadata.num_row_groups)
    )
    s = results["prepare"]["seconds"]
    results["prepare"] |= {
        "rows_per_s": rows / s,
        "parquet_in_mb_per_s": results["plain_bytes"] / s / 1e6,
        "markdown_mb_per_s": text_bytes / s / 1e6,
        "markdown_bytes": text_bytes,
        "prepared_bytes": sum(p.stat().st_size for p in prepared.glob("*.parquet")),
        "prepared_row_groups": sum(pq.ParquetFile(p).metadata.num_row_groups for p in prepared.glob("*.parquet")),
    }
    results["index"] = timed_command(*cli, "index", str(prepared))
    results["index"]["rows_per_s"] = rows / results["index"]["seconds"]
    info = json.loads((prepared / "_index" / "index.json").read_text())
    results["index"]["headers_parsed"] = info["headers_parsed"]
    results["index"]["bytes"] = {
        p.name: p.stat().st_size for p in (prepared / "_index").glob("*.parquet")
    }

    stems = pq.read_table(prepared / "_index" / "index.parquet", columns=["file_stem"])["file_stem"].to_pylist()
    pick = json.dumps(random.Random(args.seed).sample(stems, args.lookups))
    lookups = {}
    lookups["index"] = _child(_LOOKUP, "index", str(prepared), pick)
    lookups["duckdb-prepared-128MiB"] = _child(_LOOKUP, "duckdb", str(prepared), pick, "128MB")
    lookups["duckdb-plain-128MiB"] = _child(_LOOKUP, "duckdb", str(plain), pick, "128MB")
    if not args.skip_plain_2gib:
        few = json.dumps(json.loads(pick)[: max(3, args.lookups // 4)])
        lookups["duckdb-plain-2GiB"] = _child(_LOOKUP, "duckdb", str(plain), few, "2GB")
    results["lookups"] = lookups

    names = pq.read_table(prepared / "_index" / "headers.parquet", columns=["company_norm"])["company_norm"]
    words = [w.split()[0] for w in random.Random(args.seed).sample([n for n in names.to_pylist() if n], 5)]
    results["header_search_page"] = _child(_HEADERS, str(prepared / "_index" / "headers.parquet"), json.dumps(words))

    (work / "bench_corpus.json").write_text(json.dumps(results, indent=2) + "\n")
    p, ix = results["prepare"], results["index"]
    load = os.getloadavg()
    results["loadavg_at_end"] = load
    print(f"\n### {rows:,} rows, corpus {results['corpus_bytes'] / 2**20:,.0f} MiB ({args.corpus}); "
          f"load average at end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}\n")
    print("| step | wall | CPU | throughput (wall) | peak RSS |\n|---|---|---|---|---|")
    print(f"| prepare (plain, {results['plain_row_groups']} row groups → {p['prepared_row_groups']} byte-capped) "
          f"| {p['seconds']:.1f} s | {p['cpu_seconds']:.1f} s | {p['rows_per_s']:,.0f} rows/s, "
          f"{p['parquet_in_mb_per_s']:.1f} MB/s Parquet in, {p['markdown_mb_per_s']:.1f} MB/s Markdown "
          f"| {p['peak_rss_mib']:,.0f} MiB |")
    print(f"| index (+ header parse) | {ix['seconds']:.1f} s | {ix['cpu_seconds']:.1f} s | {ix['rows_per_s']:,.0f} rows/s "
          f"| {ix['peak_rss_mib']:,.0f} MiB |")
    print("\n| single-filing read | median | p90 | peak RSS | errors |\n|---|---|---|---|---|")
    for name, r in lookups.items():
        med = f"{r['median_ms']:.1f} ms" if "median_ms" in r else "—"
        p90 = f"{r['p90_ms']:.1f} ms" if "p90_ms" in r else "—"
        err = f"{r['errors']} ({r['first_error']})" if r["errors"] else "0"
        print(f"| {name} (n={r['n']}) | {med} | {p90} | {r['peak_rss_mib']:,.0f} MiB | {err} |")
    h = results["header_search_page"]
    print(f"\nheader search (count + one page, company_norm contains): median {h['median_ms']:.1f} ms, p90 {h['p90_ms']:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
