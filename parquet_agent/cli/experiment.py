"""`parquet-agent run`, `demo` and `runs`: run an experiment config or the offline demo, list runs.

The demo builds the bundled sample corpus (2,000 synthetic filings, seed 0) into `data/sample`
when it is not there yet, then runs the offline grid: the baseline policy x both strategies,
judged by the rubric judge, over every sample question (`configs/demo.toml` is the same
experiment). It needs no network and no keys.

A run looks the way it went: a failed health check stops it before any case (exit 2, one line
naming the model, URL and error); a run with failed or unfinished cases exits 1 after listing
the reasons grouped with counts and the command that resumes it; Ctrl-C (exit 130) names the
run folder and the same command.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd

from parquet_agent.corpus.sample import ensure_sample
from parquet_agent.escape import terminal
from parquet_agent.experiment.config import ExperimentConfig


QUIET_HELP = ("print nothing on stdout (no estimate, progress or summary); errors and why "
              "cases did not finish still go to stderr, and the exit status says how it went")


def register(subparsers: argparse._SubParsersAction) -> None:
    run = subparsers.add_parser("run", help="run (or resume) an experiment config")
    run.add_argument("config", type=Path, help="experiment config (TOML)")
    run.add_argument("--run-dir", type=Path, help="the run folder (default: a new one in runs_dir)")
    run.add_argument("--resume", action="store_true", help="finish the run in --run-dir")
    run.add_argument("--cache-policy", choices=("on", "off"), help="override [limits].cache")
    run.add_argument("--retry-failed", action="store_true",
                     help="with --resume: run again the cases that finished failed (their "
                     "earlier attempts stay in the journal and the ledger)")
    run.add_argument("--keep-going", action="store_true",
                     help="run the cases even when a model fails its health check")
    run.add_argument("--engine", choices=("local", "ray"),
                     help="where cases run (default: the config's [engine] kind, else local); "
                     "ray needs parquet_agent[ray] and a running cluster")
    run.add_argument("--quiet", action="store_true", help=QUIET_HELP)
    run.set_defaults(handler=_run)

    demo = subparsers.add_parser("demo", help="build the sample corpus if needed and run the "
                                 "offline demo experiment")
    demo.add_argument("--data", type=Path, default=Path("data/sample"),
                      help="where the sample corpus lives (default: data/sample)")
    demo.add_argument("--runs", type=Path, default=Path("runs"), help="runs folder (default: runs)")
    demo.add_argument("--sample", type=int, help="run only N questions (seeded), not all")
    demo.add_argument("--run-dir", type=Path, help="the run folder (default: a new one in --runs)")
    demo.add_argument("--resume", action="store_true",
                      help="finish an interrupted demo run: --run-dir, or else the latest "
                      "unfinished demo run in --runs")
    demo.add_argument("--quiet", action="store_true", help=QUIET_HELP)
    demo.set_defaults(handler=_demo)

    runs = subparsers.add_parser("runs", help="list the runs in a folder with their status "
                                 "(complete / partial / failed / running), counts and cost")
    runs.add_argument("runs_dir", nargs="?", type=Path, default=Path("runs"),
                      help="the runs folder (default: runs)")
    runs.set_defaults(handler=_runs)


def _run(args: argparse.Namespace) -> int:
    from parquet_agent.experiment.runner import Experiment

    experiment = Experiment.from_toml(args.config, progress=not args.quiet)
    if args.engine is not None:
        config = experiment.config
        experiment.config = replace(config, engine=replace(config.engine, kind=args.engine))
    command = ["parquet-agent", "run", str(args.config)]
    estimates = None
    if not args.resume and not args.quiet:  # what the whole grid should cost, before any call
        from parquet_agent.experiment.estimate import estimate_config, estimate_text

        estimates = estimate_config(experiment.config)
        print(estimate_text(estimates), flush=True)
    return _execute(command, lambda: experiment.run(
        args.run_dir, resume=args.resume, cache_policy=args.cache_policy,
        keep_going=args.keep_going, retry_failed=args.retry_failed), estimates,
        quiet=args.quiet)


def _execute(command: list[str], start, estimates=None, *, quiet: bool = False,
             note: str | None = None) -> int:
    """Run `start()`, then print the summary (and `note` after it), the actual cost against
    the estimate and what did not finish; the exit status says how it went (0 all finished,
    1 cases failed or unfinished, 130 interrupted). `quiet`: nothing on stdout; what went
    wrong still goes to stderr."""
    from parquet_agent.errors import MachineFault, RunInterrupted

    try:
        run = start()
    except RunInterrupted as exc:
        print(f"parquet-agent: interrupted; run folder {exc.run_dir}\n"
              f"  resume with: {resume_command(command, exc.run_dir)}", file=sys.stderr)
        return 130
    except MachineFault as exc:  # one line, ending with the exact command that finishes it
        if exc.run_dir is None:
            raise
        print("parquet-agent: " + exc.advice(
            f"finish it with `{resume_command(command, exc.run_dir)}`"), file=sys.stderr)
        return 2
    if not quiet:
        _print_result(run)
        if note:
            print(note)
    if estimates is not None:
        from parquet_agent.experiment.estimate import check_text

        spent = run.fold().activity()  # health checks included
        print(check_text(estimates, spent["cost_usd_known"], spent["cost_unknown_attempts"]))
    return _print_failures(run, command)


def resume_command(command: list[str], run_dir: Path, *, retry_failed: bool = False) -> str:
    """The shell command that resumes `run_dir` (quoted for a POSIX shell)."""
    extra = ["--retry-failed"] if retry_failed else []
    return shlex.join([*command, "--run-dir", str(run_dir), "--resume", *extra])


def _print_failures(run, command: list[str]) -> int:
    """On stderr: why cases did not finish, why none is complete (every case incomplete), or
    why no answer was scored; the exit status is 1 when any of these is so."""
    from parquet_agent.analysis.status import failure_groups, run_status

    cases = run.cases_df()
    groups = failure_groups(cases)
    awaiting = int(cases["awaiting_judgment"].sum())
    state = run_status(run)
    if groups:
        print(f"\n{state.status}: {state.counts_text()} cases. Why cases did not finish:",
              file=sys.stderr)
    elif state.planned and not state.complete:  # every case ended incomplete: a failed grid
        groups = _grouped(cases.loc[cases["status"] == "incomplete", "status_reason"],
                          "incomplete")
        print(f"\n{state.counts_text()} cases: none complete. Why:", file=sys.stderr)
    elif not awaiting and (unscored := _unscored_reasons(run)):
        groups = _grouped(unscored, "unscored")
        print(f"\n{state.counts_text()} cases, but the judge scored none of the "
              f"{len(unscored)} answers. Why:", file=sys.stderr)
    for count, status, reason in groups:
        print(f"  {count:>5} x {status}: {terminal(reason)}", file=sys.stderr)
    if groups:
        print(f"rerun what did not finish: {resume_command(command, run.dir, retry_failed=state.failed > 0)}",
              file=sys.stderr)
    if awaiting:  # [judge] batch: the answers are in, their batch has not returned yet
        print(f"{awaiting} case(s) awaiting judgment: their batch is polled again (never sent "
              f"twice) by `{resume_command(command, run.dir)}` or "
              f"`{shlex.join(['parquet-agent', 'judge', str(run.dir), '--batch'])}`",
              file=sys.stderr)
    return 1 if groups or awaiting else 0


def _unscored_reasons(run) -> list[str]:
    """Why each judged answer went unscored, when the judge scored none of them (else [])."""
    judged = [c.judgment for c in run.fold().cases if c.judgment is not None]
    if not judged or any(j.scored for j in judged):
        return []
    return [j.unscored_reason or "no reason recorded" for j in judged]


def _grouped(reasons, status: str) -> list[tuple[int, str, str]]:
    """(count, status, reason) per distinct reason (its first 160 characters), most first."""
    counts: dict[str, int] = {}
    for reason in reasons:
        text = " ".join(str(reason).split()) if isinstance(reason, str) else "no reason recorded"
        text = text if len(text) <= 160 else text[:159] + "…"
        counts[text] = counts.get(text, 0) + 1
    return sorted(((n, status, r) for r, n in counts.items()), key=lambda g: (-g[0], g[2]))


DEMO_NOTE = """
About these scores: the offline baseline is a keyword policy, not a language model, judged by the
offline rubric judge; it needs no network or key and is expected to score low (below 20
correctness on this sample): the demo shows the harness end to end. No real model has been run
on these sample questions yet, so there is no figure to set beside it; on FinanceBench, where
the paper's human labels exist, GPT-4 Turbo answered 18.6 % of the shared-store questions
correctly and this baseline under 3 % (docs/financebench.md). To try a model: add a [[models]]
table to configs/demo.toml (README, "Experiments") and `parquet-agent run configs/demo.toml`."""


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
    from parquet_agent.experiment.runner import Experiment

    data = ensure_sample(args.data)
    experiment = Experiment(demo_config(data, args.runs, args.sample), progress=not args.quiet)
    run_dir = args.run_dir
    if args.resume and run_dir is None:
        run_dir = _latest_unfinished(args.runs, "demo")
    command = ["parquet-agent", "demo", "--data", str(args.data), "--runs", str(args.runs)]
    command += ["--sample", str(args.sample)] if args.sample else []
    return _execute(command, lambda: experiment.run(run_dir, resume=args.resume),
                    quiet=args.quiet, note=DEMO_NOTE)


def _latest_unfinished(runs: Path, name: str) -> Path:
    from parquet_agent.errors import UsageError
    from parquet_agent.explore.runs import RunStore

    store = RunStore(runs)
    listing = store.list()
    mine = listing[(listing["kind"] == "experiment") & (listing["name"] == name)
                   & (listing["status"] != "complete")]
    if mine.empty:
        raise UsageError(f"no unfinished {name} run in {runs} to resume; start one without "
                         "--resume")
    return store.dir / mine.sort_values("created_at")["run_id"].iloc[-1]


def _runs(args: argparse.Namespace) -> int:
    from parquet_agent.explore.runs import RunStore
    from parquet_agent.store.readable import cost_text

    listing = RunStore(args.runs_dir).list()
    if listing.empty:
        print(f"no runs in {args.runs_dir}")
        return 0
    def count(column: str) -> list[str]:  # "-" where the other kind has no such count
        return ["-" if pd.isna(v) else str(v) for v in listing[column]]

    table = pd.DataFrame({
        "run": listing["run_id"], "kind": listing["kind"], "status": listing["status"],
        "findings": count("findings"), "complete": count("complete"),
        "incomplete": count("incomplete"), "failed": count("failed"),
        "unfinished": count("unfinished"), "planned": count("planned_cases"),
        "cost": [cost_text(c, int(u) if pd.notna(u) else 0)
                 for c, u in zip(listing["cost_usd"], listing["cost_unknown_attempts"])],
        "created": listing["created_at"].fillna("").str.slice(0, 19)})
    with pd.option_context("display.width", 200, "display.max_columns", 20,
                           "display.max_colwidth", 60):
        print(terminal(table.to_string(index=False, na_rep="-")))
    return 0


def _print_result(run) -> None:
    print(summary_text(run.summary()))
    report = run.dir / "report.html"
    print(f"\nrun folder: {run.dir}")
    if report.exists():
        print(f"report:     {report}")


def summary_text(summary: pd.DataFrame) -> str:
    """The summary table as text: scores with their 95% bootstrap intervals."""
    from parquet_agent.store.readable import summary_table

    if summary.empty:
        return "(no cases)"
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        return summary_table(summary).to_string(index=False)
