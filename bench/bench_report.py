"""Bench the exports of a 400-case run: export time, sizes, report time-to-interactive in Chromium.

    .venv/bin/python bench/bench_report.py --work /tmp/bench-report            # build + measure
    .venv/bin/python bench/bench_report.py --work /tmp/bench-report --repeat 5  # more exports

Steps (each reused when its output already exists under --work):
1. corpus: `parquet-agent corpus build --rows 2000 --out WORK/corpus` + `corpus index` (111 Qs);
2. run: 100 questions x 2 offline baseline models x 2 strategies = 400 cases, rubric judge
   (real sandboxed tools, real run folder);
3. export: the first export of a copy of the run without exports (what the runner does), then
   `export_run` again `--repeat` times (median and min), bytes per export file and of the audit
   (raw packs + journals) they are built from;
4. browser: the report opened from file:// in headless Debian Chromium (Playwright), `--loads`
   times: time from navigation start to the page's ready mark (rows built, filters live), the
   load event, then the time to open one case's detail (click to its six sections visible).

Prints one JSON object with every figure (and the commands), for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def build_corpus(work: Path) -> Path:
    corpus = work / "corpus"
    if not (corpus / "_index" / "index.json").exists():
        cli = [sys.executable, "-m", "parquet_agent"]
        subprocess.run([*cli, "corpus", "build", "--rows", "2000", "--out", str(corpus)],
                       check=True)
        subprocess.run([*cli, "corpus", "index", str(corpus)], check=True)
    return corpus


def make_run(work: Path, corpus: Path) -> tuple[Path, float]:
    from parquet_agent.experiment.runner import Experiment
    from parquet_agent.experiment.config import ExperimentConfig

    run_dir = work / "runs" / "bench-400"
    if (run_dir / "manifest.json").exists():
        return run_dir, float("nan")
    config = ExperimentConfig.from_dict({
        "name": "bench-400", "corpus": str(corpus), "questions": str(corpus / "questions.jsonl"),
        "sample": {"n": 100, "seed": 7}, "strategies": ["sql", "sql+stream"],
        "runs_dir": str(work / "runs"),
        "models": [{"name": "base-a", "provider": "baseline"},
                   {"name": "base-b", "provider": "baseline"}],
        "judge": {"name": "rubric", "provider": "rubric"},
        "limits": {"max_tool_calls": 12, "max_rounds": 16, "case_workers": 4,
                   "data_workers": 1, "cache": "on"}})
    t0 = time.perf_counter()
    Experiment(config, progress=False).run(run_dir)
    return run_dir, time.perf_counter() - t0


def _tree_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def time_exports(run_dir: Path, repeat: int) -> dict:
    import shutil
    import tempfile

    from parquet_agent.report.exporter import export_run

    # the runner's case: the first export of a run folder that has none yet
    with tempfile.TemporaryDirectory(dir=run_dir.parent) as tmp:
        fresh = Path(tmp) / run_dir.name
        shutil.copytree(run_dir, fresh, ignore=shutil.ignore_patterns(
            "cases", "cases-index.*", "summary.json", "report.html", "case-export-*", ".lock"))
        t0 = time.perf_counter()
        export_run(fresh)
        first_s = time.perf_counter() - t0
    seconds = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = export_run(run_dir)
        seconds.append(time.perf_counter() - t0)
    sizes = {name: (run_dir / name).stat().st_size for name in
             ("report.html", "cases-index.json", "cases-index.csv", "summary.json",
              "case-export-provenance.json")}
    case_files = list((run_dir / "cases").glob("*.json"))
    sizes["cases/*.json"] = sum(p.stat().st_size for p in case_files)
    return {"cases": result.cases, "first_export_s": round(first_s, 3),
            "export_s_median": round(statistics.median(seconds), 3),
            "export_s_min": round(min(seconds), 3), "repeat": repeat, "bytes": sizes,
            "case_json_files": len(case_files),
            "run_audit_bytes": {"raw": _tree_bytes(run_dir / "raw"),
                                "journal": _tree_bytes(run_dir / "journal")},
            "load_average": os.getloadavg()}


def time_browser(report: Path, loads: int) -> dict:
    from playwright.sync_api import sync_playwright

    ready, load, open_case, errors, requests = [], [], [], [], []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            for _ in range(loads):
                context = browser.new_context(viewport={"width": 1200, "height": 800})
                page = context.new_page()
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.on("console", lambda m: m.type == "error" and errors.append(m.text))
                page.on("request", lambda r: not r.url.startswith("file:") and
                        requests.append(r.url))
                page.goto(report.as_uri(), wait_until="load")
                page.wait_for_selector("html[data-ready='1']")
                ready.append(page.evaluate("window.reportReadyMs"))
                load.append(page.evaluate(
                    "performance.getEntriesByType('navigation')[0].loadEventEnd"))
                t0 = time.perf_counter()
                page.locator("tr.case").nth(5).click()
                page.locator("tr.detail section[data-section='6']").first.wait_for()
                open_case.append((time.perf_counter() - t0) * 1000)
                context.close()
        finally:
            browser.close()
    return {"loads": loads,
            "ready_ms_median": round(statistics.median(ready), 1),
            "ready_ms_max": round(max(ready), 1),
            "load_event_ms_median": round(statistics.median(load), 1),
            "open_case_ms_median": round(statistics.median(open_case), 1),
            "console_errors": errors, "network_requests": requests}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench-report"))
    parser.add_argument("--repeat", type=int, default=3, help="exports to time")
    parser.add_argument("--loads", type=int, default=5, help="page loads to time")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    corpus = build_corpus(args.work)
    run_dir, run_s = make_run(args.work, corpus)
    out = {"run_dir": str(run_dir), "run_s": None if run_s != run_s else round(run_s, 1),
           "export": time_exports(run_dir, args.repeat)}
    if Path(CHROMIUM).exists():
        out["browser"] = time_browser(run_dir / "report.html", args.loads)
    else:
        out["browser"] = f"skipped: {CHROMIUM} not installed"
    out["command"] = f"{sys.executable} bench/bench_report.py --work {args.work}"
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
