"""`parquet-agent run` and `parquet-agent demo`: run an experiment config, or the offline demo.

The demo builds the bundled sample corpus (2,000 synthetic filings, seed 0) into `data/sample`
when it is not there yet, then runs the offline grid: the baseline policy x both strategies,
judged by the rubric judge, over every sample question. It needs no network and no keys.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import pandas as pd

from parquet_agent.corpus.sample import ensure_sample
from parquet_agent.experiment_config import ExperimentConfig


def register(subparsers: argparse._SubParsersAction) -> None:
    run = subparsers.add_parser("run", help="run (or resume) an experiment config")
    run.add_argument("config", type=Path, help="experiment config (TOML)")
    run.add_argument("--run-dir", type=Path, help="the run folder (default: a new one in runs_dir)")
    run.add_argument("--resume", action="store_true", help="finish the run in --run-dir")
    run.add_argument("--cache-policy", choices=("on", "off"), help="override [limits].cache")
    run.add_argument("--engine", choices=("local", "ray"),
                     help="where cases run (default: the config's [engine] kind, else local); "
                     "ray needs parquet_agent[ray] and a running cluster")
    run.add_argument("--quiet", action="store_true", help="no progress line")
    run.set_defaults(handler=_run)

    demo = subparsers.add_parser("demo", help="build the sample corpus if needed and run the "
                                 "offline demo experiment")
    demo.add_argument("--data", type=Path, default=Path("data/sample"),
                      help="where the sample corpus lives (default: data/sample)")
    demo.add_argument("--runs", type=Path, default=Path("runs"), help="runs folder (default: runs)")
    demo.add_argument("--sample", type=int, help="run only N questions (seeded), not all")
    demo.add_argument("--quiet", action="store_true", help="no progress line")
    demo.set_defaults(handler=_demo)


def _run(args: argparse.Namespace) -> int:
    from parquet_agent.experiment import Experiment

    experiment = Experiment.from_toml(args.config, progress=not args.quiet)
    if args.engine is not None:
        config = experiment.config
        experiment.config = replace(config, engine=replace(config.engine, kind=args.engine))
    run = experiment.run(args.run_dir, resume=args.resume, cache_policy=args.cache_policy)
    _print_result(run)
    return 0


def demo_config(data: Path, runs: Path, sample_n: int | None = None) -> ExperimentConfig:
    sample = {"n": sample_n, "seed": 7} if sample_n else "all"
    return ExperimentConfig.from_dict({
        "name": "demo", "corpus": str(data), "questions": str(data / "questions.jsonl"),
        "sample": sample, "strategies": ["sql", "sql+stream"], "runs_dir": str(runs),
        "models": [{"name": "baseline", "provider": "baseline"}],
        "judge": {"name": "rubric", "provider": "rubric"},
        "limits": {"max_tool_calls": 12, "max_rounds": 16, "case_workers": 4,
                   "data_workers": 1, "cache": "on"}})


def _demo(args: argparse.Namespace) -> int:
    from parquet_agent.experiment import Experiment

    data = ensure_sample(args.data)
    run = Experiment(demo_config(data, args.runs, args.sample), progress=not args.quiet).run()
    _print_result(run)
    return 0


def _print_result(run) -> None:
    print(summary_text(run.summary()))
    report = run.dir / "report.html"
    print(f"\nrun folder: {run.dir}")
    if report.exists():
        print(f"report:     {report}")


def summary_text(summary: pd.DataFrame) -> str:
    """The summary table as text: scores with their 95% bootstrap intervals."""
    if summary.empty:
        return "(no cases)"

    def interval(row: pd.Series, name: str, low: str, high: str) -> str:
        if pd.isna(row[name]):
            return "unscored"
        return f"{row[name]:.1f} [{row[low]:.1f}, {row[high]:.1f}]"

    table = pd.DataFrame({
        "model": summary["model"], "strategy": summary["strategy"],
        "cases": summary["cases"], "completed": summary["completed"],
        "correctness (95% CI)": [interval(r, "correctness", "correctness_low",
                                          "correctness_high") for _, r in summary.iterrows()],
        "citation support (95% CI)": [interval(r, "citation_support", "citation_low",
                                               "citation_high") for _, r in summary.iterrows()],
        "tool calls": summary["tool_calls"], "cost USD": summary["cost_usd"].round(4),
        "p50 ms": summary["latency_p50_ms"].round(0),
    })
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        return table.to_string(index=False)
