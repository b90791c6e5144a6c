"""The `parquet-agent corpus ...` subcommands.

    corpus build --rows N --out DIR [--seed S] [--jobs J]   synthetic corpus (+ questions, manifest), then index
    corpus prepare SRC --out DIR                 rewrite any corpus into the tool-ready layout
    corpus index DIR [--skip-only|--no-skip-index] [--jobs J]
                                                 build DIR/_index/ (locations + issuer headers)
                                                 and DIR/_skip/ (data-skipping index of parsed_md)
    corpus verify DIR [--manifest FILE]          compare DIR with a manifest; say if tool-ready
    corpus import SRC --out DIR                  real EDGAR filings -> a tool-ready corpus

Each handler returns an exit status; designed errors (CorpusError, ...) propagate to the cli package,
which prints them and exits 2. `verify` exits 1 when the folder differs from the manifest or is
not tool-ready (a finding, not an error in the command).
"""

from __future__ import annotations

import argparse
from pathlib import Path


def _build(args: argparse.Namespace) -> int:
    from parquet_agent.corpus.manifest import read_corpus_manifest
    from parquet_agent.corpus.synthetic import build_corpus

    out = Path(args.out)
    result = build_corpus(out, rows=args.rows, seed=args.seed, jobs=args.jobs,
                          overwrite=args.overwrite)
    print(result.summary())
    # the snapshot the manifest recorded a moment ago: no second pass hashing every file
    _sidecars(out, read_corpus_manifest(out).snapshot, jobs=args.jobs)
    return 0


def _sidecars(folder: Path, snapshot, *, index: bool = True, skip: bool = True,
              jobs: int | None = None) -> None:
    """The sidecar index (`_index/`) and the data-skipping index (`_skip/`) of `folder`."""
    from parquet_agent.corpus.index import build_index
    from parquet_agent.corpus.skipindex import build_skip_index
    from parquet_agent.corpus.snapshot import CorpusSnapshot

    snapshot = snapshot or CorpusSnapshot.take(folder)
    if index:
        print(build_index(folder, snapshot=snapshot).summary())
    if skip:
        print(build_skip_index(folder, snapshot=snapshot, jobs=jobs).summary())


def _prepare(args: argparse.Namespace) -> int:
    from parquet_agent.corpus.prepare import prepare

    result = prepare(Path(args.src), Path(args.out), row_group_mib=args.row_group_mib)
    print(result.summary())
    if not args.no_index:
        from parquet_agent.corpus.manifest import read_corpus_manifest

        out = Path(args.out)
        _sidecars(out, read_corpus_manifest(out).snapshot)
    return 0


def _index(args: argparse.Namespace) -> int:
    if args.skip_only and args.no_skip_index:
        from parquet_agent.errors import UsageError

        raise UsageError("--skip-only and --no-skip-index exclude each other")
    _sidecars(Path(args.dir), None, index=not args.skip_only, skip=not args.no_skip_index,
              jobs=args.jobs)
    return 0


def _verify(args: argparse.Namespace) -> int:
    from parquet_agent.corpus.verify import verify

    report = verify(
        Path(args.dir),
        Path(args.manifest) if args.manifest else None,
        require_tool_ready=args.require_tool_ready,
    )
    print(report.describe())
    return 0 if report.ok else 1


def register(subparsers) -> None:
    corpus = subparsers.add_parser(
        "corpus", help="build, prepare, index and verify corpora of SEC filings in Parquet"
    )
    sub = corpus.add_subparsers(dest="corpus_command", metavar="SUBCOMMAND", required=True)

    p = sub.add_parser("build", help="write a synthetic SEC corpus with questions, then index it")
    p.add_argument("--rows", type=int, required=True, help="number of filing rows")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--seed", type=int, default=0, help="random seed (same seed, same files)")
    p.add_argument("--jobs", type=int, help="worker processes for the build and the data-skipping "
                   "index (default: 2, or 1 for small corpora)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace a corpus in --out that was built with other rows or seed")
    p.set_defaults(handler=_build)

    p = sub.add_parser(
        "prepare",
        help="rewrite a corpus into the tool-ready layout (sorted, byte-capped row groups, "
        "bloom filter, Markdown in ~128 KiB pages), verify it row for row and record its lineage",
    )
    p.add_argument("src", help="folder of Parquet files in the corpus schema")
    p.add_argument("--out", required=True, help="output folder (must not hold Parquet files)")
    p.add_argument(
        "--row-group-mib", type=int, default=12, help="Markdown per row group (default 12 MiB)"
    )
    p.add_argument("--no-index", action="store_true", help="skip building the sidecar index")
    p.set_defaults(handler=_prepare)

    p = sub.add_parser(
        "index",
        help="build the sidecar index and header table under DIR/_index/ and the data-skipping "
        "index of parsed_md pages under DIR/_skip/",
    )
    p.add_argument("dir", help="corpus folder")
    p.add_argument("--skip-only", action="store_true",
                   help="build only the data-skipping index (e.g. for a corpus indexed before it existed)")
    p.add_argument("--no-skip-index", action="store_true",
                   help="do not build the data-skipping index (whole-corpus text queries then scan)")
    p.add_argument("--jobs", type=int,
                   help="worker processes for the data-skipping index (default: 2, or 1 for small corpora)")
    p.set_defaults(handler=_index)

    p = sub.add_parser(
        "verify",
        help="check a corpus folder against a manifest (files, rows, bytes, hashes) and "
        "whether its layout is tool-ready; exit 1 when anything differs",
    )
    p.add_argument("dir", help="corpus folder")
    p.add_argument(
        "--manifest", help="manifest JSON (default: DIR/manifest.json); see data_manifest/"
    )
    p.add_argument(
        "--require-tool-ready", action="store_true", help="also exit 1 when the layout is not tool-ready"
    )
    p.set_defaults(handler=_verify)

    from parquet_agent.cli.corpus_import import register_import

    register_import(sub)
