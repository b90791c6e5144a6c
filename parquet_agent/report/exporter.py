"""The exporter: rebuild every export of a run folder from its manifest, journals and raw files.

    result = export_run("runs/2026-11-30-demo")     # ExportResult(run_dir, cases, files, seconds)

Writes, relative to the run folder (DESIGN.md run-directory contract):

    cases/<case-id>.json           build_case(): the self-contained audit record of one case
                                   (compact canonical JSON, one line)
    cases-index.json / .csv        one row per case (INDEX_COLUMNS), links to the case JSON (in
                                   the CSV, `escape.csv_cell`: text a spreadsheet would run as
                                   a formula gets a leading '; the JSON keeps the exact text)
    summary.json                   per model x strategy and per run figures, from the fold
    report.html                    the self-contained filterable report (report.html_report)
    case-export-provenance.json    exporter version hash, sha256 of every run file read and of
                                   every export written, and the export time (written last)

Rules: offline and read-only towards the run: the run is opened without the writer lock, the
raw store read-only, no model is built and the corpus is never opened (its path in the manifest
is not even looked at). Deterministic: the same run exports to the same bytes, except
`exported_at` in the provenance. Every case of the frozen grid gets a record, including cases
that never started (status `incomplete`).

Durability: exports are derived data that `parquet-agent export` can rebuild at any time, so
files are replaced atomically (temp file + rename) but not fsynced one by one, which would cost
seconds on a 400-case run; the provenance file, written last with fsync, lists the sha256 of
every export, so a torn export is detectable. Any failure raises `ExportError` with what to do.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from parquet_agent.analysis.fold import RunFold
from parquet_agent.analysis.judgments import judgings
from parquet_agent.errors import ExportError, RunError
from parquet_agent.escape import csv_cell
from parquet_agent.files import atomic_write_bytes, sha256_file, utc_now
from parquet_agent.report.case_model import CaseIntegrity, CaseRecord
from parquet_agent.report.case_record import (
    INDEX_COLUMNS,
    RunSource,
    build_case,
    index_row,
)
from parquet_agent.report.html_report import ReportExtras, render_report
from parquet_agent.report.judge_agreement import agreement_section
from parquet_agent.store.manifest import tree_hash
from parquet_agent.store.run import journal_reads

SCHEMA_VERSION = 1
PROVENANCE = "case-export-provenance.json"
EXPORT_FILES = ("cases-index.json", "cases-index.csv", "summary.json", "report.html", PROVENANCE)


@dataclass(frozen=True)
class ExportResult:
    run_dir: Path
    cases: int
    files: tuple[str, ...]  # run-relative paths written
    seconds: float
    problems: tuple[str, ...] = ()  # damaged or edited records (`Run.verify()`), marked in the export

    @property
    def report(self) -> Path:
        return self.run_dir / "report.html"


def dumps(value: Any) -> bytes:
    """Canonical JSON for exports: sorted keys, 1-space indent, UTF-8 (ASCII escapes only when a
    string holds a lone surrogate, which UTF-8 cannot carry)."""
    try:
        text = json.dumps(value, sort_keys=True, indent=1, ensure_ascii=False, allow_nan=False)
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return json.dumps(value, sort_keys=True, indent=1, allow_nan=False).encode() + b"\n"


def case_json(record: CaseRecord) -> str:
    """A case record as compact canonical JSON (sorted keys). Compact because the C encoder
    only runs without `indent`: indenting 400 records cost seconds; `jq .` reads them fine."""
    value = record.to_plain()
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: ASCII escapes carry it
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return text


def exporter_version() -> str:
    """`b2:` over the report package, the store readers and the transcript it builds records
    with (source and assets): changes whenever what an export says could change."""
    package = Path(__file__).resolve().parent.parent
    return tree_hash(package, [package / "report", package / "store", package / "transcript"],
                     (".py", ".js", ".css", ".html"), digest_size=16)


def source_files(run_dir: Path) -> list[str]:
    """Run-relative paths of the result files the exporter reads: manifest, journals, packs."""
    out = ["manifest.json"]
    for folder, suffixes in (("journal", (".jsonl", ".jsonl.gz")), ("raw", (".pack",))):
        base = run_dir / folder
        if base.is_dir():
            out += sorted(f"{folder}/{p.name}" for p in base.iterdir()
                          if p.is_file() and p.name.endswith(suffixes))
    return out


# -- summary ------------------------------------------------------------------------------------


def build_summary(source: RunSource, fold: RunFold) -> dict[str, Any]:
    """summary.json: the fold's run-wide, per model x strategy and run-journal figures."""
    manifest = source.run.manifest
    return {
        "schema_version": SCHEMA_VERSION, "run_id": source.run.run_id,
        "experiment": (manifest.get("config") or {}).get("name"),
        "manifest_hash": manifest.get("manifest_hash"),
        "sandbox_mode": manifest.get("sandbox_mode"),
        **fold.totals(),
        "by_model_strategy": fold.groups(),
        "run": fold.figures,
    }


# -- index --------------------------------------------------------------------------------------


def _csv(rows: list[dict[str, Any]]) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=INDEX_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: csv_cell(v) for k, v in row.items()})
    return out.getvalue().encode("utf-8", "backslashreplace")


# -- writing ------------------------------------------------------------------------------------


