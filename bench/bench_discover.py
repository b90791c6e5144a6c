"""Discovery on generated related tables with planted structural defects: precision, recall and
F1 per category through the whole audit, and CPU and peak memory per million rows beside
ydata-profiling on the same tables, in one run.

    python bench/bench_discover.py --work /tmp/bench-discover --scale 0.2 --cost-scale 10 \
        --ydata-python /tmp/ydata-venv/bin/python

1. `audit.structural.generate` writes clean and planted copies (seed 0, `--scale`); the blind
   baseline audits both (same lineage); the planted run is scored against the manifest
   (findings already in the clean run excluded). One markdown table per category.
2. At `--cost-scale` a second planted copy is generated; discovery alone (`audit.discover`
   through the sandboxed tools) and ydata-profiling 4.x (`ProfileReport(df).to_json()` per table,
   in its own virtualenv: it pins pandas < 3, which this package does not allow) each run in a
   child process; CPU seconds (user + system of the whole process tree) and the peak RSS of the
   tree (sampled every 0.2 s) are reported, and per million rows.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pyarrow.parquet as pq

from parquet_agent.audit import AuditConfig, Auditor
from parquet_agent.audit.scoring import load_manifest, score
from parquet_agent.audit.structural import generate
from parquet_agent.files import claim_folder

DISCOVER = """
import json, sys
from parquet_agent.audit.dataset import Dataset
from parquet_agent.audit.discover import discover
from parquet_agent.audit.discover.scope import tables_of
from parquet_agent.audit.tools import AuditTools
ds = Dataset.open(sys.argv[1])
with AuditTools.open(ds) as tools:
    found = discover(tools, tables_of(ds))
print(json.dumps({"reported": sum(c.report for c in found.candidates), "queries": found.queries}))
"""
YDATA = """
import json, sys, pathlib, warnings
warnings.filterwarnings("ignore")
import pandas as pd
from ydata_profiling import ProfileReport
alerts = 0
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.parquet")):
    report = ProfileReport(pd.read_parquet(f), title=f.stem, progress_bar=False)
    alerts += len(json.loads(report.to_json()).get("alerts", []))
print(json.dumps({"alerts": alerts}))
"""


def _f(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


def quality(work: Path, scale: float, seed: int) -> None:
    generate(work / "clean", work / "planted", seed=seed, scale=scale)
    config = AuditConfig(lineage="structural", max_steps=300, max_tool_calls=300)
    store = work / "findings.sqlite"
    started = time.perf_counter()
    clean = Auditor(config, store=store).run(work / "clean", run_dir=work / "audit-clean")
    report = Auditor(config, store=store).run(work / "planted", run_dir=work / "audit-planted")
    result = score(report, load_manifest(work / "planted"), clean=clean)
    print(f"\n### planted structural defects (scale {scale:g}, seed {seed}; "
          f"{time.perf_counter() - started:.0f} s for both audits)\n")
    print("| category | defects | found | findings | precision | recall | F1 |")
    print("|---|---|---|---|---|---|---|")
    for name, row in [*result.per_category.items(), ("**overall**", result.overall)]:
        print(f"| {name} | {row['defects']} | {row['found']} | {row['findings']} | "
              f"{_f(row['precision'])} | {_f(row['recall'])} | {_f(row['f1'])} |")
    wrong = [f.title for f in report.findings if f.key not in result.excluded and not result.matches.get(f.key)]
    print(f"\nfindings matching no planted defect: {wrong}")


def _tree_rss(root: psutil.Process) -> int:
    total = 0
    for p in [root, *root.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def measure(command: list[str]) -> dict:
    """Wall and CPU seconds (user + system of every waited-for descendant: getrusage of the
    children) and the peak RSS of the child's process tree, sampled every 0.1 s."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak, stop = [0], threading.Event()

    def sample() -> None:
        root = psutil.Process(child.pid)
        while not stop.is_set():
            try:
                peak[0] = max(peak[0], _tree_rss(root))
            except psutil.Error:
                return
            stop.wait(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = child.communicate()
    stop.set()
    sampler.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if child.returncode != 0:
        raise SystemExit(f"{command[0]} failed:\n{err[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(time.perf_counter() - started, 1), "cpu_s": round(cpu, 1),
            "peak_rss_mib": round(peak[0] / 2**20), **json.loads(out.strip().splitlines()[-1])}


def cost(work: Path, scale: float, seed: int, ydata: str | None) -> None:
    folder = work / f"cost-{scale:g}"
    generate(work / f"cost-clean-{scale:g}", folder, seed=seed, scale=scale)
    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in folder.glob("*.parquet"))
    tools = {"audit.discover": [sys.executable, "-c", DISCOVER, str(folder)]}
    if ydata:
        tools["ydata-profiling"] = [ydata, "-c", YDATA, str(folder)]
    print(f"\n### cost on {rows:,} rows in 4 tables (scale {scale:g})\n")
    print("| tool | wall s | CPU s | CPU s per 1M rows | peak RSS MiB | output |")
    print("|---|---|---|---|---|---|")
    for name, command in tools.items():
        m = measure(command)
        said = f"{m['reported']} reported candidates" if "reported" in m else f"{m['alerts']} alerts"
        print(f"| {name} | {m['wall_s']} | {m['cpu_s']} | {m['cpu_s'] / rows * 1e6:.1f} | "
              f"{m['peak_rss_mib']} | {said} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench-discover"))
    parser.add_argument("--scale", type=float, default=0.2)
    parser.add_argument("--cost-scale", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ydata-python", help="a python with ydata-profiling installed")
    args = parser.parse_args()
    # --work is new, empty or an earlier run's of this script (only its own entries replaced)
    claim_folder(args.work, "bench/bench_discover.py", clear=(
        "clean", "planted", "findings.sqlite", "audit-clean", "audit-planted",
        f"cost-clean-{args.cost_scale:g}", f"cost-{args.cost_scale:g}"))
    quality(args.work, args.scale, args.seed)
    cost(args.work, args.cost_scale, args.seed, args.ydata_python)


if __name__ == "__main__":
    main()
