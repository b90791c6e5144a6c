"""CLI: the `bench` family.

    parquet-agent bench financebench --source DIR --out DIR [--jobs N]
    parquet-agent bench financebench-compare RUN_DIR --source DIR [--paper-config NAME ...]
                                             [--csv FILE] [--chart FILE.html]
    parquet-agent bench financebench-judge --source DIR [--judge CONFIG.toml] [--batch]
                                           [--paper-config NAME ...] [--limit N] [--out DIR]

`register(subparsers)` adds them; handlers return 0 on success. `financebench` builds the pack
(`financebench.build_pack`) and prints its summary; `financebench-compare` pairs a saved run with
the paper's human-labelled results (`paper.compare_with_paper`), prints the summary table and
optionally writes the paired rows as CSV and the chart as a self-contained HTML file.
`financebench-judge` judges the paper's labelled answers with a judge (default: the offline
rubric; `--judge` takes the `[judge]` of an experiment config, `--batch` sends its requests
through the provider's batch API) and prints the agreement with the human labels
(`judge_labels`); with an LLM judge, every raw request and response goes under `--out`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from parquet_agent.escape import csv_frame


def run_financebench(args: argparse.Namespace) -> int:
    from parquet_agent.bench.financebench import build_pack

    result = build_pack(Path(args.source), Path(args.out), jobs=args.jobs)
    print(result.summary())
    print(f"configs: {Path(args.out) / 'configs'}; details: {Path(args.out) / 'pack.json'}")
    return 0


def run_compare(args: argparse.Namespace) -> int:
    import pandas as pd

    from parquet_agent.bench.paper import comparison_chart, comparison_summary, compare_with_paper
    from parquet_agent.experiment.run import open_experiment

    df = compare_with_paper(open_experiment(Path(args.run_dir)), Path(args.source),
                            paper_configs=args.paper_config or None)
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(comparison_summary(df).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    if args.csv:
        csv_frame(df).to_csv(args.csv, index=False)
        print(f"paired rows: {args.csv}")
    if args.chart:
        comparison_chart(df).write_html(args.chart, include_plotlyjs=True)
        print(f"chart: {args.chart}")
    return 0


def run_judge_labels(args: argparse.Namespace) -> int:
    import pandas as pd

    from parquet_agent.bench.judge_labels import (MemorySink, judge_paper_answers,
                                                  labels_agreement)
    from parquet_agent.experiment.runner import build_model_or_judge
    from parquet_agent.judge import Judge, RubricJudgeModel
    from parquet_agent.models import DirectorySink, load_model_specs

    if args.judge:
        _, spec = load_model_specs(Path(args.judge))
        if spec is None:
            raise SystemExit(f"{args.judge} has no [judge] table")
        judge = Judge(build_model_or_judge(spec, None, ()))
    else:
        judge = Judge(RubricJudgeModel())
    out = Path(args.out) if args.out else None
    offline = judge.model.provider == "baseline"
    sink = MemorySink() if out is None and offline else DirectorySink(out or Path("fb-judge"))
    rows = judge_paper_answers(Path(args.source), judge, sink,
                               paper_configs=args.paper_config or None, limit=args.limit,
                               batch_ledger=((out or Path("fb-judge")) / "batches.jsonl")
                               if args.batch else None)
    summary, matrix = labels_agreement(rows)
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(summary.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
        print(matrix.to_string())
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        csv_frame(rows).to_csv(out / "judgments.csv", index=False)
        print(f"judged rows: {out / 'judgments.csv'}")
    return 0


def register(subparsers) -> argparse.ArgumentParser:
    bench = subparsers.add_parser("bench", help="benchmark packs (FinanceBench)")
    family = bench.add_subparsers(dest="bench_command", metavar="PACK", required=True)
    fb = family.add_parser(
        "financebench",
        help="build the FinanceBench pack: corpus, questions, scopes, configs per paper mode",
    )
    fb.add_argument("--source", required=True,
                    help="FinanceBench checkout laid out like ../shared/realdata/financebench")
    fb.add_argument("--out", required=True, help="new, empty folder for the pack")
    fb.add_argument("--jobs", type=int, default=1, help="import processes (default 1)")
    fb.set_defaults(handler=run_financebench)
    cmp_ = family.add_parser(
        "financebench-compare",
        help="compare a run with the paper's human-labelled results on the same question ids",
    )
    cmp_.add_argument("run_dir", help="a run folder")
    cmp_.add_argument("--source", required=True, help="FinanceBench checkout (reads results/)")
    cmp_.add_argument("--paper-config", action="append",
                      help="a paper configuration, e.g. gpt-4-1106-preview_sharedStore "
                      "(repeatable; default: all 16)")
    cmp_.add_argument("--csv", help="write the paired rows here")
    cmp_.add_argument("--chart", help="write the chart here (self-contained HTML)")
    cmp_.set_defaults(handler=run_compare)
    jl = family.add_parser(
        "financebench-judge",
        help="a judge's verdicts on the paper's labelled answers against the human labels",
    )
    jl.add_argument("--source", required=True, help="FinanceBench checkout (reads results/)")
    jl.add_argument("--judge", help="an experiment config whose [judge] judges (default: the "
                    "offline rubric)")
    jl.add_argument("--batch", action="store_true",
                    help="send the judge requests through the provider's batch API")
    jl.add_argument("--paper-config", action="append",
                    help="a paper configuration (repeatable; default: all 16)")
    jl.add_argument("--limit", type=int, help="at most N answers per paper configuration")
    jl.add_argument("--out", help="folder for raw records, batches.jsonl and judgments.csv "
                    "(default for an LLM judge: ./fb-judge)")
    jl.set_defaults(handler=run_judge_labels)
    return bench
