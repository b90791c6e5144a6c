"""The optional sections of report.html that need plotting or a second run, built here and
injected into the exporter (`export_run(run_dir, extras=report_extras(...))`), so the report
layer never imports explore.

    extras = report_extras(run_dir, charts=True, compare_with="runs/older")
    export_run(run_dir, extras=extras)

`charts` embeds the main plotly charts (plotly.js inline: ~4.8 MB more); `compare_with` adds a
paired comparison with that older run folder (`store.compare`, as HTML with no script);
`audits` ("auto" or audit run folders) adds the findings of data-quality audits of the run's
corpus (`report.corpus_audit`, static HTML). A run that was re-judged always gets a judge
agreement section (`Run.judge_agreement()`'s tables, no script; with `charts`, its chart too).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from parquet_agent.errors import ExportError, RunError
from parquet_agent.explore import charts as charts_mod
from parquet_agent.report.corpus_audit import audits_section, corpus_audits
from parquet_agent.report.html_report import ReportExtras
from parquet_agent.store.compare import compare_runs
from parquet_agent.store.judging import judgings
from parquet_agent.store.run import open_run


def report_extras(run_dir: str | Path, *, charts: bool = False,
                  compare_with: str | Path | None = None,
                  audits: str | Path | Sequence[str | Path] | None = None) -> ReportExtras | None:
    """The chart, comparison, corpus-audit and judge agreement sections of `run_dir`'s report
    (from the journals and, for `audits`, the audits' findings.json:
    `report.corpus_audit.corpus_audits`); None when none applies. ExportError when a run
    cannot be read."""
    run_dir = Path(run_dir).resolve()
    rejudged = bool(judgings(run_dir))
    if not charts and compare_with is None and audits is None and not rejudged:
        return None
    sections, scripts = [], []
    if audits is not None:
        sections.append(audits_section(corpus_audits(run_dir, audits), run_dir))
    try:
        if rejudged:
            sections.append(agreement_html(open_run(run_dir).judge_agreement()))
        if compare_with is not None:
            sections.append(compare_runs(open_run(run_dir), open_run(Path(compare_with))).to_html())
        if charts:
            figures = charts_mod.main_charts(run_dir)
            if rejudged:
                figures["judge_agreement"] = charts_mod.judge_agreement(run_dir)
            embed = charts_mod.embed_figures(figures)
            sections.append('<h2>Charts</h2><div class="charts">' + "".join(embed.divs.values())
                            + "</div>")
            scripts = [embed.plotly_js, *embed.scripts.values()]
    except (RunError, KeyError, ValueError, TypeError) as exc:
        raise ExportError(f"{run_dir}: cannot build the report's charts or comparison: "
                          f"{type(exc).__name__}: {exc}. Check the runs with Run.verify(); "
                          "their files were not changed") from exc
    return ReportExtras(tuple(sections), tuple(scripts))


def agreement_html(tables: dict) -> str:
    """The report's judge agreement section: the pair, repeat and check tables as HTML."""
    parts = ['<h2>Judge agreement</h2><p>Every judgment of every judge is kept (the case '
             'records list them); the figures above use the primary judge. Kappa, Spearman '
             'and mean absolute difference with 95% paired bootstrap intervals; flip rate: '
             'share of cases whose correct / not-correct verdict changes between repeats.</p>']
    for name, title in (("pairs", "Judge vs judge"), ("repeats", "The same judge repeated"),
                        ("checks", "Judges vs the deterministic checks")):
        frame = tables.get(name)
        if frame is not None and len(frame):
            parts.append(f"<h3>{title}</h3>" + frame.to_html(
                index=False, float_format=lambda x: f"{x:.3f}", na_rep="", border=0,
                classes="agreement"))
    return "".join(parts)
