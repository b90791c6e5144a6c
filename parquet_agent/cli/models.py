"""`parquet-agent preflight CONFIG [--raw-dir DIR] [--estimate]`: one cheap health call per model.

Sends one tiny request to every model of the config and to its judge (API keys from the
environment variables the config names), records the exact request and response bytes under
--raw-dir (default: a new temporary folder, printed), and prints for each: the provider and
model asked for and the ones that answered, attempts, tokens, cost and where the cost comes
from. Each model of a provider API also gets the tool probe (`models.probes`): a prompt that asks
for a call of a trivial tool, unforced as the agent asks; a model or server that does not call it
is reported as failed, saying whether the server left the tools out of the prompt (llama.cpp's
default chat format does) or the model ignored them, before a grid spends money on cases that can
never call a tool. The judge finds the way of asking for a structured judgment that its server
takes (`judge.negotiate`: json_schema, json_object with the schema, a forced tool call, or text
with one repair); a judge that can judge in none fails. An offline model or judge (rubric) makes
no call: it is listed as skipped, not as answered. With --estimate it first prints what the whole
run is expected to cost (a range, from the number of cases, the expected turns, and the prompt
and tool-output sizes). Writes preflight.json beside the raw files. Exit 0 when every model that
was called answered (and called the tool, and the judge can judge), 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from parquet_agent.errors import ModelCallError, ParquetAgentError
from parquet_agent.models.factory import build_model
from parquet_agent.models.probes import tool_probe
from parquet_agent.models.protocol import (
    Attempt,
    GenerationSettings,
    Model,
    ModelRequest,
    SystemMessage,
    UserMessage,
)
from parquet_agent.models.sink import DirectorySink
from parquet_agent.models.spec import ModelSpec, load_model_specs

HEALTH_PROMPT = "Reply with the single word: ok"
TOOL_PROVIDERS = ("openai", "anthropic", "google")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "preflight",
        help="send one cheap health call per configured model and report provider and cost",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    p.add_argument("config", type=Path, help="experiment config (TOML)")
    p.add_argument("--raw-dir", type=Path, default=None,
                   help="folder for the raw request/response files (default: a new temp folder)")
    p.add_argument("--estimate", action="store_true",
                   help="also print the run's expected cost (a range) before the health calls")
    p.set_defaults(handler=run_preflight)


def _check_raw_dir(root: Path) -> None:
    """A --raw-dir must be new, empty or an earlier preflight's (raw files are never written
    over; its preflight.json is replaced): a folder of other files is refused untouched."""
    from parquet_agent.errors import UsageError

    if root.exists() and not root.is_dir():
        raise UsageError(f"--raw-dir {root} is not a folder")
    if root.is_dir() and any(root.iterdir()) and not (root / "preflight.json").is_file():
        names = ", ".join(sorted(p.name for p in root.iterdir())[:3])
        raise UsageError(f"--raw-dir {root} is not empty ({names}, ...) and is no earlier "
                         "preflight's folder: give a new or empty folder (nothing there was "
                         "changed)")


def run_preflight(args: argparse.Namespace) -> int:
    if getattr(args, "estimate", False):
        from parquet_agent.experiment.estimate import estimate_config, estimate_text
        from parquet_agent.experiment.config import load_config

        print(estimate_text(estimate_config(load_config(args.config))))
    models, judge = load_model_specs(args.config)
    root = args.raw_dir or Path(tempfile.mkdtemp(prefix="parquet-agent-preflight-"))
    _check_raw_dir(root)
    root.mkdir(parents=True, exist_ok=True)
    sink = DirectorySink(root)
    print(f"preflight: recording raw exchanges under {root}")
    report = []
    for role, spec in [("model", m) for m in models] + ([("judge", judge)] if judge else []):
        entry = _check(role, spec, sink)
        report.append(entry)
    (root / "preflight.json").write_text(json.dumps(
        {"schema_version": 1, "config": str(args.config),
         "at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "models": report},
        indent=1, default=str))
    skipped = sum(1 for e in report if e.get("skipped"))
    failures = sum(1 for e in report if not e["ok"])
    called = len(report) - skipped
    print(f"preflight: {called - failures}/{called} model(s) answered"
          + (f", {skipped} offline skipped (no call)" if skipped else "")
          + f"; details in {root / 'preflight.json'}")
    return 0 if failures == 0 else 1


def _check(role: str, spec: ModelSpec, sink: DirectorySink) -> dict[str, Any]:
    """One model's (or the judge's) checks, printed, as its preflight.json entry."""
    entry: dict[str, Any] = {"role": role, "name": spec.name, "provider": spec.provider,
                             "model": spec.model}
    if spec.provider == "rubric":  # offline judge of the judge piece: nothing to call
        entry.update(ok=True, skipped="offline rubric judge: no model call to check")
        print(f"  [{role}] {spec.name}: rubric -> skipped (offline, no model call)")
        return entry
    attempts: tuple[Attempt, ...] = ()
    try:
        model = build_model(spec)
        request = ModelRequest(
            messages=(SystemMessage("You are a health check."), UserMessage(HEALTH_PROMPT)),
            settings=GenerationSettings(max_output_tokens=16),
            purpose="health",
            label=f"preflight/{spec.name}",
        )
        result = model.complete(request, sink)
        attempts = result.attempts
        entry.update(ok=True, reply=result.reply.text,
                     actual_provider=result.reply.provider, actual_model=result.reply.model)
        if role == "model" and spec.provider in TOOL_PROVIDERS:
            attempts += _tools(model, spec, sink, entry)
        if role == "judge" and not spec.batch:  # a batch judge: its vendor's strict way
            attempts += _judge_format(model, spec, sink, entry)
    except ModelCallError as exc:
        attempts = exc.attempts
        entry.update(ok=False, error=str(exc))
    except ParquetAgentError as exc:
        entry.update(ok=False, error=str(exc))
    usd = [a.cost.usd for a in attempts]
    entry["attempts"] = [asdict(a) for a in attempts]
    known = [u for u in usd if u is not None]
    # an unknown cost stays unknown: null, never a sum that reads as $0
    entry["cost_usd"] = sum(known) if len(known) == len(usd) and usd else None
    entry["cost_usd_known"] = sum(known)
    entry["attempts_without_cost"] = len(usd) - len(known)
    _print_entry(entry, attempts)
    return entry


def _tools(model: Model, spec: ModelSpec, sink: DirectorySink,
           entry: dict[str, Any]) -> tuple[Attempt, ...]:
    """The tool probe: an unforced call the prompt asks for (see `models.probes`)."""
    probe = tool_probe(model, sink, f"preflight/{spec.name}-tools")
    entry.update(ok=probe.problem is None, calls_tools=probe.problem is None,
                 tool_probe=probe.facts, **({"error": probe.problem} if probe.problem else {}))
    return probe.attempts


def _judge_format(model: Model, spec: ModelSpec, sink: DirectorySink,
                  entry: dict[str, Any]) -> tuple[Attempt, ...]:
    """How the judge's server takes a structured judgment (see `judge.negotiate`)."""
    from parquet_agent.judge import Judge
    from parquet_agent.judge.negotiate import negotiate

    found = negotiate(Judge(model, context_tokens=spec.context_tokens), sink,
                      f"preflight/{spec.name}-judge-format")
    entry.update(structured_output=found.mode, judge_format=found.to_json(),
                 ok=found.can_judge)
    if not found.can_judge:
        entry["error"] = (f"{found.summary()}. Runs with this judge stop before their first "
                          "case; use a judge model or server that returns a judgment.")
    return found.attempts


def _print_entry(entry: dict, attempts) -> None:
    head = f"  [{entry['role']}] {entry['name']}: {entry['provider']} {entry['model']}"
    if not entry["ok"]:
        print(f"{head} -> FAILED: {entry['error']}")
    else:  # the health call's figures; the probes' attempts are listed below
        last = [a for a in attempts if a.label == f"preflight/{entry['name']}"][-1]
        cost = last.cost
        usd = "unknown" if cost.usd is None else f"${cost.usd:.6f}"
        print(f"{head} -> actual {entry['actual_provider']} {entry['actual_model']}; "
              f"{len(attempts)} attempt(s); tokens in/out {last.usage.input_tokens}/"
              f"{last.usage.output_tokens}; cost {usd} ({cost.source}"
              f"{', ' + cost.note if cost.note else ''})")
    if entry.get("judge_format"):
        print(f"      judge format: {entry['judge_format']['summary']}")
    for a in attempts:  # each call's attempts are numbered from 1: the label tells them apart
        print(f"      {a.label} attempt {a.number}: {a.outcome} status={a.http_status} "
              f"raw={a.request_path} {a.response_path}")
