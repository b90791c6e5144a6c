"""`parquet-agent export RUN_DIR`, `verify RUN_DIR`, `raw RUN_DIR PATH`, `case-audit ...`.

- `export RUN_DIR`: (re)build every export of a saved run, offline (see `report.exporter`);
  prints what was written and how long it took. `--audit DIR|auto` adds the findings of a
  data-quality audit of the run's corpus (`report.corpus_audit`). `--tables` also writes the
  run's DataFrames as Parquet and CSV into RUN_DIR/tables/ (see `analysis.tables`). An
  audit's folder gets its report.html, findings.json and findings.csv rebuilt from its journal.
- `verify RUN_DIR`: a run folder of any kind checked offline (`Run.verify`): exit 0 when
  intact, else each damaged or edited record named and exit 1.
- `raw RUN_DIR PATH`: write the exact stored bytes of one raw file (a run-relative path such as
  `raw/Q001__m__sql/turn-01.attempt-01.request.json`, as the exports list them) to stdout.
  Raw files live in packs, so this is how to get one back byte for byte; `--out FILE` writes
  them to a file instead.
- `case-audit RUN_DIR --question Q --model M --method S [--full|--json]`: the same as
  `python -m parquet_agent.case_audit` (`parquet-agent audit ...` is the data-quality auditor).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from parquet_agent.errors import ExportError, UsageError
from parquet_agent.escape import terminal


def register(subparsers: argparse._SubParsersAction) -> None:
    export = subparsers.add_parser("export", help="(re)build the exports of a saved run, offline")
    export.add_argument("run_dir", type=Path, help="the run folder")
    export.add_argument("--charts", action="store_true",
                        help="embed the main plotly charts in report.html (~4.8 MB more)")
    export.add_argument("--compare", type=Path, metavar="OLD_RUN_DIR",
                        help="add a paired comparison with an older run to report.html")
    export.add_argument("--audit", action="append", metavar="AUDIT_DIR|auto",
                        help="add the findings of a data-quality audit of the run's corpus to "
                        "report.html (repeatable); auto: every audit folder beside the run "
                        "whose snapshot is the run's corpus snapshot")
    export.add_argument("--tables", action="store_true",
                        help="also write the run's DataFrames (cases, attempts, tool_calls, "
                        "ledger, summary) as Parquet and CSV into RUN_DIR/tables/, joinable on "
                        "run_id, case_id, question_id, model, strategy")
    export.add_argument("--on-damage", choices=("fail", "warn"), default="fail",
                        help="when records are damaged or edited (Run.verify()): write the "
                        "exports with them marked, then exit 1 (fail, the default) or exit 0 "
                        "after a warning (warn)")
    export.add_argument("--judge", metavar="JUDGING",
                        help="whose judgments the figures use: a re-judging's id, or 'run' "
                        "for the config's judge (default: the primary one)")
    export.set_defaults(handler=_export)

    verify = subparsers.add_parser(
        "verify", help="check a run folder (experiment or audit) for damage and edits, offline",
        description="Check the manifest's hash, every raw body and every journal line of a run "
        "folder of any kind. Exit 0 when intact; otherwise each damaged or edited record is "
        "named and the exit status is 1.")
    verify.add_argument("run_dir", type=Path, help="the run folder")
    verify.set_defaults(handler=_verify)

    raw = subparsers.add_parser("raw", help="print the exact bytes of one raw file of a run")
    raw.add_argument("run_dir", type=Path, help="the run folder")
    raw.add_argument("path", help="run-relative raw path, e.g. raw/<case-id>/turn-01.attempt-01"
                     ".request.json")
    raw.add_argument("--out", type=Path, help="write the bytes to this file instead of stdout")
    raw.set_defaults(handler=_raw)

    from parquet_agent.report.case_audit import add_arguments

    audit = subparsers.add_parser("case-audit", help="print one case of a run readably "
                                  "(same as python -m parquet_agent.case_audit)")
    add_arguments(audit)
    audit.set_defaults(handler=_audit)


def _export(args: argparse.Namespace) -> int:
    from parquet_agent.explore.sections import report_extras
    from parquet_agent.report.exporter import export_run
    from parquet_agent.store import kind_of

    if kind_of(args.run_dir) == "audit":
        return _export_audit(args.run_dir)

    audits = args.audit[0] if args.audit == ["auto"] else args.audit
    extras = report_extras(args.run_dir, charts=args.charts, compare_with=args.compare,
                           audits=audits)
    result = export_run(args.run_dir, extras=extras, judge=args.judge)
    print(f"exported {result.cases} cases of {result.run_dir} in {result.seconds:.2f} s")
    print(f"report:     {result.report}")
    print(f"provenance: {result.run_dir / 'case-export-provenance.json'}")
    if args.tables:
        from parquet_agent.analysis.tables import write_tables
        from parquet_agent.store import Run

        tables = write_tables(Run(result.run_dir))
        counts = ", ".join(f"{name} {n}" for name, n in tables.rows.items())
        print(f"tables:     {tables.folder} (Parquet and CSV; rows: {counts})")
    if result.problems:
        shown = "\n".join(f"  - {p}" for p in result.problems[:20])
        more = f"\n  ... and {len(result.problems) - 20} more" if len(result.problems) > 20 else ""
        print(f"WARNING: {len(result.problems)} damaged or edited record(s) in this run; the "
              f"exports mark them (summary.json integrity, report.html):\n{shown}{more}",
              file=sys.stderr)
        return 1 if args.on_damage == "fail" else 0
    return 0


def _export_audit(run_dir: Path) -> int:
    from parquet_agent.audit.run import open_audit

    report = open_audit(run_dir).export()
    print(f"exported audit {report.run_id}: {len(report.findings)} findings, status "
          f"{report.status}")
    for name in ("report.html", "findings.json", "findings.csv"):
        print(f"{name + ':':14} {run_dir / name}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from parquet_agent.explore.runs import RunStore
    from parquet_agent.store import kind_of

    run_dir = args.run_dir.resolve()
    if not (run_dir / "manifest.json").is_file():
        raise UsageError(f"{args.run_dir}: not a run folder (no manifest.json); pass the folder "
                         "that `parquet-agent run` or `parquet-agent audit run` printed")
    run = RunStore(run_dir.parent).open(run_dir)
    report = run.verify()
    kind = kind_of(run_dir) or "unreadable"  # a manifest that does not read is a problem
    for line in report.torn_lines:
        print(f"note: {terminal(line)}")
    for line in report.notes:
        print(f"note: {terminal(line)}")
    if report.ok:
        print(f"{kind} run {run.run_id} verified: manifest, {report.bodies_checked} raw "
              "bodies and every journal line intact")
        return 0
    print(f"{kind} run {run.run_id}: {len(report.problems)} damaged or edited record(s):",
          file=sys.stderr)
    for problem in report.problems:
        print(f"  - {terminal(problem)}", file=sys.stderr)
    return 1


def _raw(args: argparse.Namespace) -> int:
    from parquet_agent.errors import RunError
    from parquet_agent.store.blobs import RawStore

    if not (args.run_dir / "manifest.json").is_file():
        raise UsageError(f"{args.run_dir}: not a run folder (no manifest.json)")
    store = RawStore(args.run_dir, writable=False)
    try:
        data = store.read(args.path)
    except KeyError:
        prefix = args.path.rsplit("/", 1)[0] + "/"
        near = [n for n in store.names() if n.startswith(prefix)][:20]
        hint = ("; files under " + prefix + ": " + ", ".join(near)) if near else (
            "; the case's raw files are listed in its cases/<case-id>.json (raw_files)")
        raise UsageError(f"{args.path}: no such raw file in {args.run_dir}{hint}") from None
    except RunError as exc:
        raise ExportError(str(exc)) from exc
    if args.out:
        args.out.write_bytes(data)
        print(f"wrote {len(data)} bytes to {args.out}", file=sys.stderr)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    return 0


def _audit(args: argparse.Namespace) -> int:
    from parquet_agent.report.case_audit import run_audit

    return run_audit(args)
