"""Benchmarks of the tools over one corpus folder, measured side by side in one run.

    python bench/bench_tools.py CORPUS_DIR [--repeats 20] [--json OUT.json] [--plain-dir DIR]
    python bench/bench_tools.py CORPUS_DIR --placements-only [--repeats 40]

Measures (medians; p50 = median of per-call times):
- scoped read of one filing (`sql` with file_stem, and `read_filing`) vs the floor: the same
  row group read directly with pyarrow in this process (locate + open + read_row_group); also
  the filing's Markdown read in this process from its own data page (what a worker does, without
  the sandbox);
- the scoped read vs a plain `WHERE file_stem = ?` over the same rows in the plain-export layout
  (one row group per file), with DuckDB unlimited and under the worker's 128 MiB limit;
- pool overhead per call: a trivial `sql` call (`SELECT 1`), fork + harden + lock + gate + answer;
- `search_headers` page: end to end, the search alone (HeaderSearch in process), and the same
  search over `parsed_md` through the `sql` tool;
- unscoped `sql` over a corpus folder the worker uid can traverse vs one it cannot
  (`--placements-only`; as root: 0755 vs 0700, like /srv vs /root);
- peak memory per worker (rusage) and of the whole process tree (RSS and PSS) under a busy run
  of 4 threads calling mixed tools.

The plain-export copy is written under --plain-dir (default: a temporary folder) and removed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import psutil
import pyarrow.parquet as pq

from parquet_agent.corpus.index import CorpusIndex
from parquet_agent.corpus.pages import column_format, read_cell
from parquet_agent.files import claim_folder
from parquet_agent.tools import Tools
from parquet_agent.tools.lookup import HEADER_COLUMNS, INDEX_COLUMNS, HeaderSearch, RowIndex

SCHEMA_VERSION = 1


def p50(values: list[float]) -> float:
    return round(statistics.median(values), 2) if values else float("nan")


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000


def cpu_timed(fn) -> float:
    t = time.process_time()
    fn()
    return (time.process_time() - t) * 1000


def worker_cpu(tools: Tools, tool: str, args: dict) -> tuple[float, dict]:
    """The worker child's own CPU ms and phase times for one call.

    Uses the sandbox's raw answer (`SharedSandbox.run`): ToolResult carries wall times only. On
    a shared, loaded machine wall times include waiting for a CPU; CPU times compare like with
    like.
    """
    answer = tools.sandbox.run(tool, args)
    return answer.data.get("cpu_s", 0.0) * 1000, answer.data.get("phases_ms", {})


def floor_read(index: CorpusIndex, stem: str, columns: list[str] | None, footers: dict) -> None:
    """The floor: locate, then pyarrow reads the row group (footers parsed once, as a worker has them)."""
    loc = index.locate(stem)
    handle = pq.ParquetFile(loc.path, metadata=footers[loc.file], pre_buffer=False)
    handle.read_row_group(loc.row_group, columns=columns, use_threads=False).slice(loc.row_in_group, 1)


def page_read(rows: RowIndex, corpus: Path, stem: str, footers: dict) -> None:
    """Locate + read + decode one filing's Markdown page (footers parsed once, as a worker has them)."""
    found = rows.locate(stem)
    meta = footers[found.file]
    codec, nullable = column_format(meta, found.row_group, meta.schema.to_arrow_schema().get_field_index("parsed_md"))
    fd = os.open(corpus / found.file, os.O_RDONLY)
    try:
        read_cell(fd, *found.page, codec=codec, nullable=nullable).decode()
    finally:
        os.close(fd)


