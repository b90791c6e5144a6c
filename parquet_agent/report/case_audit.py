"""Print one case of a run readably in a terminal.

    python -m parquet_agent.case_audit RUN_DIR --question Q001 --model M --method sql [--full]
    python -m parquet_agent.report.case_audit ...                  (the same)

`--model` takes the configured model name or the provider's model id (`gpt-6-luna` or
`openai/gpt-6-luna`); `--method` is the strategy. Either may be left out when the run has only
one model (or one strategy). Without `--full`, long texts (tool outputs,
requests) are cut to a preview and raw files are named; `--full` prints the complete tool
outputs and the exact text of every raw request and response of the case (every attempt, the
judge's included); `--json` prints the case record (the JSON `cases/<case-id>.json` holds).

The record is built from the run's journal and raw files on the spot (read-only), so it works on
any saved run, exported or not. A question, model or method the run does not have exits with
status 2 and a message listing what exists. Terminal safety: control characters (ANSI escapes
included) and bidi overrides in case text are printed as visible `<U+XXXX>` marks.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from parquet_agent.console import stdout_closed
from parquet_agent.errors import ParquetAgentError, UsageError
from parquet_agent.escape import terminal
from parquet_agent.report.case_model import CaseRecord, RawInline
from parquet_agent.report.case_record import RunSource, build_case

PREVIEW = 600
def _only(kinds: str, option: str, known: list[str]) -> str:
    """The run's one model or strategy, for an option left out; UsageError when it has more."""
    if len(known) == 1:
        return known[0]
    raise UsageError(f"this run has {len(known)} {kinds} ({', '.join(known)}): give {option}")


def resolve_case(source: RunSource, question: str, model: str | None = None,
                 method: str | None = None) -> str:
    """The case id for question x model x method, or UsageError listing what the run has.
    `model` or `method` None: the run's only one."""
    cases = source.case_ids()
    parts = [c.split("__") for c in cases if c.count("__") == 2]
    questions = sorted({p[0] for p in parts})
    models = sorted({p[1] for p in parts})
    methods = sorted({p[2] for p in parts})
    model = _only("models", "--model", models) if model is None else model
    method = _only("strategies", "--method", methods) if method is None else method
    aliases: dict[str, set[str]] = {name: {name} for name in models}
    for name in models:
        spec = source.models.get(name, {})
        if spec.get("model"):
            for alias in (spec["model"], f"{spec.get('provider')}/{spec['model']}"):
                if alias not in models:  # a configured name always means that model
                    aliases.setdefault(alias, set()).add(name)
    problems = []
    question, problem = _match("question", question, questions)
    problems += [problem] if problem else []
    if model not in aliases:
        listed = [f"{n} ({source.models.get(n, {}).get('provider')}/"
                  f"{source.models.get(n, {}).get('model')})" for n in models]
        problems.append(f"model {model!r} is not in this run; it has: " + ", ".join(listed))
    elif len(aliases[model]) > 1:
        problems.append(f"model {model!r} is the model id of several configured models ("
                        + ", ".join(sorted(aliases[model])) + "); give the name")
    method, problem = _match("method", method, methods)
    problems += [problem] if problem else []
    if problems:
        raise UsageError(f"{source.run.dir}: " + "; ".join(problems))
    cid = f"{question}__{next(iter(aliases[model]))}__{method}"
    if cid not in cases:
        raise UsageError(f"{source.run.dir}: no case {cid}")
    return cid


SHOWN_IDS = 8  # ids listed when a given one is not in the run


def _match(kind: str, given: str, known: list[str]) -> tuple[str, str | None]:
    """`given` as the run spells it (an exact match, else the one case-insensitive match), or
    a problem naming the closest ids and how many the run has."""
    if given in known:
        return given, None
    folded = [k for k in known if k.casefold() == given.casefold()]
    if len(folded) == 1:
        return folded[0], None
    close = difflib.get_close_matches(given, known, n=3, cutoff=0.6) or difflib.get_close_matches(
        given.upper(), [k.upper() for k in known], n=3, cutoff=0.6)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    shown = ", ".join(known[:SHOWN_IDS]) + (f", ... ({len(known)} in all)"
                                           if len(known) > SHOWN_IDS else "")
    return given, f"{kind} {given!r} is not in this run; {hint}it has: {shown}"


class _Printer:
    def __init__(self, out: TextIO, full: bool):
        self.out, self.full = out, full

    def line(self, text: Any = "") -> None:
        self.out.write(terminal(text) + "\n")

    def head(self, text: str) -> None:
        self.line()
        self.line(f"== {text} " + "=" * max(0, 70 - len(text)))

    def field(self, name: str, value: Any) -> None:
        value = "-" if value is None else value
        text = terminal(value)
        if "\n" in text:
            self.out.write(f"  {name}:\n" + "".join(f"      {ln}\n" for ln in text.split("\n")))
        else:
            self.out.write(f"  {name}: {text}\n")

    def block(self, name: str, text: str | None) -> None:
        if text is None:
            self.field(name, "(none)")
            return
        if not self.full and len(text) > PREVIEW:
            text = text[:PREVIEW] + f"\n... ({len(text) - PREVIEW} more characters; use --full)"
        self.field(name, text)

    def raw(self, name: str, raw: RawInline | None) -> None:
        if raw is None:
            self.field(name, "(not recorded)")
            return
        self.field(name, f"{raw.path} ({raw.bytes} bytes, {raw.sha256})")
        if self.full:
            self.block("  exact content", raw.text if raw.text is not None
                       else "(base64) " + (raw.base64 or ""))


