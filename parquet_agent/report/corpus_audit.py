"""The data-quality audits of an experiment's corpus, read from the audits' own run folders.

    audits = corpus_audits(run_dir, "auto")            # audit folders beside the run, same corpus
    audits = corpus_audits(run_dir, ["runs/audit-1"])  # or named ones
    html = audits_section(audits)                      # the report.html section (static, escaped)
    audits[0].findings_on(["0000950103-25-001861"])    # findings whose example rows are these

An audit (`parquet_agent.audit`) writes `manifest.json` (kind "audit", the dataset snapshot) and
`findings.json` (its AuditReport, schema_version 1) into its run folder. The report and the
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

READABLE_VERSIONS = (1,)
_SEVERITY_ORDER = ("critical", "high", "medium", "low", "info")


@dataclass(frozen=True)
class CorpusAudit:
    run_dir: Path
    run_id: str
    lineage: str
    snapshot_id: str
    status: str
    matches: bool  # the audit's snapshot is the experiment's corpus snapshot
    findings: tuple[dict[str, Any], ...]
    dismissed: int
    collisions: int
    verdicts: dict[str, dict[str, int]]
    diff: dict[str, list[str]]
    previous_run: str | None
    digest: str  # sha256 of the findings.json read

    @classmethod
    def load(cls, audit_dir: str | Path, corpus_snapshot_id: str | None) -> CorpusAudit:
        """Read one audit run folder (UsageError, saying what to do, when it is not one)."""
        audit_dir = Path(audit_dir).resolve()
        manifest = _json(audit_dir / "manifest.json")
        if not isinstance(manifest, dict) or manifest.get("kind") != "audit":
            raise UsageError(f"{audit_dir}: not an audit run folder (no manifest.json of kind "
                             "'audit'); audit the corpus with `parquet-agent audit run CORPUS`")
        raw = _bytes(audit_dir / "findings.json")
        if raw is None:
            raise UsageError(f"{audit_dir}: the audit has no findings.json yet (still running, "
                             "or stopped): finish it with `parquet-agent audit run ... --resume`")
        data = json.loads(raw)
        if data.get("schema_version") not in READABLE_VERSIONS:
            raise UsageError(f"{audit_dir}/findings.json: schema_version "
                             f"{data.get('schema_version')!r} is not one this reader knows "
                             f"({READABLE_VERSIONS}); upgrade parquet_agent")
        return cls(
            run_dir=audit_dir, run_id=str(data.get("run_id", audit_dir.name)),
            lineage=str(data.get("lineage", "")), snapshot_id=str(data.get("snapshot_id", "")),
            status=str(data.get("status", "")),
            matches=corpus_snapshot_id is not None and data.get("snapshot_id") == corpus_snapshot_id,
            findings=tuple(sorted((f for f in _items(data.get("findings")) if isinstance(f, dict)),
                                  key=_order)),
            dismissed=len(data.get("dismissed") or []),
            collisions=len(data.get("collisions") or []),
            verdicts=data.get("verdicts") or {}, diff=data.get("diff") or {},
            previous_run=data.get("previous_run"),
            digest="sha256:" + hashlib.sha256(raw).hexdigest())

    def findings_on(self, file_stems: Iterable[str]) -> list[dict[str, Any]]:
        """Findings with an example row of one of `file_stems` (examples are at most 5 rows
        per finding: a finding not listed may still affect them)."""
        stems = set(file_stems)
        return [f for f in self.findings
                if any(e.get("file_stem") in stems for e in (f.get("evidence") or {}).get("examples") or [])]


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
            f"<p class=\"muted\">{len(audit.findings)} findings, {audit.dismissed} dismissed, "
            f"{audit.collisions} key collisions; gates {e(json.dumps(audit.verdicts))}; "
            f"{match}; snapshot <code>{e(audit.snapshot_id)}</code>; findings.json "
            f"<code>{e(audit.digest)}</code>{link}</p>")
    if not audit.findings:
        return head + "<p>No findings.</p>"
    rows = []
    for f in audit.findings:
        ev = f.get("evidence")
        if not isinstance(ev, dict):
            ev = {}
        examples = "".join(f"<li><code>{e(json.dumps(x, ensure_ascii=False, default=str), 300)}"
                           "</code></li>" for x in _items(ev.get("examples")))
        rows.append(
            f"<tr><td>{e(str(f.get('severity')))}</td><td>{e(str(f.get('category')))}</td>"
            f"<td>{e(', '.join(map(str, _items(f.get('columns')))))}</td>"
            f"<td>{e(str(f.get('title')))}</td>"
            f"<td class=\"num\">{e(ev.get('count'))} / {e(ev.get('denominator'))}</td>"
            f"<td><details><summary><code>{e(str(f.get('key')))}</code></summary>"
            f"<pre>{e(str(ev.get('count_sql') or '(from the snapshot schemas)'))}</pre>"
            f"<ul>{examples}</ul></details></td></tr>")
    return (head + "<table class=\"findings\"><thead><tr><th>severity</th><th>category</th>"
            "<th>columns</th><th>title</th><th class=\"num\">rows</th><th>SQL and examples</th>"
            "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


def _items(value: Any) -> list:
    """A list from a findings.json field that should hold one (a forged file may hold anything)."""
    return value if isinstance(value, list) else []


def _order(finding: dict[str, Any]) -> tuple:
    severity = finding.get("severity")
    rank = _SEVERITY_ORDER.index(severity) if severity in _SEVERITY_ORDER else len(_SEVERITY_ORDER)
    return rank, str(finding.get("category")), str(finding.get("key"))


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