def scoped_reads(tools: Tools, index: CorpusIndex, stems: list[str]) -> dict:
    rows = RowIndex(pq.read_table(index.index_path, columns=list(INDEX_COLUMNS)))
    footers = {p.name: pq.read_metadata(p) for p in index.folder.glob("*.parquet")}
    page = [timed(lambda: page_read(rows, index.folder, stem, footers)) for stem in stems if rows.locate(stem).page]
    floor_all, floor_md, scoped, reads, errors = [], [], [], [], []
    floor_cpu, scoped_cpu, read_cpu = [], [], []
    phases: dict[str, dict[str, list[float]]] = {"sql": {}, "read_filing": {}}
    for stem in stems:
        floor_all.append(timed(lambda: floor_read(index, stem, None, footers)))
        floor_md.append(timed(lambda: floor_read(index, stem, ["file_stem", "parsed_md"], footers)))
        floor_cpu.append(cpu_timed(lambda: floor_read(index, stem, None, footers)))
        cpu, spent = worker_cpu(tools, "sql", {"query": "SELECT length(parsed_md) AS n FROM filing", "file_stem": stem})
        scoped_cpu.append(cpu)
        for phase, ms in spent.items():
            phases["sql"].setdefault(phase, []).append(ms)
        cpu, spent = worker_cpu(tools, "read_filing", {"file_stem": stem, "start": 0, "max_chars": 4000, "pattern": None})
        read_cpu.append(cpu)
        for phase, ms in spent.items():
            phases["read_filing"].setdefault(phase, []).append(ms)
        r = tools.call("sql", query="SELECT length(parsed_md) AS n FROM filing", file_stem=stem)
        (scoped if r.ok else errors).append(r.timings.total_ms if r.ok else r.error.kind)
        r = tools.call("read_filing", file_stem=stem, max_chars=4000)
        (reads if r.ok else errors).append(r.timings.total_ms if r.ok else r.error.kind)
    out = {
        "floor_all_columns_ms_p50": p50(floor_all),
        "floor_text_ms_p50": p50(floor_md),
        "page_read_in_process_ms_p50": p50(page),
        "scoped_sql_ms_p50": p50(scoped),
        "read_filing_ms_p50": p50(reads),
        "floor_all_columns_cpu_ms_p50": p50(floor_cpu),
        "scoped_sql_worker_cpu_ms_p50": p50(scoped_cpu),
        "read_filing_worker_cpu_ms_p50": p50(read_cpu),
        "worker_phases_ms_p50": {tool: {k: p50(v) for k, v in spent.items()} for tool, spent in phases.items()},
        "errors": errors,
    }
    out["scoped_sql_cpu_vs_floor_cpu"] = round(out["scoped_sql_worker_cpu_ms_p50"] / out["floor_all_columns_cpu_ms_p50"], 2)
    out["scoped_sql_vs_floor"] = round(out["scoped_sql_ms_p50"] / out["floor_all_columns_ms_p50"], 2)
    out["read_filing_vs_floor"] = round(out["read_filing_ms_p50"] / out["floor_text_ms_p50"], 2)
    return out


