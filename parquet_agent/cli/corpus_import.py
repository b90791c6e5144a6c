"""CLI: `parquet-agent corpus import SRC --out DIR [--jobs N]`.

`register_import(corpus_subparsers)` adds the `import` subcommand to the existing `corpus` family
(wired in by `parquet_agent.cli.corpus`); `run_import(args) -> int` is its handler. It prints
the import summary (counts per format, every skipped file with its reason) and exits 0 when at
least one filing was imported, 1 when none was (designed errors exit 2 through the cli package).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from parquet_agent.corpus.importer.driver import import_corpus


def run_import(args: argparse.Namespace) -> int:
    result = import_corpus(Path(args.src), Path(args.out), jobs=args.jobs)
    print(result.summary())
    if result.imported:
        print(f"per-file provenance and notes: {Path(args.out) / 'manifest.json'} (origin)")
        return 0
    print("nothing was imported: see the reasons above")
    return 1


def register_import(corpus_subparsers) -> argparse.ArgumentParser:
    parser = corpus_subparsers.add_parser(
        "import",
        help="import a folder of real EDGAR filings (SGML, HTML/iXBRL, EDGAR-CORPUS JSON, "
        "page-marked PDF text) into a tool-ready corpus",
        description="Turn a folder of real filings into a corpus in the contract schema, with "
        "the tool-ready layout, the sidecar index and a manifest with per-file provenance. "
        "Unsupported or unreadable files are listed with the reason; the rest import.",
    )
    parser.add_argument("src", help="folder of filings (searched recursively)")
    parser.add_argument("--out", required=True, help="new, empty corpus folder to write")
    parser.add_argument("--jobs", type=int, default=1,
                        help="processes converting files in parallel (default 1)")
    parser.set_defaults(handler=run_import)
    return parser
