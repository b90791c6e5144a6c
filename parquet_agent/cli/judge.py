"""`parquet-agent judge RUN_DIR --judge CONFIG_OR_MODEL [--cases ...] [--repeat K] [--batch]`.

Judges the saved cases of a finished or partial run again (no agent call; see
`judge.rejudge`) and appends the judgments with their provenance under `judgments/`, then
rebuilds the exports. `--judge` is an experiment config whose `[judge]` table is used, `rubric`
(the offline judge), or `provider:model` (`openai:gpt-4o-mini`; the key from the provider's usual
variable: OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY). `--primary` makes these judgments
the ones the exports, summaries and charts use (`--primary run` in `export --judge` goes back).
Running the same command again resumes: cases already judged are not asked again.

Without `--judge`: the run's own judge (its config's `[judge]`) judges the cases whose answer
awaits it (a run with `[judge] batch = true` that stopped before its batch returned), by batch
with `--batch` (the batch the run created is polled again, never paid twice; see
`judge.pending`), else one request at a time. Their judgments go into the case journals, as
the run would have written them.

Progress goes to stderr as it judges (`judge: 3/16 judged (case)`, at most a line a second).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from parquet_agent.console import CountLines
from parquet_agent.errors import UsageError

KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY",
                 "google": "GEMINI_API_KEY"}


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("judge", help="judge a saved run again (appended, never "
                              "overwriting), optionally by the provider's batch API")
    p.add_argument("run_dir", type=Path, help="the run folder")
    p.add_argument("--judge", metavar="CONFIG_OR_MODEL",
                   help="an experiment config (its [judge]), 'rubric', or provider:model; "
                   "without it: the run's own judge, for the cases awaiting judgment")
    p.add_argument("--cases", nargs="+", metavar="CASE_ID", help="only these case ids")
    p.add_argument("--repeat", type=int, default=1, help="judge each case K times (flip rate)")
    p.add_argument("--batch", action="store_true",
                   help="send every pending judge request through the provider's batch API")
    p.add_argument("--primary", action="store_true",
                   help="make these judgments the ones exports and summaries use")
    p.add_argument("--no-export", action="store_true", help="do not rebuild the exports")
    p.set_defaults(handler=_judge)


def build_judge(value: str, env=None, secrets: tuple[str, ...] = ()):
    """The `Judge` that `--judge` names. `secrets`: the keys of the run it judges, kept out of
    what the judge's provider is sent and of its records."""
    from parquet_agent.experiment.runner import build_model_or_judge
    from parquet_agent.judge import Judge
    from parquet_agent.models.spec import ModelSpec, load_model_specs, validate_model

    path = Path(value)
    if path.suffix == ".toml":
        if not path.is_file():
            raise UsageError(f"--judge {value}: no such config file")
        _, spec = load_model_specs(path)
        if spec is None:
            raise UsageError(f"--judge {value}: the config has no [judge] table")
    elif value == "rubric":
        spec = ModelSpec(name="rubric", provider="rubric", model="rubric")
    elif ":" in value and value.split(":", 1)[0] in KEY_VARIABLES:
        provider, model = value.split(":", 1)
        spec = validate_model(ModelSpec(name=model.replace("/", "-").replace(":", "-"),
                                        provider=provider, model=model,
                                        api_key_env=KEY_VARIABLES[provider]),
                              "--judge", judge=True)
    else:
        raise UsageError(f"--judge {value!r}: give an experiment config (.toml), 'rubric', or "
                         f"provider:model with provider one of {', '.join(KEY_VARIABLES)}")
    return Judge(build_model_or_judge(spec, env, secrets), context_tokens=spec.context_tokens)