def _write(run_dir: Path, rel: str, data: bytes, *, keep_identical: bool = False) -> None:
    path = run_dir / rel
    if keep_identical:
        try:  # a re-export usually reproduces a case file byte for byte: leave it alone (a
            # rename over an existing file costs ms each on busy disks, seconds for 400 cases)
            if path.stat().st_size == len(data) and path.read_bytes() == data:
                return
        except OSError:
            pass
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _with_agreement(source: RunSource, extras: ReportExtras | None) -> ReportExtras | None:
    """A re-judged run's report leads its optional sections with the judge agreement."""
    if not judgings(source.run.dir):
        return extras
    extras = extras or ReportExtras()
    from parquet_agent.analysis.agreement import (
        agreement_tables,  # pandas: re-judged runs only
    )

    section = agreement_section(agreement_tables(source.run))
    return ReportExtras((section, *extras.sections), extras.scripts)


def export_run(run_dir: str | Path, *, extras: ReportExtras | None = None,
               judge: str | None = None) -> ExportResult:
    """(Re)build every export of `run_dir`; raise ExportError when the run cannot be read.
    `judge`: whose judgments the figures use (a judging id of a re-judging, "run" for the
    config's judge; default: the primary one). Every case record lists every judgment.

    `extras`: optional report.html sections built by the caller (the charts and a comparison:
    `explore.sections.report_extras`); the exporter itself never plots. A re-judged run's
    report always gets the judge agreement tables (`report.judge_agreement`)."""

    t0 = time.perf_counter()
    run_dir = Path(run_dir).resolve()
    source = RunSource.open(run_dir, judge=judge)
    try:
        written: dict[str, bytes] = {}
        verified = source.run.verify()  # a list of problems; never raises
        # one case at a time, its journal then its raw files: the raw store's chunk cache keeps
        # what a case's bodies share (reading every journal first costs a fifth more time)
        views, built = [], []
        for cid in source.case_ids():
            views.append(source.fold_case(cid))
            built.append(build_case(source, cid, views[-1]))
        fold = source.fold(tuple(views))
        integrity, records = _integrity(verified.problems, source.unreadable, built)
        texts = [case_json(record).encode("utf-8") for record in records]
        for record, text in zip(records, texts):
            written[record.links.case] = text + b"\n"
        rows = [index_row(r) for r in records]
        written["cases-index.json"] = dumps({"schema_version": SCHEMA_VERSION,
                                             "run_id": source.run.run_id,
                                             "columns": list(INDEX_COLUMNS), "cases": rows})
        written["cases-index.csv"] = _csv(rows)
        summary = build_summary(source, fold) | {"integrity": integrity}
        written["summary.json"] = dumps(summary)
        written["report.html"] = render_report(source.run.run_id, summary, rows, texts,
                                               extra=_with_agreement(source, extras))
    except (RunError, KeyError, ValueError, TypeError) as exc:
        raise ExportError(f"{run_dir}: cannot export this run: {type(exc).__name__}: {exc}. "
                          "Check it with Run.verify(); the run's own files were not changed")\
            from exc
    finally:
        source.run.close()
        source.raw.close()
    try:
        (run_dir / "cases").mkdir(exist_ok=True)
        # case files first; the index, summary and report always get a new mtime, which the
        # explorer compares with the journals' to know the exports are current
        for rel, data in written.items():
            _write(run_dir, rel, data, keep_identical=rel.startswith("cases/"))
        inputs = {rel: sha256_file(run_dir / rel) for rel in source_files(run_dir)}
        provenance = {
            "schema_version": SCHEMA_VERSION, "run_id": source.run.run_id,
            "manifest_hash": summary.get("manifest_hash"), "cases": len(records),
            "integrity": integrity,
            # each journal's line count and chain head as exported: a later edit of a journal
            # (even with its whole chain recomputed) no longer matches these
            "journal_heads": _journal_heads(source),
            "exporter": {"name": "parquet_agent.report.exporter", "version": exporter_version()},
            "exported_at": utc_now(),
            "inputs": inputs,
            "outputs": {rel: "sha256:" + hashlib.sha256(data).hexdigest()
                        for rel, data in sorted(written.items())},
        }
        atomic_write_bytes(run_dir / PROVENANCE, dumps(provenance))
    except OSError as exc:
        raise ExportError(f"{run_dir}: cannot write the exports ({exc}); check the folder's "
                          "permissions and free space, then run `parquet-agent export "
                          f"{run_dir}`") from exc
    return ExportResult(run_dir, len(records), tuple(sorted(written)) + (PROVENANCE,),
                        time.perf_counter() - t0, tuple(integrity["problems"]))


def _integrity(problems: tuple[str, ...], unreadable: set[str], records: list[CaseRecord],
               ) -> tuple[dict[str, Any], list[CaseRecord]]:
    """What `Run.verify()` found, and the records with it: each damaged or edited case record
    gets an `integrity` entry naming its problems (absent when the case is intact)."""
    listed = list(problems) + [f"{p}: unreadable when exported" for p in sorted(unreadable)
                               if not any(p in q for q in problems)]
    damaged, marked = [], []
    for record in records:
        case = record.case_id
        own = [p for p in listed if case and (f"{case}.jsonl" in p or f"/{case}/" in p)]
        if own:
            record = record.model_copy(
                update={"integrity": CaseIntegrity(ok=False, problems=tuple(own))})
            damaged.append(case)
        marked.append(record)
    return {"ok": not listed, "problems": listed, "damaged_cases": damaged}, marked


def _journal_heads(source: RunSource) -> dict[str, dict[str, Any]]:
    heads = {}  # each journal was read once already, by verify and the fold
    for cid, read in journal_reads(source.run).items():
        heads[cid] = {"lines": read.lines, "head": read.head}
    return heads
