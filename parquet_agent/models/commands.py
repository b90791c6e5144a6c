"""`parquet-agent preflight CONFIG [--raw-dir DIR] [--estimate]`: one cheap health call per model.

Sends one tiny request to every model of the config and to its judge (API keys from the
environment variables the config names), records the exact request and response bytes under
--raw-dir (default: a new temporary folder, printed), and prints for each: the provider and
model asked for and the ones that answered, attempts, tokens, cost and where the cost comes
from. Each model of a provider API also gets one forced call of a trivial tool (`echo_number`):
a model or server that does not call it (llama.cpp's default chat template drops the tools) is
reported as failed, before a grid spends money on cases that can never call a tool. An offline
model or judge (rubric) makes no call: it is listed as skipped, not as answered. With
--estimate it first prints what the whole run is expected to cost (a range, from the number of
cases, the expected turns, and the prompt and tool-output sizes). Writes preflight.json beside
the raw files. Exit 0 when every model that was called answered (and called the tool), 1
otherwise.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

from parquet_agent.errors import ModelCallError, ParquetAgentError
from parquet_agent.models.factory import build_model
from parquet_agent.models.protocol import (
    GenerationSettings,
    ModelRequest,
    SystemMessage,
    ToolSpec,
    UserMessage,
)
from parquet_agent.models.sink import DirectorySink
from parquet_agent.models.spec import load_model_specs

HEALTH_PROMPT = "Reply with the single word: ok"
TOOL_PROMPT = "Call the tool echo_number with n = 7."
ECHO_TOOL = ToolSpec("echo_number", "Echo a number back.", {
    "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
    "additionalProperties": False})


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


def run_preflight(args: argparse.Namespace) -> int:
    if getattr(args, "estimate", False):
        from parquet_agent.estimate import estimate_config, estimate_text
        from parquet_agent.experiment_config import load_config

        print(estimate_text(estimate_config(load_config(args.config))))
    models, judge = load_model_specs(args.config)
    root = args.raw_dir or Path(tempfile.mkdtemp(prefix="parquet-agent-preflight-"))
    root.mkdir(parents=True, exist_ok=True)
    sink = DirectorySink(root)
    print(f"preflight: recording raw exchanges under {root}")
    report, failures, skipped = [], 0, 0
    for role, spec in [("model", m) for m in models] + ([("judge", judge)] if judge else []):
        entry = {"role": role, "name": spec.name, "provider": spec.provider, "model": spec.model}
        if spec.provider == "rubric":  # offline judge of the judge piece: nothing to call
            entry.update(ok=True, skipped="offline rubric judge: no model call to check")
            report.append(entry)
            skipped += 1
            print(f"  [{role}] {spec.name}: rubric -> skipped (offline, no model call)")
            continue
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
            if role == "model" and spec.provider in ("openai", "anthropic", "google"):
                tool_attempts, problem = _tool_check(model, spec.name, sink)
                attempts = attempts + tool_attempts
                entry.update(ok=problem is None, calls_tools=problem is None,
                             **({"error": problem} if problem else {}))
        except ModelCallError as exc:
            attempts = exc.attempts
            entry.update(ok=False, error=str(exc))
        except ParquetAgentError as exc:
            attempts = ()
            entry.update(ok=False, error=str(exc))
        usd = [a.cost.usd for a in attempts]
        entry["attempts"] = [asdict(a) for a in attempts]
        known = [u for u in usd if u is not None]
        # an unknown cost stays unknown: null, never a sum that reads as $0
        entry["cost_usd"] = sum(known) if len(known) == len(usd) and usd else None
        entry["cost_usd_known"] = sum(known)
        entry["attempts_without_cost"] = len(usd) - len(known)
        failures += 0 if entry["ok"] else 1
        report.append(entry)
        _print_entry(entry, attempts)
    (root / "preflight.json").write_text(json.dumps(
        {"schema_version": 1, "config": str(args.config),
         "at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "models": report},
        indent=1, default=str))
    called = len(report) - skipped
    print(f"preflight: {called - failures}/{called} model(s) answered"
          + (f", {skipped} offline skipped (no call)" if skipped else "")
          + f"; details in {root / 'preflight.json'}")
    return 0 if failures == 0 else 1


def _tool_check(model, name: str, sink) -> tuple[tuple, str | None]:
    """One forced call of `echo_number`: (attempts, None) or (attempts, what is wrong)."""
    request = ModelRequest(
        messages=(SystemMessage("You are a health check."), UserMessage(TOOL_PROMPT)),
        tools=(ECHO_TOOL,), settings=GenerationSettings(max_output_tokens=64,
                                                        tool_choice="required"),
        purpose="health", label=f"preflight/{name}-tools")
    try:
        result = model.complete(request, sink)
    except ModelCallError as exc:
        return exc.attempts, (f"the forced tool call failed: {exc} The model or server cannot "
                              "be used with a tool strategy as configured.")
    calls = [c for c in result.reply.tool_calls if c.name == ECHO_TOOL.name]
    if calls and not calls[0].arguments_error:
        return result.attempts, None
    said = (result.reply.text or "")[:120]
    return result.attempts, (
        f"asked to call {ECHO_TOOL.name} (tool_choice required), the model called "
        f"{[c.name for c in result.reply.tool_calls] or 'no tool'} and said {said!r}: it will "
        "not call the data tools. For llama.cpp's server, start it with a chat format that "
        "offers tools (e.g. --chat_format chatml-function-calling) or a model whose template "
        "does; otherwise run this model with the closed-book strategy only.")


def _print_entry(entry: dict, attempts) -> None:
    head = f"  [{entry['role']}] {entry['name']}: {entry['provider']} {entry['model']}"
    if not entry["ok"]:
        print(f"{head} -> FAILED: {entry['error']}")
    else:
        last = attempts[-1]
        cost = last.cost
        usd = "unknown" if cost.usd is None else f"${cost.usd:.6f}"
        print(f"{head} -> actual {entry['actual_provider']} {entry['actual_model']}; "
              f"{len(attempts)} attempt(s); tokens in/out {last.usage.input_tokens}/"
              f"{last.usage.output_tokens}; cost {usd} ({cost.source}"
              f"{', ' + cost.note if cost.note else ''})")
    for a in attempts:
        print(f"      attempt {a.number}: {a.outcome} status={a.http_status} "
              f"raw={a.request_path} {a.response_path}")
