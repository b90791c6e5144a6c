"""Benchmark `corpus build`: throughput, bytes, compression ratio next to real filings.

    .venv/bin/python bench/bench_build.py --scale tenth --out /work/scale/tenth
    .venv/bin/python bench/bench_build.py --scale full  --out /work/scale/full
    .venv/bin/python bench/bench_build.py --rows 2000 --out /tmp/sample      # any size
    .venv/bin/python bench/bench_build.py --real-only                         # only the real ratio
    .venv/bin/python bench/bench_build.py --derive-from /work/scale/tenth --scale full --out /work/scale/full

`--derive-from SRC` writes the rows as re-keyed copies of the built corpus SRC instead of
rendering them (`derive_scale.py` says exactly how, and how that differs from a real build).

While it builds, the output folder holds the build's own `.corpus-build.json` (an interrupted
build is then finished by a rerun, as `corpus build` does). Samples the peak RSS of the whole
process tree and prints one JSON object: rows/s, MB/s of Markdown and of Parquet on disk, bytes,
compression ratio of the synthetic text and of real filing text (`shared/realdata`) written
with the same Parquet codec settings.
"""

from __future__ import annotations

import argparse
import glob
import io
import json
import os
import sys
import threading
import time
from pathlib import Path

import psutil
import pyarrow as pa
import pyarrow.parquet as pq

from parquet_agent.corpus.synthetic import build_corpus
from parquet_agent.corpus.synthetic.plan import REFERENCE_ROWS

REALDATA = Path(os.environ.get("REALDATA", "/work/shared/realdata"))
SCALES = {"sample": 2000, "tenth": round(REFERENCE_ROWS / 10), "full": REFERENCE_ROWS}


def _parquet_ratio(texts: list[str]) -> dict:
    """Text bytes / Parquet bytes with the layout writer's codec (zstd, default level)."""
    raw = sum(len(t.encode("utf-8")) for t in texts)
    buf = io.BytesIO()
    pq.write_table(pa.table({"parsed_md": texts}), buf, compression="zstd", use_dictionary=False)
    return {"docs": len(texts), "text_mb": round(raw / 1e6, 1), "ratio": round(raw / buf.tell(), 2)}


def real_ratios() -> dict:
    out = {}
    fb = [Path(p).read_text(encoding="utf-8") for p in sorted(glob.glob(str(REALDATA / "financebench/docs_md/*.md")))]
    if fb:
        out["financebench_pdf_text"] = _parquet_ratio(fb)
    items = []
    for p in sorted(glob.glob(str(REALDATA / "edgar_crawler/10k_items/*.json"))):
        d = json.loads(Path(p).read_text(encoding="utf-8"))
        items.append("\n\n".join(v for k, v in d.items() if k.startswith("item_") and isinstance(v, str)))
    if items:
        out["edgar_crawler_10k_items"] = _parquet_ratio(items)
    html = sorted(glob.glob(str(REALDATA / "edgartools/html/*.html")))
    if html:
        from markdownify import markdownify

        out["edgartools_html_as_markdown"] = _parquet_ratio(
            [markdownify(Path(p).read_text(encoding="utf-8", errors="replace")) for p in html[:4]]
        )
    return out


class _PeakRss:
    """Peak resident memory of this process plus its children, sampled every 0.2 s."""

    def __init__(self):
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        me = psutil.Process()
        while not self._stop.is_set():
            total = 0
            for p in [me] + me.children(recursive=True):
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)
            self._stop.wait(0.2)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def _derived(args: argparse.Namespace, rows: int, rss: _PeakRss) -> int:
    """--derive-from: re-keyed copies of a built corpus; CPU seconds of this process tree."""
    import resource

    from derive_scale import derive_corpus

    started = time.process_time()
    result = derive_corpus(args.derive_from.resolve(), args.out, rows, jobs=args.jobs or 2)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    result["cpu_seconds"] = round(time.process_time() - started + children.ru_utime + children.ru_stime, 1)
    result["peak_rss_mib"] = round(rss.peak / 2**20)
    result["disk_bytes"] = sum(f["bytes"] for f in result["files"])
    result["row_groups"] = sum(f["row_groups"] for f in result["files"])
    print(json.dumps({"derive": result}, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", choices=sorted(SCALES), help="named size (rows)")
    ap.add_argument("--rows", type=int, help="rows (instead of --scale)")
    ap.add_argument("--out", type=Path, help="output folder")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=None, help="worker processes (default 2 for big builds)")
    ap.add_argument("--real-only", action="store_true", help="only measure the real filings' ratio")
    ap.add_argument("--derive-from", type=Path, help="copy this built corpus, re-keyed, instead of rendering")
    args = ap.parse_args(argv)
    result: dict = {}
    if not args.real_only:
        rows = args.rows or SCALES.get(args.scale or "")
        if not rows or not args.out:
            ap.error("give --scale or --rows, and --out")
        with _PeakRss() as rss:
            if args.derive_from:
                args.out.mkdir(parents=True, exist_ok=True)
                return _derived(args, rows, rss)
            r = build_corpus(args.out, rows=rows, seed=args.seed, jobs=args.jobs)
        print(r.summary(), file=sys.stderr)
        result["build"] = {
            "rows": r.rows, "seed": r.seed, "jobs": r.jobs, "companies": r.companies, "questions": r.questions,
            "seconds": round(r.seconds, 1), "rows_per_s": round(r.rows / r.seconds),
            "text_mb_per_s": round(r.text_bytes / 1e6 / r.seconds, 1),
            "disk_mb_per_s": round(r.bytes / 1e6 / r.seconds, 1),
            "text_bytes": r.text_bytes, "disk_bytes": r.bytes, "ratio": round(r.compression_ratio, 2),
            "row_groups": sum(f.row_groups for f in r.files), "peak_rss_mib": round(rss.peak / 2**20),
            "files": [{"name": f.name, "rows": f.rows, "bytes": f.bytes, "seconds": round(f.seconds, 1)} for f in r.files],
        }
    # after the build, so that its peak RSS is the build's alone
    result["real"] = real_ratios()
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
