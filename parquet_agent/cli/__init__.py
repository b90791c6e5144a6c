"""The `parquet-agent` command: one subcommand family per piece of the architecture.

Each family of subcommands is a module of this package with `register(subparsers)`; this
module only assembles them and turns designed errors into a clear message and exit status 2.
A tool error is a value and exits 0; only usage and designed errors exit non-zero. A closed
output pipe (`... | head`) ends the command quietly with status 141.
"""

from __future__ import annotations

import argparse
import sys

from parquet_agent.cli import (
    audit,
    bench,
    corpus,
    experiment,
    judge,
    lab,
    models,
    report,
    tools,
)
from parquet_agent.console import stdout_closed
from parquet_agent.errors import ParquetAgentError, describe_os_error
from parquet_agent.escape import terminal

# The command families, in help order. Each has `register(subparsers)`.
FAMILIES = (corpus, tools, models, experiment, judge, report, bench, lab, audit)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="parquet-agent",
        description="Agentic search over a Parquet corpus of SEC filings: build corpora, "
        "call tools, run and judge experiments, export audits.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for family in FAMILIES:
        family.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except ParquetAgentError as exc:
        print(f"parquet-agent: {terminal(exc)}", file=sys.stderr)  # may quote data: no escapes
        return 2
    except BrokenPipeError:  # `... | head` stopped reading: not an error of ours
        return stdout_closed()
    except OSError as exc:  # the machine (disk full, read-only, permission): one line
        print(f"parquet-agent: {describe_os_error(exc, args.command, 'run it again')}",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("parquet-agent: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
