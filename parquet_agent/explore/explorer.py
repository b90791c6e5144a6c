"""`CaseExplorer(run)`: an ipywidgets browser over the cases of one run.

    ex = CaseExplorer(run)                 # a Run, or a run folder path; display it in a notebook
    ex.model.value = "baseline"            # filters: question (text), model, strategy, status,
    ex.score.value = (50, 100)             #   score range on correctness or citation support
    ex.filtered()                          # the index rows that pass the filters (DataFrame)
    ex.show("Q001__baseline__sql")         # select one case
    ex.detail.value                        # its six sections (same as report.html), as HTML
    ex.raw_picker.value = path             # a file of the case (record, journal, raw files);
                                           #   ex.raw_view shows its exact content
    ex.tabs.titles                         # ("Cases", "Findings")
    ex.findings.value                      # the Findings tab: data-quality audits of the run's
                                           #   corpus (`audit="auto"`: audit folders beside the
                                           #   run with its corpus snapshot; or named folders),
                                           #   those naming the selected case's filings first

The explorer is itself a `VBox`, so the last expression of a cell displays it. All behaviour
lives in observers that set `HTML.value` or assign `Output.outputs` (never `with out:`), which
is what makes it testable in plain pytest and render the same in JupyterLab. The case records
come from `explore.source.CaseSource` (the exports, or the report's `build_case`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import ipywidgets as W

from parquet_agent.errors import CaseRecordError, UsageError
from parquet_agent.escape import html_text
from parquet_agent.explore.case_view import render_case
from parquet_agent.explore.source import CaseSource
from parquet_agent.report.case_model import CaseRecord
from parquet_agent.report.corpus_audit import audits_section, corpus_audits

ALL = "(all)"
NO_RAW = "(choose a file to see its exact content)"
SCORE_FIELDS = ("correctness", "citation_support")


def _options(values: Any) -> list[str]:
    return [ALL] + sorted({str(v) for v in values if v is not None and v == v})


QUESTION_CHARS = 70  # of the question text shown in the case list


def _snippet(text: Any) -> str:
    if not isinstance(text, str):
        return ""
    text = " ".join(text.split())
    return text if len(text) <= QUESTION_CHARS else text[: QUESTION_CHARS - 1] + "…"


def _fmt_score(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "unscored"
    return f"{float(value):.0f}"


class CaseExplorer(W.VBox):
    """Filters, a case list, the selected case's six sections and its raw files."""

    def __init__(self, run: Any, *, case_id: str | None = None, audit: Any = "auto",
                 **kwargs: Any):
        self.cases = CaseSource.open(run)
        self._updating = False
        self._shown: str | None = None
        self.run_dir: Path = self.cases.run_dir
        self._index = self.cases.index
        idx = self._index
        self.question = W.Text(placeholder="question id or text contains…",
                               description="question", continuous_update=False)
        self.model = W.Dropdown(options=_options(idx["model"]), value=ALL, description="model")
        self.strategy = W.Dropdown(options=_options(idx["strategy"]), value=ALL,
                                   description="strategy")
        self.status = W.Dropdown(options=_options(idx["status"]), value=ALL, description="status")
        self.score_field = W.Dropdown(options=list(SCORE_FIELDS), value="correctness",
                                      description="score")
        self.score = W.FloatRangeSlider(value=(0.0, 100.0), min=0.0, max=100.0, step=1.0,
                                        description="range", continuous_update=False,
                                        readout_format=".0f")
        self.include_unscored = W.Checkbox(value=True, description="include unscored",
                                           indent=False)
        self.count = W.HTML()
        self.count.add_class("pa-count")  # a stable hook for browser checks
        self.picker = W.Select(options=[], rows=8, description="case",
                               layout=W.Layout(width="95%"))
        self.detail = W.HTML()
        self.raw_picker = W.Dropdown(options=[(NO_RAW, None)], value=None, description="raw file",
                                     layout=W.Layout(width="95%"))
        self.raw_view = W.Output(layout=W.Layout(max_height="30em", overflow="auto"))
        self.audits = corpus_audits(self.run_dir, audit)
        self.findings = W.HTML()
        header = W.HTML(f"<b>Run</b> {html_text(self.cases.run_id)} · "
                        f"{len(idx)} cases · records from "
                        f"{'the exports' if self.cases.from_exports else 'the journals'}")
        wrap = {"layout": W.Layout(flex_flow="row wrap")}  # a narrow pane: filters wrap
        filters = W.VBox([
            W.HBox([self.question, self.model, self.strategy, self.status], **wrap),
            W.HBox([self.score_field, self.score, self.include_unscored, self.count], **wrap),
        ])
        cases = W.VBox([filters, self.picker, self.detail,
                        W.HTML("<b>Files of this case</b>: its record, journal and raw "
                               "files (exact stored bytes)"),
                        self.raw_picker, self.raw_view])
        self.tabs = W.Tab(children=[cases, self.findings])
        self.tabs.titles = ("Cases", f"Findings ({sum(len(a.findings) for a in self.audits)})")
        super().__init__([header, self.tabs], **kwargs)
        for widget in (self.question, self.model, self.strategy, self.status, self.score_field,
                       self.score, self.include_unscored):
            widget.observe(self._on_filter, names="value")
        self.picker.observe(self._on_pick, names="value")
        self.raw_picker.observe(self._on_raw, names="value")
        self._refresh()
        if case_id is not None:
            self.show(case_id)

    def __repr__(self) -> str:
        return f"CaseExplorer({str(self.run_dir)!r}, cases={len(self._index)})"

    # -- logic (pure over the index) ------------------------------------------------------------

    def filtered(self):
        """The index rows passing every filter, in index order (a DataFrame)."""
        idx = self._index
        keep = idx["case_id"].notna()
        text = self.question.value.strip().lower()
        if text:
            keep &= (idx["question_id"].fillna("").str.lower().str.contains(text, regex=False)
                     | idx["question"].fillna("").str.lower().str.contains(text, regex=False))
        for widget, col in ((self.model, "model"), (self.strategy, "strategy"),
                            (self.status, "status")):
            if widget.value != ALL:
                keep &= idx[col].astype(str) == widget.value
        scores = idx[self.score_field.value]
        low, high = self.score.value
        in_range = (scores >= low) & (scores <= high)
        keep &= in_range | (scores.isna() & self.include_unscored.value)
        return idx[keep]

    def show(self, case_id: str) -> None:
        """Select `case_id` (UsageError when no case has that id; filters are cleared when they
        hide it)."""
        if case_id not in set(self._index["case_id"]):
            raise UsageError(f"{self.cases.run_id} has no case {case_id!r}")
        if case_id not in self._ids():
            self.reset_filters()
        self.picker.value = case_id

    def reset_filters(self) -> None:
        """Show every case again (question text, model, strategy and status filters cleared)."""
        self.question.value = ""
        for widget in (self.model, self.strategy, self.status):
            widget.value = ALL
        self.score.value = (0.0, 100.0)
        self.include_unscored.value = True

    # -- observers ------------------------------------------------------------------------------

    def _ids(self) -> list[str]:
        return [value for _, value in self.picker.options]

    def _on_filter(self, _change: dict) -> None:
        self._refresh()

    def _refresh(self) -> None:
        rows = self.filtered()
        options = [(f"{r.case_id}  ·  {r.status}  ·  {self.score_field.value} "
                    f"{_fmt_score(getattr(r, self.score_field.value))}  ·  "
                    f"{_snippet(r.question)}", r.case_id) for r in rows.itertuples()]
        keep = self.picker.value
        # replacing the options moves the selection by itself: render once, after
        self._updating = True
        try:
            self.picker.options = options
            ids = [value for _, value in options]
            target = keep if keep in ids else (ids[0] if ids else None)
            self.picker.value = target
        finally:
            self._updating = False
        self.count.value = f"<b>{len(ids)}</b> of {len(self._index)} cases"
        self._render(target)

    def _on_pick(self, change: dict) -> None:
        if not self._updating:
            self._render(change["new"])

    def _render(self, case_id: str | None) -> None:
        if case_id == self._shown and case_id is not None:
            return
        self._shown = case_id
        self.raw_view.outputs = ()
        if case_id is None:
            self.detail.value = "<p><i>No case matches the filters.</i></p>"
            self.raw_picker.options = [(NO_RAW, None)]
            self.findings.value = self._findings_html(None, None)
            return
        try:
            record = self.cases.record(case_id)
        except CaseRecordError as exc:  # a damaged or hand-edited export: say so, in the pane
            self.detail.value = (f'<p class="pa-error"><b>This case cannot be shown</b>: '
                                 f"{html_text(str(exc))}</p>")
            self.raw_picker.options = [(NO_RAW, None)]
            self.findings.value = self._findings_html(None, None)
            return
        self.detail.value = render_case(record, run_dir=self.run_dir)
        self.findings.value = self._findings_html(case_id, record)
        # a placeholder first: a file is read only when one is chosen; the case record and the
        # journal are offered too: served through the kernel, since file:// links do not open
        # from a JupyterLab page
        links = record.links
        files = [(f"case record: {rel}", rel) for rel in (links.case,) if rel]
        files += [(f"journal: {rel}", rel) for rel in (links.journal,) if rel]
        files += [(p, p) for p in record.raw_files]
        self.raw_picker.options = [(NO_RAW, None)] + files
        self.raw_picker.value = None

    def _findings_html(self, case_id: str | None, record: CaseRecord | None) -> str:
        """The audits' findings, after those whose example rows are filings this case named
        (in its question's evidence, its tool calls or their results)."""
        text = json.dumps(record.to_dict() if record else {}, ensure_ascii=False, default=str)
        named = []
        for audit in self.audits:
            stems = {row.get("file_stem") for f in audit.findings
                     for row in f.evidence.examples} - {None}  # (example rows are data)
            for f in audit.findings_on(str(s) for s in stems if str(s) in text):
                named.append(f"<li>[{html_text(f.severity)}] {html_text(f.category)}: "
                             f"{html_text(f.title)} (audit {html_text(audit.run_id)})</li>")
        head = ""
        if case_id is not None and self.audits:
            head = (f"<p><b>Findings whose example rows are filings {html_text(case_id)} "
                    "named</b> (examples are up to 5 rows a finding: others may touch it too):"
                    f"</p><ul>{''.join(named) or '<li>none</li>'}</ul>")
        return head + audits_section(self.audits, self.run_dir)

    def _on_raw(self, change: dict) -> None:
        path = change["new"]
        if not path:
            self.raw_view.outputs = ()
            return
        text = self.cases.raw_text(path)
        self.raw_view.outputs = ({
            "output_type": "display_data",
            "data": {"text/plain": text},
            "metadata": {},
        },)
