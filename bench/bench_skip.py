"""The data-skipping index: whole-corpus text queries pruned vs scanned, index cost, pruning power.

    .venv/bin/python bench/bench_skip.py /work/scale/tenth --repeats 3 [--rebuild --jobs 2] [--grid 40]

In one run, on a built and indexed corpus (`corpus build` / `corpus index`):
1. with --rebuild: `corpus index DIR --skip-only --jobs J` in a child: wall and CPU seconds (of
   the whole process tree), peak RSS of its largest process and of the tree (sampled);
2. index bytes next to the corpus's Parquet bytes;
3. per literal (a company name, "going concern", a common word) and per shape (`contains`,
   `ILIKE`): the same query through Tools with the index and with `skip_index=False`, calls
   interleaved, `--repeats` each: median call time, pages read, identical outputs checked;
4. false-positive page rate per literal: candidate pages that hold no match / pages that hold none
   (the truth read from the candidate pages themselves: the index has no false negatives);
5. unprunable queries, both ways (the index must cost nothing there);
6. with --grid N: an N-case `sql`-strategy grid of the offline baseline, with and without the
   index: grid wall time and total data-tool time (from the case records).
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from parquet_agent.corpus.pages import column_format, read_values
from parquet_agent.corpus.skipindex import Literal, SkipIndex
from parquet_agent.corpus.snapshot import CorpusSnapshot
from parquet_agent.tools import Tools

sys.path.insert(0, str(Path(__file__).parent))
from bench_corpus import timed_command  # noqa: E402

SHAPES = {
    "contains": "SELECT count(*) FROM filings WHERE contains(parsed_md, '{lit}')",
    "ilike": "SELECT count(*) FROM filings WHERE parsed_md ILIKE '%{lit}%'",
}
UNPRUNABLE = {
    "length": "SELECT count(*) FROM filings WHERE length(parsed_md) > 60000",
    "metadata": "SELECT year, month, count(*) FROM filings GROUP BY ALL ORDER BY ALL",
}


def _company(folder: Path) -> str:
    """A company name found in few filings (about 10): a selective literal."""
    headers = pq.read_table(folder / "_index" / "headers.parquet", columns=["company"]).to_pandas()
    counts = headers["company"].dropna().value_counts()
    pick = counts[(counts >= 5) & (counts <= 20)]
    return str((pick if len(pick) else counts).index[0])


def _truth_pages(skip: SkipIndex, folder: Path, lit: Literal, candidates: np.ndarray) -> int:
    """How many candidate pages really hold the literal (case-folded when `lit.fold`)."""
    files = {name: os.open(folder / name, os.O_RDONLY) for name in set(skip.pages.column("file").to_pylist())}
    metas = {name: pq.read_metadata(folder / name) for name in files}
    needle = lit.text.lower() if lit.fold else lit.text
    hits = 0
    try:
        for i in np.flatnonzero(candidates):
            p = {k: skip.pages.column(k)[int(i)].as_py() for k in ("file", "row_group", "offset", "size")}
            meta = metas[p["file"]]
            column = meta.schema.to_arrow_schema().get_field_index("parsed_md")
            if p["offset"] < 0:
                hits += 1
                continue
            codec, nullable = column_format(meta, p["row_group"], column)
            values = read_values(files[p["file"]], p["offset"], p["size"], codec=codec, nullable=nullable)
            texts = [v.decode("utf-8") for v in values if v]
            hits += any(needle in (t.lower() if lit.fold else t) for t in texts)
    finally:
        for fd in files.values():
            os.close(fd)
    return hits


def _timed_pair(pruned: Tools, scan: Tools, query: str, repeats: int) -> dict:
    a_ms, b_ms, report, errors = [], [], None, []
    for _ in range(repeats):
        a = pruned.call("sql", query=query)
        b = scan.call("sql", query=query)
        if a.ok and b.ok and a.output != b.output:
            raise SystemExit(f"pruned and scanned results differ for {query}: {a.output} vs {b.output}")
        errors += [f"{side}: {r.error.kind}" for side, r in (("pruned", a), ("scan", b)) if r.error]
        a_ms.append(a.timings.total_ms)
        b_ms.append(b.timings.total_ms)
        report = a.skip_index
    pm, sm = statistics.median(a_ms), statistics.median(b_ms)
    return {"query": query, "pruned_ms": round(pm, 1), "scan_ms": round(sm, 1),
            "speedup": round(sm / pm, 2), "errors": errors, "cpu_limit_s": pruned.limits.cpu_seconds,
            "skip_index": report, "rows": (a.output or {}).get("rows")}


def _grid(folder: Path, n: int, skip_index: bool) -> dict:
    from parquet_agent.experiment.runner import Experiment
    from parquet_agent.experiment.config import ExperimentConfig

    runs = Path(tempfile.mkdtemp(prefix="bench_skip_grid_"))
    config = ExperimentConfig.from_dict({
        "name": f"skip-{skip_index}", "corpus": str(folder), "questions": str(folder / "questions.jsonl"),
        "sample": {"n": n, "seed": 7}, "strategies": ["sql"], "runs_dir": str(runs),
        "models": [{"name": "baseline", "provider": "baseline"}],
        "judge": {"name": "rubric", "provider": "rubric"},
        "limits": {"case_workers": 4, "data_workers": 1, "cache": "off", "skip_index": skip_index}})
    started = time.perf_counter()
    run = Experiment(config, progress=False).run()
    wall = time.perf_counter() - started
    tool_ms, pruned, errors = 0.0, 0, 0
    for path in (run.dir / "cases").glob("*.json"):
        for call in json.loads(path.read_text(encoding="utf-8")).get("tool_calls", []):
            tool_ms += (call.get("timings") or {}).get("run_ms") or 0.0
            pruned += bool((call.get("skip_index") or {}).get("used"))
            errors += call.get("ok") is False
    cases = run.cases_df()
    return {"cases": len(cases), "wall_s": round(wall, 1), "data_tool_s": round(tool_ms / 1000, 1),
            "pruned_calls": pruned, "tool_errors": errors,
            "mean_correctness": round(float(cases["correctness"].mean()), 1), "run_dir": str(run.dir)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rebuild", action="store_true", help="rebuild the skipping index, timed")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes of the --rebuild")
    ap.add_argument("--no-queries", action="store_true", help="skip the query pairs and FP rates")
    ap.add_argument("--no-common", action="store_true",
                    help="leave out the common word (every page a candidate: its truth reads the corpus)")
    ap.add_argument("--grid", type=int, default=0, help="cases of the baseline sql grid (0: skip it)")
    ap.add_argument("--literal", action="append", help="extra literal(s) to measure")
    ap.add_argument("--out", type=Path, help="also write the JSON here after each section")
    args = ap.parse_args(argv)
    folder = args.corpus.resolve()
    out: dict = {"corpus": str(folder), "load_before": os.getloadavg()}

    def save() -> None:  # a long run keeps what it measured so far
        if args.out:
            args.out.write_text(json.dumps(out, indent=2))

    if args.rebuild:
        from bench_build import _PeakRss

        with _PeakRss() as tree:  # this process (idle meanwhile) and the build's tree
            out["build"] = timed_command(sys.executable, "-m", "parquet_agent", "corpus", "index",
                                         str(folder), "--skip-only", "--jobs", str(args.jobs))
        out["build"].update(jobs=args.jobs, peak_tree_rss_mib=round(tree.peak / 2**20))
        save()
    snapshot = CorpusSnapshot.take(folder)
    skip = SkipIndex.open(folder, snapshot.snapshot_id)
    corpus_bytes = sum(f.size for f in snapshot.files)
    out["index"] = {"pages": skip.count, "bytes": skip.info["bytes"], "corpus_bytes": corpus_bytes,
                    "share_of_corpus": round(skip.info["bytes"] / corpus_bytes, 4),
                    "recorded_build_seconds": skip.info["build_seconds"]}
    common = [] if args.no_common else ["revenue"]
    literals = [] if args.no_queries else [_company(folder), "going concern", *common, *(args.literal or [])]
    out["queries"], out["false_positives"] = [], []
    with Tools.open(folder, "sql", cache="off") as pruned, \
            Tools.open(folder, "sql", cache="off", skip_index=False) as scan:
        for lit in literals:
            for shape, template in SHAPES.items():
                query = template.format(lit=lit.replace("'", "''"))
                out["queries"].append({"literal": lit, "shape": shape, **_timed_pair(pruned, scan, query, args.repeats)})
                need = Literal(lit, shape == "ilike")
                cand = skip.candidates(need)
                true = _truth_pages(skip, folder, need, cand)
                negatives = skip.count - true
                out["false_positives"].append({
                    "literal": lit, "shape": shape, "candidates": int(cand.sum()), "true_pages": true,
                    "fp_rate": round((int(cand.sum()) - true) / negatives, 4) if negatives else None})
                save()
        if not args.no_queries:
            out["unprunable"] = [{"name": k, **_timed_pair(pruned, scan, q, args.repeats)}
                                 for k, q in UNPRUNABLE.items()]
        save()
    if args.grid:
        out["grid"] = {"with_index": _grid(folder, args.grid, True)}
        save()
        out["grid"]["scan_only"] = _grid(folder, args.grid, False)
    out["load_after"] = os.getloadavg()
    save()
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
