"""The data-quality audits of an experiment's corpus, read from the audits' own run folders.

    audits = corpus_audits(run_dir, "auto")            # audit folders beside the run, same corpus
    audits = corpus_audits(run_dir, ["runs/audit-1"])  # or named ones
    html = audits_section(audits)                      # the report.html section (static, escaped)
    audits[0].findings_on(["0000950103-25-001861"])    # findings whose example rows are these

An audit (`parquet_agent.audit`) writes `manifest.json` (kind "audit", the dataset snapshot) and
`findings.json` (its AuditReport, schema_version 1; typed by `report.audit_model`, read with
`read_findings`: a forged or damaged file is refused naming the field) into its run folder. The report and the
explorer sit below the audit package, so they read those files, never its code. `matches` says
whether the audit saw exactly the experiment's corpus (the same snapshot id: the same files,
byte for byte); an audit of another snapshot is still shown, marked so, and `auto` takes only
exact matches. `digest` (sha256 of findings.json) names the exact file a report was built from.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from parquet_agent.errors import UsageError
from parquet_agent.escape import html_text
from parquet_agent.report.audit_model import AuditSummary, Finding, read_findings

_SEVERITY_ORDER = ("critical", "high", "medium", "low", "info")


@dataclass(frozen=True)
class CorpusAudit:
    run_dir: Path
    summary: AuditSummary  # findings.json, typed (`report.audit_model`)
    matches: bool  # the audit's snapshot is the experiment's corpus snapshot
    findings: tuple[Finding, ...]  # most severe first
    digest: str  # sha256 of the findings.json read

    @property
    def run_id(self) -> str:
        return self.summary.run_id

    @property
    def lineage(self) -> str:
        return self.summary.lineage

    @property
    def snapshot_id(self) -> str:
        return self.summary.snapshot_id

    @property
    def status(self) -> str:
        return self.summary.status

    @classmethod
    def load(cls, audit_dir: str | Path, corpus_snapshot_id: str | None) -> CorpusAudit:
        """Read one audit run folder (UsageError, saying what to do, when it is not one or its
        findings.json is not a valid one: the file and the field are named)."""
        audit_dir = Path(audit_dir).resolve()
        manifest = _json(audit_dir / "manifest.json")
        if not isinstance(manifest, dict) or manifest.get("kind") != "audit":
            raise UsageError(f"{audit_dir}: not an audit run folder (no manifest.json of kind "
                             "'audit'); audit the corpus with `parquet-agent audit run CORPUS`")
        raw = _bytes(audit_dir / "findings.json")
        if raw is None:
            raise UsageError(f"{audit_dir}: the audit has no findings.json yet (still running, "
                             "or stopped): finish it with `parquet-agent audit run ... --resume`")
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise UsageError(f"{audit_dir}/findings.json is not JSON ({exc}); rebuild it with "
                             "`parquet-agent export AUDIT_DIR`") from None
        summary = read_findings(data, where=f"{audit_dir}/findings.json")
        return cls(
            run_dir=audit_dir, summary=summary,
            matches=corpus_snapshot_id is not None and summary.snapshot_id == corpus_snapshot_id,
            findings=tuple(sorted(summary.findings, key=_order)),
            digest="sha256:" + hashlib.sha256(raw).hexdigest())

    def findings_on(self, file_stems: Iterable[str]) -> list[Finding]:
        """Findings with an example row of one of `file_stems` (examples are at most 5 rows
        per finding: a finding not listed may still affect them)."""
        stems = set(file_stems)
        return [f for f in self.findings
                if any(row.get("file_stem") in stems for row in f.evidence.examples)]


def corpus_snapshot_id(run_dir: str | Path) -> str | None:
    """The corpus snapshot id an experiment run froze in its manifest (None when absent)."""
    manifest = _json(Path(run_dir) / "manifest.json")
    snapshot = manifest.get("corpus_snapshot") if isinstance(manifest, dict) else None
    return snapshot.get("snapshot_id") if isinstance(snapshot, dict) else None


def corpus_audits(run_dir: str | Path,
                  audits: str | Path | Sequence[str | Path] | None) -> list[CorpusAudit]:
    """The audits to show with `run_dir`: none, `"auto"` (every finished audit folder beside
    the run whose snapshot is the run's corpus snapshot, oldest first) or the named folders."""
    if audits is None:
        return []
    snapshot = corpus_snapshot_id(run_dir)
    if isinstance(audits, str) and audits == "auto":
        found = []
        for folder in sorted(Path(run_dir).resolve().parent.iterdir()):
            manifest = _json(folder / "manifest.json") if folder.is_dir() else None
            if (isinstance(manifest, dict) and manifest.get("kind") == "audit"
                    and (manifest.get("snapshot") or {}).get("snapshot_id") == snapshot
                    and snapshot is not None and (folder / "findings.json").is_file()):
                found.append((str(manifest.get("created_at", "")), folder))
        return [CorpusAudit.load(folder, snapshot) for _, folder in sorted(found)]
    names = [audits] if isinstance(audits, (str, Path)) else list(audits)
    return [CorpusAudit.load(name, snapshot) for name in names]


def audits_section(audits: Sequence[CorpusAudit], run_dir: str | Path | None = None) -> str:
    """The report.html section: per audit, its findings (severity, category, columns, title,
    affected rows, count SQL, examples) and where it came from. Every value from the audit's
    files goes through `escape.html_text` (a forged findings.json is data too); no script.
    `run_dir` makes the link to each audit's own report.html relative."""
    parts = ['<section id="corpus-audit"><h2>Data quality of the corpus</h2>']
    if not audits:
        parts.append("<p class=\"muted\">No audit of this corpus: run `parquet-agent audit run "
                     "CORPUS` beside the run, then export with `--audit auto`.</p>")
    for audit in audits:
        parts.append(_audit_html(audit, run_dir))
    parts.append("</section>")
    return "".join(parts)


def _audit_html(audit: CorpusAudit, run_dir: str | Path | None) -> str:
    e = html_text
    page = audit.run_dir / "report.html"
    link = ""
    if page.is_file():
        href = os.path.relpath(page, Path(run_dir).resolve()) if run_dir else str(page)
        link = f' · <a href="{e(href)}">its report</a>'
    match = ("the same corpus snapshot as this run" if audit.matches else
             "<strong>another snapshot of the corpus</strong> than this run's: its counts may "
             "not hold for the files this run read")
    head = (f"<h3>audit {e(audit.run_id)} of {e(audit.lineage)}: {e(audit.status)}</h3>"
            f"<p class=\"muted\">{len(audit.findings)} findings, "
            f"{len(audit.summary.dismissed)} dismissed, {len(audit.summary.collisions)} key "
            f"collisions; gates {e(json.dumps(audit.summary.verdicts))}; "
            f"{match}; snapshot <code>{e(audit.snapshot_id)}</code>; findings.json "
            f"<code>{e(audit.digest)}</code>{link}</p>")
    if not audit.findings:
        return head + "<p>No findings.</p>"
    rows = []
    for f in audit.findings:
        ev = f.evidence
        examples = "".join(f"<li><code>{e(json.dumps(x, ensure_ascii=False, default=str), 300)}"
                           "</code></li>" for x in ev.examples)
        rows.append(
            f"<tr><td>{e(f.severity)}</td><td>{e(f.category)}</td>"
            f"<td>{e(', '.join(f.columns))}</td><td>{e(f.title)}</td>"
            f"<td class=\"num\">{e(ev.count)} / {e(ev.denominator)}</td>"
            f"<td><details><summary><code>{e(f.key)}</code></summary>"
            f"<pre>{e(ev.count_sql or '(from the snapshot schemas)')}</pre>"
            f"<ul>{examples}</ul></details></td></tr>")
    return (head + "<table class=\"findings\"><thead><tr><th>severity</th><th>category</th>"
            "<th>columns</th><th>title</th><th class=\"num\">rows</th><th>SQL and examples</th>"
            "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


def _order(finding: Finding) -> tuple[int, str, str]:
    severity = finding.severity
    rank = _SEVERITY_ORDER.index(severity) if severity in _SEVERITY_ORDER else len(_SEVERITY_ORDER)
    return rank, finding.category, finding.key


def _bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _json(path: Path) -> Any:
    raw = _bytes(path)
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None
