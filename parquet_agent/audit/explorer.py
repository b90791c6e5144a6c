"""`FindingsExplorer(run_dir)`: an ipywidgets view of one audit run, as tabs.

    ex = FindingsExplorer("runs/audit-1")   # display it: the last expression of a cell
    ex.finding.value = key                  # pick a finding: ex.detail shows its SQL, counts,
                                            #   examples and gate records (as in report.html)
    ex.tabs.titles                          # Findings, Dismissed, Diff, Evaluations, Steps

Like `explore.CaseExplorer`, behaviour lives in observers that set `HTML.value`, so it works in
plain pytest and renders the same in JupyterLab.
"""

from __future__ import annotations

from pathlib import Path

import ipywidgets as W

from parquet_agent.audit.html import (
    diff_html,
    escape_text,
    evaluations_table,
    finding_html,
    set_aside_html,
    table_html,
)
from parquet_agent.audit.report import AuditReport

_STEP_COLUMNS = ("step", "tool", "arguments", "gate", "ok", "confidence", "critique")
TITLES = ("Findings", "Dismissed", "Diff", "Evaluations", "Steps")


class FindingsExplorer(W.VBox):
    def __init__(self, run: AuditReport | str | Path, **kwargs):
        self.report = run if isinstance(run, AuditReport) else AuditReport.load(run)
        r = self.report
        options = [(f"[{f.severity}] {f.category}: {f.title} ({f.evidence.count})", f.key)
                   for f in r.findings]
        self.finding = W.Dropdown(options=options, description="finding",
                                  layout=W.Layout(width="95%"))
        self.detail = W.HTML()
        self.finding.observe(self._on_pick, names="value")
        dismissed = W.HTML(set_aside_html(r.dismissed)
                           + (f"<h4>Key collisions</h4>{set_aside_html(r.collisions)}"
                              if r.collisions else ""))
        diff = W.HTML(diff_html(r))
        evaluations = W.HTML(evaluations_table(r.evaluations))
        steps = W.HTML(table_html([s.model_dump(include=set(_STEP_COLUMNS)) for s in r.steps],
                                  list(_STEP_COLUMNS)))
        self.tabs = W.Tab(children=[W.VBox([self.finding, self.detail]), dismissed, diff,
                                    evaluations, steps])
        self.tabs.titles = TITLES
        header = W.HTML(f"<b>audit {escape_text(r.run_id)}</b> of {escape_text(r.lineage)}: {escape_text(r.status)} — "
                        f"{len(r.findings)} findings, {len(r.dismissed)} dismissed, "
                        f"gates {escape_text(r.verdict_counts())}")
        super().__init__([header, self.tabs], **kwargs)
        self._on_pick({"new": self.finding.value})

    def _on_pick(self, change: dict) -> None:
        key = change["new"]
        self.detail.value = finding_html(self.report.finding(key)) if key else "<p>no findings</p>"
