"""`parquet-agent tool`: call tools directly, for people and scripts.

    parquet-agent tool CORPUS_DIR NAME --args JSON     one call, one JSON result on stdout
    parquet-agent tool CORPUS_DIR --batch FILE.jsonl   one call per line ({"name", "args"}),
                                                       one result per line, in order

Each result is `{"ok", "output", "error": {"kind", "message"} | null, "timings", ...}`. A tool
error is a value (exit status 0); only a usage error (bad flags, unreadable batch file, unusable
corpus folder) exits non-zero.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from parquet_agent.errors import UsageError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "tool",
        help="call one tool (or a batch of calls) over a corpus folder",
        description="Call the agent's tools directly. Tool errors are printed as values and exit 0.",
    )
    parser.add_argument("corpus_dir", metavar="CORPUS_DIR")
    parser.add_argument("name", metavar="NAME", nargs="?", help="tool name (omit with --batch)")
    parser.add_argument("--args", dest="arguments", default="{}", help="tool arguments as a JSON object")
    parser.add_argument("--batch", type=Path, help="JSON lines file: one {\"name\", \"args\"} per line")
    parser.add_argument("--strategy", default="sql+stream", choices=("sql", "sql+stream"))
    parser.add_argument("--cache", default="on", choices=("on", "off"))
    parser.add_argument("--allow-unprotected", action="store_true",
                        help="run even where the kernel cannot protect the corpus from a worker "
                             "(not root and no Landlock); refused otherwise")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from parquet_agent.tools.facade import Tools

    if (args.name is None) == (args.batch is None):
        raise UsageError("give either a tool NAME (with --args JSON) or --batch FILE.jsonl, not both")
    calls = _batch_calls(args.batch) if args.batch else [(args.name, _parse_args(args.arguments))]
    with Tools.open(args.corpus_dir, args.strategy, cache=args.cache,
                    allow_unprotected=args.allow_unprotected) as tools:
        for name, arguments in calls:
            result = tools.call_raw(name, arguments)
            sys.stdout.write(json.dumps(result.to_json(), ensure_ascii=False) + "\n")
            sys.stdout.flush()
    return 0


def _parse_args(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--args is not valid JSON ({exc}); example: --args '{{\"query\": \"SELECT 1\"}}'") from exc


def _batch_calls(path: Path) -> list[tuple[object, object]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read batch file {path}: {exc}") from exc
    calls = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError as exc:
            raise UsageError(f"{path}:{number}: not valid JSON ({exc})") from exc
        if not isinstance(entry, dict) or "name" not in entry:
            raise UsageError(f'{path}:{number}: expected an object like {{"name": "sql", "args": {{...}}}}')
        calls.append((entry["name"], entry.get("args", {})))
    return calls
