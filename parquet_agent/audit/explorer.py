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

from parquet_agent.audit.html import _e, _evaluations, _finding, _table
from parquet_agent.audit.report import AuditReport

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
        dismissed = W.HTML("".join(
            f"<p><b>{_e(d.get('title'))}</b> ({_e(d.get('category'))}): "
            f"{_e(d.get('dismissed_reason'))}</p>" for d in r.dismissed) or "<p>none</p>")
        diff = W.HTML(_table([{"status": s, "count": len(k), "keys": ", ".join(k)}
                              for s, k in r.diff.items()]) + _table(list(r.rechecks)))
        evaluations = W.HTML(_evaluations(r.evaluations))
        steps = W.HTML(_table([{k: s.get(k) for k in ("step", "tool", "arguments", "gate", "ok",
                                                      "confidence", "critique")} for s in r.steps]))
        self.tabs = W.Tab(children=[W.VBox([self.finding, self.detail]), dismissed, diff,
                                    evaluations, steps])
        self.tabs.titles = TITLES
        header = W.HTML(f"<b>audit {_e(r.run_id)}</b> of {_e(r.lineage)}: {_e(r.status)} — "
                        f"{len(r.findings)} findings, {len(r.dismissed)} dismissed, "
                        f"gates {_e(r.verdict_counts())}")
        super().__init__([header, self.tabs], **kwargs)
        self._on_pick({"new": self.finding.value})

    def _on_pick(self, change: dict) -> None:
        key = change["new"]
        self.detail.value = _finding(self.report.finding(key)) if key else "<p>no findings</p>"
