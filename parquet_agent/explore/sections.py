"""The optional sections of report.html that need plotting or a second run, built here and
injected into the exporter (`export_run(run_dir, extras=report_extras(...))`), so the report
layer never imports explore.

    extras = report_extras(run_dir, charts=True, compare_with="runs/older")
    export_run(run_dir, extras=extras)

`charts` embeds the main plotly charts (plotly.js inline: ~4.8 MB more); `compare_with` adds a
paired comparison with that older run folder (`analysis.compare`, as HTML with no script);
`audits` ("auto" or audit run folders) adds the findings of data-quality audits of the run's
corpus (`report.corpus_audit`, static HTML). With `charts`, a re-judged run's report also gets the
judge agreement chart (its tables are in every export: `report.judge_agreement`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from parquet_agent.errors import ExportError, RunError
from parquet_agent.explore import charts as charts_mod
from parquet_agent.report.corpus_audit import audits_section, corpus_audits
from parquet_agent.report.html_report import ReportExtras
from parquet_agent.analysis.compare import compare_runs
from parquet_agent.analysis.judgments import judgings
from parquet_agent.experiment.run import open_experiment


def report_extras(run_dir: str | Path, *, charts: bool = False,
                  compare_with: str | Path | None = None,
                  audits: str | Path | Sequence[str | Path] | None = None) -> ReportExtras | None:
    """The chart, comparison and corpus-audit sections of `run_dir`'s report
    (from the journals and, for `audits`, the audits' findings.json:
    `report.corpus_audit.corpus_audits`); None when none applies. ExportError when a run
    cannot be read."""
    run_dir = Path(run_dir).resolve()
    if not charts and compare_with is None and audits is None:
        return None
    sections, scripts = [], []
    if audits is not None:
        sections.append(audits_section(corpus_audits(run_dir, audits), run_dir))
    try:
        if compare_with is not None:
            sections.append(compare_runs(open_experiment(run_dir), open_experiment(Path(compare_with))).to_html())
        if charts:
            figures = charts_mod.main_charts(run_dir)
            if judgings(run_dir):
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

