"""Scoring an audit against planted defects: precision, recall and F1 per category and overall.

    score(report, manifest, clean=clean_report) -> Score

A finding matches a planted defect when the categories are equal, their columns overlap, and it
covers at least half the defect's rows (counted in the sandbox: the finding's predicate AND the
defect's row keys) or, for a defect without rows, is over the defect's `view` (deleted rows:
missing instants of a series) or names one of its files in its evidence (a changed type). Findings whose key also appears in `clean` (the same audit of the unplanted copy, same
lineage) were there before planting and are left out, unless they match a planted defect (a
blind rule that already fired on the clean copy, e.g. one empty text, still finds the planted
empty texts). Precision counts findings, recall counts
defects.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from parquet_agent.audit.dataset import Dataset
from parquet_agent.audit.finding import Finding
from parquet_agent.audit.report import AuditReport
from parquet_agent.audit.taxonomy import CATEGORIES
from parquet_agent.audit.tools import AuditTools
from parquet_agent.errors import UsageError

MIN_OVERLAP = 0.5


class ScoreRow(TypedDict):
    """One row of the score table (a category, or overall); None where nothing is counted."""
    defects: int
    found: int
    findings: int
    true_positives: int
    precision: float | None
    recall: float | None
    f1: float | None


@dataclass(frozen=True)
class Score:
    per_category: dict[str, ScoreRow]
    overall: ScoreRow
    matches: dict[str, list[str]]  # finding key -> defect ids it matched
    excluded: tuple[str, ...]  # keys present before planting

    def to_json(self) -> dict[str, Any]:
        return {"schema_version": 1, "per_category": self.per_category, "overall": self.overall,
                "matches": self.matches, "excluded": list(self.excluded)}

    def table(self) -> str:
        lines = [f"{'category':20} {'defects':>7} {'found':>5} {'findings':>8} {'tp':>3} "
                 f"{'precision':>9} {'recall':>6} {'f1':>5}"]
        for name, row in [*self.per_category.items(), ("overall", self.overall)]:
            lines.append(f"{name:20} {row['defects']:7} {row['found']:5} {row['findings']:8} "
                         f"{row['true_positives']:3} {_f(row['precision']):>9} "
                         f"{_f(row['recall']):>6} {_f(row['f1']):>5}")
        return "\n".join(lines)


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def load_manifest(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if path.is_dir():
        path = path / "planted-defects.json"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(f"no planted-defects manifest at {path}; `audit plant` writes it") from None
    if data.get("schema_version") != 1:
        raise UsageError(f"{path}: unsupported manifest schema_version {data.get('schema_version')!r}")
    return data


def score(report: AuditReport, manifest: dict[str, Any], *, clean: AuditReport | None = None,
          dataset_dir: str | Path | None = None) -> Score:
    before = {f.key for f in clean.findings} if clean is not None else set()
    root = dataset_dir or json.loads((report.run_dir / "manifest.json").read_text())["dataset_root"]
    dataset = Dataset.open(root, report.lineage)
    defects = manifest["defects"]
    matches: dict[str, list[str]] = {}
    with AuditTools.open(dataset) as tools:
        for finding in report.findings:
            matches[finding.key] = [d["id"] for d in defects if _matches(finding, d, tools)]
    # a finding already on the clean copy is not a false positive; it still counts when it
    # covers a planted defect (e.g. 1 empty text before planting, 21 after)
    excluded = sorted(k for k in before if not matches.get(k))
    findings = [f for f in report.findings if f.key not in excluded]
    return Score(*_tables(findings, defects, matches), matches, tuple(excluded))


def _matches(finding: Finding, defect: dict, tools: AuditTools) -> bool:
    if finding.category != defect["category"] or not _bare(finding.columns, finding.view) & \
            _bare(defect["columns"], defect.get("view", finding.view)):
        return False
    if not defect["rows"]:
        if defect.get("view"):  # rows deleted from a table (missing instants): its view
            return finding.view == defect["view"]
        named = {e.get("_file") for e in finding.evidence.examples}
        return bool(named & set(defect["files"]))
    if finding.predicate is None:
        return False
    keys = ", ".join(f"('{f.replace(chr(39), chr(39) * 2)}', {int(r)})" for f, r in defect["rows"])
    hit, result = tools.scalar(f"SELECT count(*) FROM {finding.view} WHERE ({finding.predicate}) "
                               f"AND (_file, _row) IN (SELECT * FROM (VALUES {keys}))")
    return result.ok and hit >= MIN_OVERLAP * len(defect["rows"])


def _bare(columns, view: str) -> set[str]:
    """Column names without their table (`flights.origin` over `flights` is `origin`)."""
    return {c[len(view) + 1:] if c.startswith(view + ".") else c for c in columns}


def _tables(findings: list[Finding], defects: list[dict], matches: dict[str, list[str]]
            ) -> tuple[dict[str, ScoreRow], ScoreRow]:
    per: dict[str, ScoreRow] = {}
    for category in CATEGORIES:
        mine = [f for f in findings if f.category == category]
        planted = [d for d in defects if d["category"] == category]
        if mine or planted:
            per[category] = _row(mine, planted, matches)
    return per, _row(findings, defects, matches)


def _row(findings: list[Finding], defects: list[dict], matches: dict[str, list[str]]) -> ScoreRow:
    tp = sum(1 for f in findings if matches.get(f.key))
    found_ids = {d for f in findings for d in matches.get(f.key, [])}
    found = sum(1 for d in defects if d["id"] in found_ids)
    precision = tp / len(findings) if findings else None
    recall = found / len(defects) if defects else None
    f1 = (2 * precision * recall / (precision + recall)
          if precision and recall else (0.0 if precision is not None and recall is not None else None))
    return {"defects": len(defects), "found": found, "findings": len(findings),
            "true_positives": tp, "precision": precision, "recall": recall, "f1": f1}
