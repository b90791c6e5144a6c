"""Explorer, charts and comparison on a large run: how long a notebook user waits.

    .venv/bin/python bench/bench_explore.py RUN_DIR [--repeat 3]

RUN_DIR is any run folder, e.g. the 400-case run that `bench/bench_report.py --work W` makes
(W/runs/bench-400). Measured in one process after the imports: the explorer opened from the
exports, a filter change, opening a case (its six sections), the six main charts, and a
comparison of the run with itself (every case paired). Prints one JSON object (median of
`--repeat`, with the min).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path


def _time(fn, repeat: int) -> dict:
    seconds = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - t0)
    return {"median_s": round(statistics.median(seconds), 3), "min_s": round(min(seconds), 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    t0 = time.perf_counter()
    import ipywidgets

    from parquet_agent.explore import CaseExplorer, charts, compare_runs

    out: dict = {"run_dir": str(args.run_dir), "import_s": round(time.perf_counter() - t0, 2)}
    explorer = CaseExplorer(args.run_dir)
    out["cases"] = len(explorer.filtered())
    out["records_from"] = "exports" if explorer.cases.from_exports else "journals"
    out["explorer_open"] = _time(lambda: CaseExplorer(args.run_dir), args.repeat)
    strategies = [o for o in explorer.strategy.options if o != "(all)"]

    def flip():
        for s in strategies + ["(all)"]:
            explorer.strategy.value = s

    out["filter_change"] = _time(flip, args.repeat)
    out["filter_change"]["changes"] = len(strategies) + 1
    ids = [v for _, v in explorer.picker.options]

    def open_cases():
        for cid in ids[-10:]:
            explorer.show(cid)
            explorer._shown = None  # render again next round: measure the render, not a no-op

    out["open_10_cases"] = _time(open_cases, args.repeat)
    out["detail_html_bytes"] = len(explorer.detail.value)
    out["main_charts"] = _time(lambda: charts.main_charts(args.run_dir), args.repeat)
    out["compare_with_itself"] = _time(lambda: compare_runs(args.run_dir, args.run_dir),
                                       args.repeat)
    ipywidgets.Widget.close_all()
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