def print_case(c: CaseRecord, out: TextIO = sys.stdout, *, full: bool = False,
               source: RunSource | None = None) -> None:
    """Print the record `c`; with `full` and the run's `source`, every attempt's raw request
    and response too (exact text), not only the final-answer and judge exchanges."""
    p = _Printer(out, full)
    m, j = c.model, c.judgment
    p.line(f"case {c.case_id}  (run {c.run_id})")
    p.head("1. question, reference, model, status, answer")
    p.field("question", c.question)
    p.field("reference", c.reference_answer if c.reference_answer is not None
            else "(not recorded: the judge never saw this case)")
    p.field("model", f"{m.name}: requested {m.requested_provider}/{m.requested_model}, "
            f"actual {m.actual_provider}/{m.actual_model}")
    p.field("strategy", c.strategy)
    p.field("status", f"{c.status} ({c.status_reason})")
    p.field("final answer", c.final_answer if c.final_answer is not None else "(none)")
    p.head("2. tool counts, rounds, attempts, cost, timing")
    p.field("tool counts", ", ".join(f"{k}={v}" for k, v in c.tool_counts.items()))
    t, cost = c.tokens, c.cost
    p.field("tokens", f"in {t.input}, out {t.output}, cached {t.cached}, "
            f"reasoning {t.reasoning}")
    p.field("cost USD", cost.usd if cost.usd is not None
            else f"unknown ({cost.unknown_attempts} attempts without a cost)")
    p.field("timing", f"{c.timing.started_at} -> {c.timing.ended_at}, "
            f"wall {c.timing.wall_ms} ms")
    p.head(f"3. tool calls ({len(c.tool_calls)})")
    for i, call in enumerate(c.tool_calls, 1):
        state = "ok" if call.ok else f"ERROR {call.error_kind}: {call.error_message}"
        cache = "cache hit" if call.cache_hit else ("worker" if call.dispatched
                                                   else "not dispatched")
        p.line(f"  #{i} turn {call.turn} {call.name} [{call.call_id}] {state}; {cache}")
        p.field("  arguments", json.dumps(call.arguments, ensure_ascii=False, sort_keys=True))
        if call.offsets:
            p.field("  offsets", "; ".join(f"{o.file_stem} [{o.start}, {o.end})"
                                           for o in call.offsets))
        p.block("  returned", json.dumps(call.output, ensure_ascii=False, indent=1))
    p.head("4. final-answer request")
    p.raw("request", c.final_request)
    p.raw("response", c.final_response)
    if c.latest_request:
        p.raw("latest context sent", c.latest_request)
    if c.incomplete:
        inc = c.incomplete
        p.field("latest request", inc.latest_request_path)
        p.field("missing raw requests", "; ".join(
            f"{x.label or 'turn ' + str(x.turn)} attempt {x.attempt}: "
            f"{x.why}" for x in inc.missing_raw_requests) or "none")
        p.field("tool outputs not in latest request",
                ", ".join(inc.unsent_tool_outputs) or "none")
    p.head("5. judge")
    if j is None:
        p.line("  not judged")
    else:
        p.field("scores", f"correctness {j.correctness}, citation support "
                f"{j.citation_support}" + ("" if j.scored else
                                           f" (unscored: {j.unscored_reason})"))
        p.field("rationale", j.rationale)
        p.raw("judge request", j.request)
        p.raw("judge response", j.response)
    p.head(f"6. API attempts ({len(c.attempts)})")
    for a in c.attempts:
        usage, acost = a.usage, a.cost
        p.line(f"  {a.label} #{a.number} {a.purpose} {a.outcome}"
               f"{': ' + str(a.error) if a.error else ''}; "
               f"{a.actual_provider or 'unverified'}/{a.actual_model or 'unverified'}; "
               f"{a.duration_ms} ms; "
               f"tokens {usage.input_tokens}/{usage.output_tokens}; "
               f"USD {acost.usd if acost else None} ({acost.source if acost else None})")
        for kind, path, stored in (("request", a.request_path, a.request_in_store),
                                   ("response", a.response_path, a.response_in_store)):
            missing = "" if stored else "  [MISSING]"
            p.line(f"      {kind}: {path}{missing}")
            raw = source.read(path) if full and source is not None and path else None
            if raw is not None:
                p.raw(f"    {kind}", RawInline.model_validate(raw.inline()))
    p.line()
    p.line("print any raw file exactly: parquet-agent raw RUN_DIR PATH")


def build_parser(prog: str = "python -m parquet_agent.case_audit") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description="Print one case of a run readably.")
    add_arguments(parser)
    return parser


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, help="the run folder")
    parser.add_argument("--question", required=True, help="question id, e.g. Q001")
    parser.add_argument("--model", help="configured model name or provider model id "
                        "(may be left out when the run has one model)")
    parser.add_argument("--method", help="strategy: sql or sql+stream (may be left out when "
                        "the run has one strategy)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--full", action="store_true",
                       help="complete requests, responses and tool outputs")
    group.add_argument("--json", action="store_true", help="print the case record as JSON")


def run_audit(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    source = RunSource.open(args.run_dir)
    try:
        cid = resolve_case(source, args.question, args.model, args.method)
        record = build_case(source, cid)
        if args.json:
            out.write(json.dumps(record.to_dict(), sort_keys=True, indent=1, ensure_ascii=True)
                      + "\n")
        else:
            print_case(record, out, full=args.full, source=source)
    finally:
        source.run.close()
        source.raw.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run_audit(args)
    except ParquetAgentError as exc:
        print(f"case_audit: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `... | head` closed the pipe: not an error
        return stdout_closed()


if __name__ == "__main__":
    raise SystemExit(main())
