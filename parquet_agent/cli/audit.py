"""`parquet-agent audit ...`: the data-quality auditor from the command line.

    audit run DATASET [--config FILE] [--run-dir DIR] [--resume] [--store URL] [--lineage L] [--json]
                      [--quiet]
    audit inspect RUN [--finding KEY] [--full]
    audit diff RUN_A RUN_B
    audit contract RUN --out FILE          (then: audit run DATASET --contract FILE)
    audit plant DATASET --out DIR [--seed S] [--rate R]
    audit score RUN --truth MANIFEST [--clean RUN0] [--json]

`run` prints a progress line on stderr at most every second (`--quiet`: none) and a readable
summary (the AuditReport as JSON with --json); the offline baseline
auditor is the default, so it needs no network and no keys.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from parquet_agent.escape import terminal


def register(subparsers: argparse._SubParsersAction) -> None:
    audit = subparsers.add_parser("audit", help="audit the data quality of any Parquet dataset")
    sub = audit.add_subparsers(dest="audit_command", metavar="ACTION", required=True)

    run = sub.add_parser("run", help="audit a dataset (offline baseline unless --config says otherwise)")
    run.add_argument("dataset", type=Path, help="a Parquet, CSV or JSON-lines file, or a folder "
                     "of them (nested folders too)")
    run.add_argument("--config", type=Path, help="a TOML file with an [audit] table")
    run.add_argument("--run-dir", type=Path, help="the run folder (default runs/audit-<lineage>-<time>)")
    run.add_argument("--resume", action="store_true", help="continue the run in --run-dir")
    run.add_argument("--store", help="findings store: a SQLite file (default: findings.sqlite "
                     "beside the run folder) or postgresql://...")
    run.add_argument("--lineage", help="the dataset's name across snapshots (default: folder name)")
    run.add_argument("--json", action="store_true", help="print the AuditReport as JSON")
    run.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    run.add_argument("--contract", type=Path, help="a contract file ([contract]) to check, "
                     "besides any in the config")
    run.set_defaults(handler=_run)

    inspect = sub.add_parser("inspect", help="print an audit run or one finding readably")
    inspect.add_argument("run_dir", type=Path)
    inspect.add_argument("--finding", help="a finding key (F-...)")
    inspect.add_argument("--full", action="store_true", help="every step and every evaluation")
    inspect.set_defaults(handler=_inspect)

    diff = sub.add_parser("diff", help="compare two audit runs of the same lineage")
    diff.add_argument("run_a", type=Path)
    diff.add_argument("run_b", type=Path)
    diff.set_defaults(handler=_diff)

    contract = sub.add_parser("contract", help="write what an audit found to hold as a "
                              "contract (TOML) that the next audit checks (--contract)")
    contract.add_argument("run_dir", type=Path)
    contract.add_argument("--out", type=Path, required=True, help="the contract file to write")
    contract.set_defaults(handler=_contract)

    plant = sub.add_parser("plant", help="copy a dataset with known defects planted")
    plant.add_argument("dataset", type=Path)
    plant.add_argument("--out", type=Path, required=True)
    plant.add_argument("--seed", type=int, default=0)
    plant.add_argument("--rate", type=float, default=0.01, help="share of rows per defect "
                       "(0.001, 0.01, 0.05)")
    plant.set_defaults(handler=_plant)

    score = sub.add_parser("score", help="precision/recall/F1 of a run against planted defects")
    score.add_argument("run_dir", type=Path)
    score.add_argument("--truth", type=Path, required=True, help="planted-defects.json (or its folder)")
    score.add_argument("--clean", type=Path, help="the same audit of the unplanted copy: its "
                       "findings are excluded")
    score.add_argument("--json", action="store_true")
    score.set_defaults(handler=_score)


def _run(args: argparse.Namespace) -> int:
    from parquet_agent.audit.auditor import Auditor
    from parquet_agent.audit.config import AuditConfig

    config = AuditConfig.from_toml(args.config) if args.config else AuditConfig()
    if args.contract:
        from parquet_agent.audit.contracts import Contract

        config = config.with_contract(Contract.from_toml(args.contract))
    progress = None if args.quiet else _Progress()
    report = Auditor(config, store=args.store, progress=progress).run(
        args.dataset, run_dir=args.run_dir, resume=args.resume, lineage=args.lineage)
    print(json.dumps(report.to_json(), indent=1, default=str) if args.json
          else terminal(report.text()))
    page = report.run_dir / "report.html"
    if not args.json and page.is_file():
        print(f"report: {page}")
    return 0 if report.status == "complete" else 1


class _Progress:
    """Step lines on stderr, at most one a second (the first, the last and any that is not a
    step always), so a long audit shows it is alive without flooding a log."""

    def __init__(self, every_s: float = 1.0):
        self.every_s = every_s
        self.last = -every_s

    def __call__(self, line: str) -> None:
        now = time.monotonic()
        if line.startswith("step ") and now - self.last < self.every_s:
            return
        self.last = now
        print(f"audit: {terminal(line)}", file=sys.stderr, flush=True)


def _inspect(args: argparse.Namespace) -> int:
    from parquet_agent.audit.inspect import inspect_finding, inspect_run

    report = _load(args.run_dir)
    print(terminal(inspect_finding(report, args.finding) if args.finding
                   else inspect_run(report, args.full)))
    return 0


def _diff(args: argparse.Namespace) -> int:
    from parquet_agent.audit.inspect import diff_runs

    print(terminal(diff_runs(_load(args.run_a), _load(args.run_b))))
    return 0


def _contract(args: argparse.Namespace) -> int:
    from parquet_agent.audit.contract_writer import write_contract

    written = write_contract(args.run_dir, args.out)
    print(f"{written.entries} contract entries written to {written.path}")
    for line in written.left_out:
        print(f"  left out {line}")
    return 0


def _plant(args: argparse.Namespace) -> int:
    from parquet_agent.audit.planter import MANIFEST, plant

    manifest = plant(args.dataset, args.out, seed=args.seed, rate=args.rate)
    for d in manifest["defects"]:
        print(terminal(f"{d['id']:24} {d['category']:14} {','.join(d['columns']):22} "
                       f"{len(d['rows']):5} rows  {d['operation']}"))
    print(f"manifest: {args.out / MANIFEST}")
    return 0


def _score(args: argparse.Namespace) -> int:
    from parquet_agent.audit.scoring import load_manifest, score

    result = score(_load(args.run_dir), load_manifest(args.truth),
                   clean=_load(args.clean) if args.clean else None)
    print(json.dumps(result.to_json(), indent=1) if args.json else terminal(result.table()))
    return 0


def _load(run_dir: Path):
    from parquet_agent.audit.report import AuditReport

    return AuditReport.load(run_dir)