def write_plain_export(corpus: Path, out: Path) -> list[Path]:
    """The same rows as a plain pandas/pyarrow export: random order, one row group per file."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, path in enumerate(sorted(corpus.glob("*.parquet"))):
        table = pq.read_table(path)
        order = list(range(table.num_rows))
        random.Random(i).shuffle(order)
        target = out / path.name
        pq.write_table(table.take(order), target, compression="zstd", row_group_size=max(1, table.num_rows))
        paths.append(target)
        del table
    return paths


def plain_lookups(paths: list[Path], stems: list[str], limit: str | None) -> dict:
    config = {"threads": 1}
    if limit:
        config.update(memory_limit=limit, temp_directory="", max_temp_directory_size="0B")
    con = duckdb.connect(config=config)
    files = "[" + ", ".join(f"'{p}'" for p in paths) + "]"
    times, errors = [], []
    for stem in stems:
        t = time.perf_counter()
        try:
            con.execute(f"SELECT length(parsed_md) FROM read_parquet({files}) WHERE file_stem = ?", [stem]).fetchall()
            times.append((time.perf_counter() - t) * 1000)
        except duckdb.Error as exc:
            errors.append(f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}")
    con.close()
    return {"ms_p50": p50(times), "ok": len(times), "failed": len(errors), "first_error": errors[0] if errors else None}


def trivial_calls(tools: Tools, n: int) -> dict:
    times = [tools.call("sql", query=f"SELECT {i} AS x").timings.total_ms for i in range(n)]
    cpu = [worker_cpu(tools, "sql", {"query": f"SELECT {i} AS x", "file_stem": None})[0] for i in range(n)]
    return {"ms_p50": p50(times), "ms_p90": round(sorted(times)[int(n * 0.9) - 1], 2), "calls": n,
            "worker_cpu_ms_p50": p50(cpu)}


def placements(corpus: Path, repeats: int) -> dict:
    """Unscoped `sql` over the same files placed where the worker uid can and cannot traverse
    (as root: a 0755 folder vs a 0700 one, like /srv vs /root), interleaved call by call so
    both see the same machine load."""
    if os.geteuid() != 0:
        return {"skipped": "not root: workers keep the caller's uid, which reaches both folders"}
    reachable = Path(tempfile.mkdtemp(prefix="bench-reachable-"))
    hidden = Path(tempfile.mkdtemp(prefix="bench-hidden-"))  # 0700: nobody cannot traverse it
    reachable.chmod(0o755)
    try:
        for folder in (reachable, hidden):
            shutil.copytree(corpus, folder / "corpus")
        with Tools.open(reachable / "corpus", "sql", cache="off") as a, \
                Tools.open(hidden / "corpus", "sql", cache="off") as b:
            out = {"reachable_0755": {"server": a.sandbox_info()["server"]},
                   "untraversable_0700": {"server": b.sandbox_info()["server"]}}
            for name, sql in (("select_1", "SELECT 1"), ("count", "SELECT count(*) FROM filings")):
                times: dict[str, list[float]] = {"reachable_0755": [], "untraversable_0700": []}
                for _ in range(repeats):
                    for key, tools in (("reachable_0755", a), ("untraversable_0700", b)):
                        times[key].append(tools.call("sql", query=sql).timings.total_ms)
                for key, values in times.items():
                    out[key][f"{name}_ms_p50"] = p50(values)
                out[f"{name}_ratio"] = round(p50(times["untraversable_0700"]) / p50(times["reachable_0755"]), 2)
            for key in ("reachable_0755", "untraversable_0700"):
                server = out[key].pop("server")
                out[key]["corpus_con_inherited"] = server.get("corpus_con_inherited")
                out[key]["locked_in_child"] = server.get("corpus_con_locked_in_child")
            return out
    finally:
        shutil.rmtree(reachable, ignore_errors=True)
        shutil.rmtree(hidden, ignore_errors=True)


def searches(tools: Tools, corpus: Path, repeats: int) -> dict:
    headers = pq.read_table(corpus / "_index" / "headers.parquet", columns=list(HEADER_COLUMNS))
    companies = [c for c in headers.column("company").to_pylist() if c]
    rng = random.Random(11)
    queries = [" ".join(c.split()[:2]) for c in rng.sample(companies, min(repeats, len(companies)))]
    started = time.perf_counter()
    local = HeaderSearch(headers)
    build_ms = (time.perf_counter() - started) * 1000
    in_process = [timed(lambda q=q: local.search(q, 1, 20)) for q in queries]
    calls = [tools.call("search_headers", query=q) for q in queries]
    end_to_end = [r.timings.total_ms for r in calls if r.ok]
    cpu = [worker_cpu(tools, "search_headers", {"query": q, "page": 1, "page_size": 20})[0] for q in queries]
    # The same question over parsed_md through the sql tool (what the agent would do without it).
    q = queries[0].replace("'", "''")
    text = tools.call("sql", query=f"SELECT file_stem FROM filings WHERE contains(parsed_md, '{q}') ORDER BY file_stem LIMIT 20")
    return {
        "queries": len(queries),
        "build_ms": round(build_ms, 1),
        "search_alone_ms_p50": p50(in_process),
        "call_ms_p50": p50(end_to_end),
        "call_worker_cpu_ms_p50": p50(cpu),
        "over_parsed_md": {"ok": text.ok, "ms": round(text.timings.total_ms, 1),
                           "error": text.error.kind if text.error else None},
    }


def tree_memory(pid: int) -> tuple[int, int]:
    """(sum of RSS, sum of PSS) over a process and its descendants, bytes."""
    rss = pss = 0
    try:
        root = psutil.Process(pid)
        for proc in [root, *root.children(recursive=True)]:
            try:
                info = proc.memory_full_info()
                rss += info.rss
                pss += getattr(info, "pss", info.rss)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
    except psutil.NoSuchProcess:
        pass
    return rss, pss


def busy_run(tools: Tools, stems: list[str], threads: int = 4, calls_per_thread: int = 15) -> dict:
    results, stop = [], threading.Event()
    peak = {"rss": 0, "pss": 0, "sandbox_rss": 0, "sandbox_pss": 0}
    server = tools.sandbox.server_pid  # the fork server and its workers

    def sample() -> None:
        while not stop.is_set():
            rss, pss = tree_memory(psutil.Process().pid)
            peak["rss"], peak["pss"] = max(peak["rss"], rss), max(peak["pss"], pss)
            rss, pss = tree_memory(server)
            peak["sandbox_rss"], peak["sandbox_pss"] = max(peak["sandbox_rss"], rss), max(peak["sandbox_pss"], pss)
            time.sleep(0.05)

    def work(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(calls_per_thread):
            stem = rng.choice(stems)
            choice = rng.randrange(4)
            if choice == 0:
                r = tools.call("sql", query="SELECT substr(parsed_md, 1, 200) FROM filing", file_stem=stem)
            elif choice == 1:
                r = tools.call("read_filing", file_stem=stem, max_chars=4000)
            elif choice == 2:
                r = tools.call("search_headers", query=rng.choice(["10-K", "Inc", "2025-03", "8-K"]))
            else:
                r = tools.call("sql", query="SELECT month, count(*), sum(char_count) FROM filings GROUP BY month")
            results.append(r)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    started = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    stop.set()
    sampler.join()
    return {
        "threads": threads,
        "calls": len(results),
        "errors": sum(not r.ok for r in results),
        "seconds": round(time.perf_counter() - started, 2),
        "queue_ms_p50": p50([r.timings.queue_ms for r in results]),
        "run_ms_p50": p50([r.timings.run_ms for r in results]),
        "worker_peak_rss_mib_max": round(max((r.peak_rss_bytes or 0) for r in results) / 2**20, 1),
        "tree_rss_mib_peak": round(peak["rss"] / 2**20, 1),
        "tree_pss_mib_peak": round(peak["pss"] / 2**20, 1),
        "sandbox_rss_mib_peak": round(peak["sandbox_rss"] / 2**20, 1),
        "sandbox_pss_mib_peak": round(peak["sandbox_pss"] / 2**20, 1),
        "note": "tree = this benchmark process (it also holds its own index and HeaderSearch) "
                "plus the sandbox; sandbox = fork server and workers only",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Benchmark the tools over one corpus folder.")
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--plain-dir", type=Path, help="where to write the plain-export copy")
    parser.add_argument("--skip-plain", action="store_true")
    parser.add_argument("--placements-only", action="store_true",
                        help="only compare a corpus folder the worker uid can traverse with one "
                        "it cannot (as root: 0755 vs 0700), unscoped sql, interleaved")
    parser.add_argument("--plain-from", type=Path,
                        help="reuse an existing plain export of the same rows (e.g. the one "
                        "bench_corpus.py writes) instead of writing one")
    args = parser.parse_args(argv)

    corpus = args.corpus.resolve()
    if args.placements_only:
        report = {"schema_version": SCHEMA_VERSION, "corpus": str(corpus), "load_avg": list(psutil.getloadavg()),
                  "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                  "placements": placements(corpus, max(30, args.repeats))}
        report["load_avg_after"] = list(psutil.getloadavg())
        print(json.dumps(report, indent=2))
        return 0
    index = CorpusIndex.open(corpus)
    all_stems = pq.read_table(corpus / "_index" / "index.parquet", columns=["file_stem"]).column(0).to_pylist()
    stems = random.Random(7).sample(all_stems, min(args.repeats, len(all_stems)))
    report: dict = {"schema_version": SCHEMA_VERSION, "corpus": str(corpus), "rows": len(all_stems),
                    "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                    "duckdb": duckdb.__version__, "load_avg": list(psutil.getloadavg())}
    started = time.perf_counter()
    with Tools.open(corpus, "sql+stream", cache="off") as tools:
        report["open_ms"] = round((time.perf_counter() - started) * 1000, 1)
        report["server"] = tools.sandbox_info()["server"]
        report["sandbox_mode"] = tools.sandbox_mode
        tools.call("sql", query="SELECT 1")  # warm the page cache path once
        report["trivial_call"] = trivial_calls(tools, max(30, args.repeats))
        report["scoped_read"] = scoped_reads(tools, index, stems)
        report["search_headers"] = searches(tools, corpus, args.repeats)
        report["busy_run"] = busy_run(tools, stems)
    if not args.skip_plain:
        plain_root = args.plain_dir or Path(tempfile.mkdtemp(prefix="plain-export-"))
        if args.plain_dir is not None:  # new, empty or an earlier run's: its plain/ replaced
            claim_folder(args.plain_dir, "bench/bench_tools.py", clear=("plain",))
        try:
            if args.plain_from:
                paths = sorted(args.plain_from.glob("*.parquet"))
            else:
                paths = write_plain_export(corpus, plain_root / "plain")
            few = stems[: max(3, args.repeats // 4)]
            report["plain_export"] = {
                "unlimited": plain_lookups(paths, few, None),
                "worker_limit_128MiB": plain_lookups(paths, few, "128MiB"),
            }
            unlimited = report["plain_export"]["unlimited"]["ms_p50"]
            report["plain_export"]["plain_vs_scoped_sql"] = round(unlimited / report["scoped_read"]["scoped_sql_ms_p50"], 1)
        finally:
            shutil.rmtree(plain_root / "plain", ignore_errors=True)
            if args.plain_dir is None:
                shutil.rmtree(plain_root, ignore_errors=True)
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
