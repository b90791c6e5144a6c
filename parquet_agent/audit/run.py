"""An audit's run folder: the run-folder core (`store.Run`) plus what an audit reads from it.

    run = open_audit("runs/audit-orders-20261204T051500Z")
    run.report()          AuditReport: status, findings, gates, coverage, diff (its journal's fold)
    run.findings_df()     the committed findings (findings.csv's columns)
    run.export()          findings.json, findings.csv and report.html, rebuilt from the journal
    run.listing_row()     its row of `parquet-agent runs` (kind "audit")
    run.verify()          the core's checks, its journal read with the audit's event family

An audit folder written before audits were runs of the core (manifest without `kind` 2 and
`manifest_hash`) still opens, verifies (its manifest unhashed, said as a note) and exports.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from parquet_agent.audit.events import AUDIT_EVENTS
from parquet_agent.audit.report import AuditReport, write_exports
from parquet_agent.errors import UsageError
from parquet_agent.store.run import MANIFEST, Run
from parquet_agent.transcript import EventFamily

if TYPE_CHECKING:
    import pandas as pd

KIND = "audit"
JOURNAL_ID = "audit"  # journal/audit.jsonl


class AuditRun(Run):
    """An audit's run folder; see the module docstring."""

    JOURNAL_FAMILIES: ClassVar[dict[str, EventFamily]] = {JOURNAL_ID: AUDIT_EVENTS}

    def report(self) -> AuditReport:
        """The audit as its journal says it went."""
        return AuditReport.load(self.dir)

    def findings_df(self) -> pd.DataFrame:
        """The committed findings, one row each (findings.csv's columns)."""
        return self.report().findings_df()

    def export(self) -> AuditReport:
        """Rebuild findings.json, findings.csv and report.html from the journal."""
        report = self.report()
        write_exports(report)
        return report

    def listing_row(self) -> dict[str, Any]:
        """Its row of the runs listing: status, findings as the case count, tokens, cost."""
        m = self.manifest
        row: dict[str, Any] = {"run_id": self.run_id, "kind": KIND,
                               "name": m.get("lineage"), "created_at": m.get("created_at")}
        try:
            report = self.report()
        except (UsageError, ValueError) as exc:
            return row | {"status": f"damaged: {exc}"}
        return row | {"status": report.status, "findings": len(report.findings),
                      "cost_usd": float("nan") if report.cost_usd is None else report.cost_usd}

    def _verify_notes(self) -> list[str]:
        """An audit folder from before audits were hashed says so (its manifest unchecked)."""
        if "manifest_hash" not in self.manifest:
            return ["manifest.json of an audit written before audits were hashed: its fields "
                    "are not checked (the journal and raw bodies are)"]
        return []

    def _verify_manifest(self) -> tuple[list[str], list[str], int]:
        if "manifest_hash" not in self.manifest:  # an older audit folder: noted, not a problem
            return [], [], 0
        return super()._verify_manifest()


def open_audit(run: Run | str | Path, *, writable: bool = False) -> AuditRun:
    """An `AuditRun` from a Run or a run folder; UsageError when it holds another kind."""
    path = run.dir if isinstance(run, Run) else Path(run)
    if not (path / MANIFEST).is_file():
        raise UsageError(f"{path}: not a run folder (no manifest.json)")
    opened = AuditRun(path, writable=writable)
    if opened.kind != KIND:
        opened.close()
        raise UsageError(f"{path} holds an {opened.kind} run, not an audit")
    return opened


__all__ = ["AuditRun", "JOURNAL_ID", "KIND", "open_audit"]