def run_keys(run_dir: Path) -> tuple[str, ...]:
    """The API keys the run's own config names that are set (none when it has no readable
    experiment config)."""
    import json

    from parquet_agent.errors import ConfigError
    from parquet_agent.experiment.config import ExperimentConfig
    from parquet_agent.models.factory import known_keys

    try:
        manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
        config = ExperimentConfig.from_dict(manifest["config"], source="manifest.json")
    except (OSError, ValueError, KeyError, TypeError, RecursionError, ConfigError):
        return ()
    return known_keys((*config.models, config.judge))


def _judge(args: argparse.Namespace) -> int:
    from parquet_agent.experiment.run import open_experiment

    if args.judge is None:
        return _judge_awaiting(args)
    run_dir = args.run_dir.resolve()
    judge = build_judge(args.judge, secrets=run_keys(run_dir))
    with open_experiment(run_dir, writable=True) as run:
        if not args.batch and not _negotiated(judge, run):
            return 1
        result = run.rejudge(judge, cases=args.cases, repeat=args.repeat, batch=args.batch,
                             primary=args.primary, progress=CountLines("judge", "judged"))
    print(f"judging {result.judging}: {result.summary()}")
    for cid, why in list(result.skipped.items())[:20]:
        print(f"  skipped {cid}: {why}")
    _export(args, run_dir)
    return 1 if result.pending or (result.judged and len(result.unscored) == len(result.judged)) \
        else 0


def _negotiated(judge, run) -> bool:
    """Find how the judge's server takes a structured judgment (`judge.negotiate`) and ask that
    way; False (said on stderr, nothing judged) when it cannot judge or does not answer."""
    import sys

    from parquet_agent.files import utc_now
    from parquet_agent.judge.negotiate import negotiate

    stamp = utc_now().replace(":", "").replace("-", "")
    found = negotiate(judge, run.raw, f"judge-format/{judge.model.name}-{stamp}")
    if not found.can_judge:
        print(f"parquet-agent: judge {judge.model.name!r}: {found.summary()}; nothing was judged "
              "(every case stays pending: run the command again once the judge can judge)",
              file=sys.stderr)
        return False
    judge.output_mode = found.mode
    if found.mode is not None:
        print(f"judge {judge.model.name}: {found.summary()}")
    return True


def _judge_awaiting(args: argparse.Namespace) -> int:
    """The run's own judge over the cases awaiting it (see the module docstring)."""
    from parquet_agent.experiment.runner import build_model_or_judge, config_judge
    from parquet_agent.experiment.config import ExperimentConfig
    from parquet_agent.models.batch import Polling
    from parquet_agent.judge.pending import awaiting_cases, judge_pending
    from parquet_agent.experiment.run import open_experiment

    if args.cases or args.repeat != 1 or args.primary:
        raise UsageError("--cases, --repeat and --primary go with --judge (another judge); "
                         "without --judge the run's own judge judges every case awaiting it")
    run_dir = args.run_dir.resolve()
    with open_experiment(run_dir, writable=True) as run:
        config = ExperimentConfig.from_dict(run.manifest["config"], source="manifest.json")
        if not awaiting_cases(run):
            print(f"{run_dir}: no case awaits judgment")
            return 0
        judge = config_judge(config, build_model_or_judge(config.judge, None,
                                                          run_keys(run_dir)))
        if not args.batch and not _negotiated(judge, run):
            return 1
        result = judge_pending(run, judge, batch=args.batch,
                               polling=Polling(max_wait_s=config.judge.batch_wait_s),
                               progress=CountLines("judge", "judged"))
    print(f"the run's judge {judge.model.name}: "
          + result.summary("by batch" if args.batch else "one at a time"))
    for cid, why in list(result.pending.items())[:20]:
        print(f"  awaiting {cid}: {why}")
    _export(args, run_dir)
    return 1 if result.pending else 0


def _export(args: argparse.Namespace, run_dir: Path) -> None:
    if not args.no_export:
        from parquet_agent.report.exporter import export_run

        export_run(run_dir)
        print(f"exports rebuilt: {run_dir / 'report.html'}")
