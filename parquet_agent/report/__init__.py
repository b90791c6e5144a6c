"""The report piece: per-case audit records, indexes, summary, report.html, provenance, audit CLI.

    from parquet_agent.report import export_run, build_case, RunSource
    export_run("runs/2026-11-30-demo")            # every export of a run, offline, read-only
    record = build_case(RunSource.open(run_dir), "Q001__flash__sql")   # one record, no writes

Modules: `exporter` (export_run, summary, provenance), `case_record` (the case record and the
index row), `rawview` (reading raw request/response files of every wire format), `html_report`
(report.html with its `assets/`), `case_audit` (the terminal view; `python -m
parquet_agent.case_audit`), `commands` (`parquet-agent export | raw | audit`).

Owns the exports of a run folder. May import: `store` and everything below it. Never
`experiment` or `explore`: the report's optional chart and comparison sections are built by the
caller (`explore.sections.report_extras`) and passed in as `export_run(..., extras=...)`.
"""

from parquet_agent.report.case_record import RunSource, build_case, index_row
from parquet_agent.report.exporter import ExportResult, export_run

__all__ = ["ExportResult", "RunSource", "build_case", "export_run", "index_row"]
