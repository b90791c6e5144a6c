"""Plotly figures of runs: pure functions of one run or several, each returning a `go.Figure`.

    from parquet_agent import charts
    charts.scores(run)                     # correctness and citation support by model x strategy,
                                           #   with their 95% bootstrap intervals (error bars)
    charts.cost_vs_correctness(run)        # known cost per case against mean correctness
    charts.latency(run)                    # case wall-time distributions (box per cell)
    charts.tool_effort(run)                # tool calls per case: worker runs, cache hits, errors,
                                           #   budget rejections; model rounds per case
    charts.cost_breakdown(run)             # USD by answers, judge, health checks, retries
    charts.cache_savings(run)              # calls served from the result cache and the worker
                                           #   time they saved (estimated, see the function)
    charts.main_charts(run)                # all of the above by name (tables read once)
    charts.figure_html(fig)                # an offline-safe HTML fragment (plotly.js inline)
    charts.embed_figures({"scores": fig})  # for a page with a strict CSP (report.html): the
                                           #   plotly.js text, empty divs, one script per figure
    charts.comparison_deltas(cmp)          # a RunComparison's paired deltas per cell (95% CIs)
    charts.comparison_changes(cmp)         #   and its cases per cell by change
    charts.judge_agreement(run)            # kappa per pair of judges, repeat flip rates (CIs)
    charts.verdicts(run)                   # correct / incorrect / abstained per cell

`run` is a `Run`, a run folder, or a list of them: with several runs every cell is labelled
`<run id> · <model> · <strategy>` and figures compare runs side by side. Data come from the
run's journals (`Run.summary()`, `cases_df()`, `ledger()`, `tool_calls_df()`), so a chart works
for any saved run, exported or not. Unknown costs are never drawn as zero: they are counted and
named in the hover text and the title.

Offline: nothing here refers to a CDN. `figure_html(fig)` inlines plotly.js (about 4.8 MB) by
default; embed several figures with `include_plotlyjs=True` on the first only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from parquet_agent.explore.judging_charts import judge_agreement, verdicts
from parquet_agent.analysis.compare import ALL_CELLS, CHANGES, RunComparison
from parquet_agent.experiment.run import open_experiment

TEMPLATE = "plotly_white"
COLORS = {"correctness": "#1f77b4", "citation_support": "#ff7f0e", "answer": "#1f77b4",
          "judge": "#9467bd", "health": "#2ca02c", "retries": "#d62728",
          "worker runs": "#1f77b4", "cache hits": "#2ca02c", "errors": "#ff7f0e",
          "budget rejected": "#d62728"}
COST_CATEGORIES = ("answer", "judge", "health", "retries")
RUN_LEVEL = "run level"  # ledger rows without a case: health checks before the first case


class RunTables:
    """A run's tables, each computed once (every table reads all journals; `main_charts` on a
    400-case run drops from ~5 s to ~2 s). Same method names as `Run`; pass one to any chart
    to reuse it: `t = charts.RunTables(run); charts.scores(t); charts.latency(t)`."""

    def __init__(self, run: Any):
        self.run = open_experiment(run)
        self.run_id = self.run.run_id
        self._tables: dict[str, pd.DataFrame] = {}

    def _get(self, name: str) -> pd.DataFrame:
        if name not in self._tables:
            self._tables[name] = getattr(self.run, name)()
        return self._tables[name]

    def summary(self) -> pd.DataFrame:
        return self._get("summary")

    def cases_df(self) -> pd.DataFrame:
        return self._get("cases_df")

    def ledger(self) -> pd.DataFrame:
        return self._get("ledger")

    def tool_calls_df(self) -> pd.DataFrame:
        return self._get("tool_calls_df")


def _runs(runs: Any) -> list[RunTables]:
    if isinstance(runs, Sequence) and not isinstance(runs, (str, bytes)):
        if not runs:
            raise ValueError("no runs given: pass a Run, a run folder, or a list of them")
        items = list(runs)
    else:
        items = [runs]
    return [r if isinstance(r, RunTables) else RunTables(r) for r in items]


def _label(run, model: Any, strategy: Any, several: bool) -> str:
    cell = f"{model} · {strategy}"
    return f"{run.run_id} · {cell}" if several else cell


def _layout(fig: go.Figure, title: str, *, top: int = 60, **kwargs: Any) -> go.Figure:
    fig.update_layout(title=title, template=TEMPLATE, height=420,
                      margin=dict(l=60, r=20, t=top, b=80), **kwargs)
    return fig


def _summaries(runs: list) -> pd.DataFrame:
    several = len(runs) > 1
    frames = []
    for run in runs:
        s = run.summary()
        if s.empty:
            continue
        s = s.copy()
        s["run_id"] = run.run_id
        s["cell"] = [_label(run, m, st, several) for m, st in zip(s["model"], s["strategy"])]
        frames.append(s)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _cases(runs: list) -> pd.DataFrame:
    several = len(runs) > 1
    frames = []
    for run in runs:
        c = run.cases_df().copy()
        c["run_id"] = run.run_id
        c["cell"] = [_label(run, m, st, several) for m, st in zip(c["model"], c["strategy"])]
        frames.append(c)
    return pd.concat(frames, ignore_index=True)


def _err(mean: pd.Series, low: pd.Series, high: pd.Series) -> dict[str, Any]:
    """Asymmetric error bars from an interval; a missing interval draws no bar."""
    return dict(type="data", symmetric=False, array=(high - mean).fillna(0).tolist(),
                arrayminus=(mean - low).fillna(0).tolist(), visible=True)


def scores(runs: Any) -> go.Figure:
    """Mean correctness and citation support (0-100) per model x strategy, 95% bootstrap
    intervals as error bars; the hover names how many cases were scored."""
    s = _summaries(_runs(runs))
    fig = go.Figure()
    for col, low, high, name in (("correctness", "correctness_low", "correctness_high",
                                  "correctness"),
                                 ("citation_support", "citation_support_low",
                                  "citation_support_high", "citation support")):
        if s.empty:
            break
        mean = pd.to_numeric(s[col], errors="coerce")
        fig.add_bar(x=s["cell"], y=mean, name=name, marker_color=COLORS[col],
                    error_y=_err(mean, pd.to_numeric(s[low], errors="coerce"),
                                 pd.to_numeric(s[high], errors="coerce")),
                    customdata=s[["scored", "cases"]].to_numpy(),
                    hovertemplate="%{x}<br>" + name + " %{y:.1f}<br>scored %{customdata[0]} "
                                  "of %{customdata[1]} cases<extra></extra>")
    return _layout(fig, "Correctness and citation support (mean, 95% bootstrap CI)",
                   barmode="group", yaxis=dict(title="score (0-100)", range=[0, 105]),
                   xaxis=dict(title="model · strategy"))


def cost_vs_correctness(runs: Any) -> go.Figure:
    """One point per model x strategy: known cost per case (USD; summary.json's
    `cost_usd_known` over the cell's cases) against mean correctness with its interval. Cases
    with an attempt of unknown cost are left out of the cost, and the hover and title say so."""
    s = _summaries(_runs(runs))
    fig = go.Figure()
    unknown, unpriced, known = 0, list[str](), list[float]()
    row: Any  # a summary row: itertuples' fields are the summary's columns, typed per column
    for row in s.itertuples():
        cost = row.cost_usd_known / row.cases if row.cases else float("nan")
        if row.cases and row.cases_with_unknown_cost >= row.cases and not row.cost_usd_known:
            cost = float("nan")  # nothing about its cost is known: no point at 0
            unpriced.append(row.cell)
        elif cost == cost:
            known.append(cost)
        mean = pd.Series([row.correctness], dtype=float)
        unknown += int(row.cases_with_unknown_cost)
        fig.add_scatter(
            x=[cost], y=mean, mode="markers", name=row.cell, marker=dict(size=12),
            error_y=_err(mean, pd.Series([row.correctness_low], dtype=float),
                         pd.Series([row.correctness_high], dtype=float)),
            customdata=[[row.cost_usd_known, row.cases, row.cases_with_unknown_cost]],
            hovertemplate=f"{row.cell}<br>USD per case %{{x:.5f}} (total %{{customdata[0]:.4f}} "
                          "over %{customdata[1]} cases)<br>correctness %{y:.1f}<br>cases "
                          "of unknown cost: %{customdata[2]}<extra></extra>")
    title = "Cost against correctness"
    if unknown:
        title += f" ({unknown} cases of unknown cost not included)"
    if unpriced:
        title += f"; cost unknown for {', '.join(unpriced)}"
    xaxis: dict[str, Any] = {"title": "known cost per case (USD)"}
    if known and max(known) == 0:  # every known cost is 0 (offline models): 0 at the left
        xaxis.update(range=[-0.0001, 0.001], title="known cost per case (USD): all 0")
    return _layout(fig, title, xaxis=xaxis,
                   yaxis=dict(title="mean correctness (0-100)", range=[0, 105]))


def latency(runs: Any) -> go.Figure:
    """Case wall time (seconds) per model x strategy as box plots with every case shown."""
    c = _cases(_runs(runs))
    fig = go.Figure()
    for cell, g in c.groupby("cell", sort=True):
        seconds = pd.to_numeric(g["wall_ms"], errors="coerce") / 1000
        fig.add_box(y=seconds, name=cell, boxpoints="all", jitter=0.3, pointpos=0,
                    text=g["case_id"], hovertemplate="%{text}<br>%{y:.2f} s<extra></extra>")
    return _layout(fig, "Case latency (wall time per case)", showlegend=False,
                   yaxis=dict(title="seconds", rangemode="tozero"),
                   xaxis=dict(title="model · strategy"))


def tool_effort(runs: Any) -> go.Figure:
    """Tool responses per case, stacked by what happened to them (worker runs, cache hits,
    errors other than budget, budget rejections), with model rounds per case as markers."""
    runs = _runs(runs)
    c = _cases(runs)
    parts: dict[str, list[float]] = {k: [] for k in ("worker runs", "cache hits", "errors",
                                                     "budget rejected")}
    cells, rounds = [], []
    for run in runs:
        calls = run.tool_calls_df()
        cases = c[c["run_id"] == run.run_id]
        merged = calls.merge(cases[["case_id", "cell"]], on="case_id", how="inner")
        for cell, g in cases.groupby("cell", sort=True):
            k = merged[merged["cell"] == cell]
            n = max(len(g), 1)
            ok = k["ok"].fillna(False).astype(bool)
            budget = k["budget_rejected"].astype(bool)
            cache = k["cache_hit"].astype(bool)
            parts["worker runs"].append(float((ok & ~cache).sum()) / n)
            parts["cache hits"].append(float((ok & cache).sum()) / n)
            parts["errors"].append(float((~ok & ~budget).sum()) / n)
            parts["budget rejected"].append(float(budget.sum()) / n)
            rounds.append(float(g["model_rounds"].sum()) / n)
            cells.append(cell)
    fig = go.Figure()
    for name, values in parts.items():
        fig.add_bar(x=cells, y=values, name=name, marker_color=COLORS[name],
                    hovertemplate="%{x}<br>" + name + " %{y:.2f} per case<extra></extra>")
    fig.add_scatter(x=cells, y=rounds, name="model rounds", mode="markers",
                    marker=dict(symbol="diamond", size=12, color="black"),
                    hovertemplate="%{x}<br>model rounds %{y:.2f} per case<extra></extra>")
    return _layout(fig, "Tool effort per case", barmode="stack",
                   yaxis=dict(title="per case"), xaxis=dict(title="model · strategy"))


def _ledger(runs: list) -> pd.DataFrame:
    several = len(runs) > 1
    frames = []
    for run in runs:
        ledger = run.ledger().copy()  # keyed by case, model and strategy (frames.KEYS)
        ledger["cell"] = [(_label(run, m, s, several) if isinstance(cid, str) and m is not None
                           else (f"{run.run_id} · {RUN_LEVEL}" if several else RUN_LEVEL))
                          for cid, m, s in zip(ledger["case_id"], ledger["model"],
                                               ledger["strategy"])]
        frames.append(ledger)
    return pd.concat(frames, ignore_index=True)


def cost_breakdown(runs: Any) -> go.Figure:
    """Left: known USD per model x strategy, stacked by purpose: answers, judge, health checks
    and retries (failed or retried attempts, whatever their purpose). Right: the attempts behind
    them, because a retry usually has no known cost and would otherwise be invisible. Health
    checks run once per run, before any case, so they get their own `run level` bar. Attempts
    of unknown cost are counted in the hover and the title, never added as 0."""
    ledger = _ledger(_runs(runs))
    cells = sorted(ledger["cell"].unique(), key=lambda c: (RUN_LEVEL in c, c))
    fig = make_subplots(rows=1, cols=2, column_widths=[0.6, 0.4],
                        subplot_titles=("known USD", "API attempts"))
    unknown_total = int((~ledger["cost_known"].astype(bool)).sum()) if len(ledger) else 0
    for category in COST_CATEGORIES:
        part = ledger[ledger["category"] == category]
        known = part[part["cost_known"].astype(bool)]
        usd = [float(known.loc[known["cell"] == c, "cost_usd"].sum()) for c in cells]
        counts = [[int((part["cell"] == c).sum()),
                   int(((part["cell"] == c) & ~part["cost_known"].astype(bool)).sum())]
                  for c in cells]
        fig.add_bar(x=cells, y=usd, name=category, marker_color=COLORS[category],
                    legendgroup=category, customdata=counts, row=1, col=1,
                    hovertemplate="%{x}<br>" + category + " USD %{y:.5f}<br>%{customdata[0]} "
                                  "attempts, %{customdata[1]} of unknown cost<extra></extra>")
        fig.add_bar(x=cells, y=[n for n, _ in counts], name=f"{category} (attempts)",
                    marker_color=COLORS[category], legendgroup=category, showlegend=False,
                    row=1, col=2,
                    hovertemplate="%{x}<br>" + category + " %{y} attempts<extra></extra>")
    title = "Cost by purpose"
    if unknown_total:
        title += f"; {unknown_total} attempts of unknown cost not included"
    fig.update_yaxes(title_text="USD", rangemode="tozero", row=1, col=1)
    return _layout(fig, title, barmode="stack", top=90)


def cache_savings(runs: Any) -> go.Figure:
    """Left: tool calls served from the shared result cache against calls run by a worker.
    Right: worker seconds the hits saved, estimated per hit as the median `run_ms` of the same
    tool's successful worker runs in the same run (a hit itself costs only a lookup)."""
    runs = _runs(runs)
    c = _cases(runs)
    cells, hits, worker, saved = [], [], [], []
    for run in runs:
        calls = run.tool_calls_df()
        cases = c[c["run_id"] == run.run_id]
        merged = calls.merge(cases[["case_id", "cell"]], on="case_id", how="inner")
        ok = merged["ok"].fillna(False).astype(bool)
        cache = merged["cache_hit"].astype(bool)
        runs_ms = pd.to_numeric(merged["run_ms"], errors="coerce")
        typical = runs_ms[ok & ~cache].groupby(merged.loc[ok & ~cache, "name"]).median()
        for cell in sorted(cases["cell"].unique()):
            in_cell = merged["cell"] == cell
            cell_hits = merged[in_cell & cache]
            cells.append(cell)
            hits.append(int(len(cell_hits)))
            worker.append(int((in_cell & ~cache & merged["dispatched"].fillna(False)
                               .astype(bool)).sum()))
            saved.append(float(sum(typical.get(name, 0.0) for name in cell_hits["name"])) / 1000)
    fig = make_subplots(rows=1, cols=2, subplot_titles=("tool calls", "worker time saved (s)"))
    fig.add_bar(x=cells, y=worker, name="run by a worker", marker_color=COLORS["worker runs"],
                row=1, col=1)
    fig.add_bar(x=cells, y=hits, name="served from cache", marker_color=COLORS["cache hits"],
                row=1, col=1)
    fig.add_bar(x=cells, y=saved, name="seconds saved (est.)", marker_color="#17becf",
                row=1, col=2)
    return _layout(fig, f"Result cache: {sum(hits)} hits, about {sum(saved):.2f} worker seconds "
                        "saved", barmode="stack", top=90)


def main_charts(runs: Any) -> dict[str, go.Figure]:
    """Every chart above, by function name (opens the runs once)."""
    runs = _runs(runs)
    return {"scores": scores(runs), "cost_vs_correctness": cost_vs_correctness(runs),
            "latency": latency(runs), "tool_effort": tool_effort(runs),
            "cost_breakdown": cost_breakdown(runs), "cache_savings": cache_savings(runs)}


def figure_html(fig: go.Figure, *, include_plotlyjs: bool | str = True, full_html: bool = False,
                div_id: str | None = None) -> str:
    """An HTML fragment (a `<div>` and its `<script>`) that draws `fig` with no network.

    `include_plotlyjs=True` inlines plotly.js (~4.8 MB); pass False for the second and later
    figures of one page. A CDN is refused: offline pages would show a blank chart."""
    if include_plotlyjs in ("cdn", "require") or (isinstance(include_plotlyjs, str)
                                                  and include_plotlyjs.startswith("http")):
        raise ValueError(f"include_plotlyjs={include_plotlyjs!r} loads plotly.js from the "
                         "network; use True (inline) or False (already on the page)")
    return fig.to_html(include_plotlyjs=include_plotlyjs, full_html=full_html, div_id=div_id,
                       config={"displaylogo": False, "responsive": True})


@dataclass(frozen=True)
class FigureEmbed:
    """Figures split for a page with a strict Content-Security-Policy (report.html's): no
    inline event handlers, every script a separate text whose sha256 the page can allow.

    `plotly_js`: the plotly.js bundle (put it in a script once per page); `divs`: name -> an
    empty `<div id=...>`; `scripts`: name -> the JS that draws that figure into its div (data
    as JSON with every `<` escaped, so no text can close the script element)."""

    plotly_js: str
    divs: dict[str, str]
    scripts: dict[str, str]

    def html(self) -> str:
        """Everything inline, in order: plotly.js, then each div followed by its script."""
        parts = [f"<script>{self.plotly_js}</script>"]
        for name, div in self.divs.items():
            parts.append(f"{div}<script>{self.scripts[name]}</script>")
        return "".join(parts)


def embed_figures(figures: dict[str, go.Figure], *, id_prefix: str = "pa-chart-") -> FigureEmbed:
    """Split `figures` (name -> Figure) for a CSP page; see `FigureEmbed`."""
    import html as html_mod
    import re

    from plotly.offline import get_plotlyjs

    divs, scripts = {}, {}
    for name, fig in figures.items():
        div_id = id_prefix + re.sub(r"[^A-Za-z0-9_-]", "-", name)
        data = fig.to_json().replace("<", "\\u003c")
        divs[name] = f'<div id="{html_mod.escape(div_id)}" class="pa-chart"></div>'
        scripts[name] = (f"(function(){{var f={data};Plotly.newPlot("
                         f"document.getElementById({json.dumps(div_id)}),f.data,f.layout,"
                         f'{{"displaylogo":false,"responsive":true}});}})();')
    return FigureEmbed(get_plotlyjs(), divs, scripts)




# -- a comparison's figures (analysis.compare.RunComparison) --------------------------------------


def comparison_deltas(cmp: RunComparison) -> go.Figure:
    """Mean paired correctness and citation deltas (new - old) per cell with 95% CIs."""
    cells = cmp.by_cell
    labels = [f"{m} · {s}" if m != ALL_CELLS else ALL_CELLS
              for m, s in zip(cells["model"], cells["strategy"])]
    fig = go.Figure()
    for name, color in (("correctness", "#1f77b4"), ("citation", "#ff7f0e")):
        mean = pd.to_numeric(cells[f"{name}_delta"], errors="coerce")
        fig.add_bar(x=labels, y=mean, name=f"{name} delta", marker_color=color,
                    error_y=_err(mean, pd.to_numeric(cells[f"{name}_delta_low"],
                                                     errors="coerce"),
                                 pd.to_numeric(cells[f"{name}_delta_high"], errors="coerce")),
                    customdata=cells[["paired_scored", "p_value"]].to_numpy(),
                    hovertemplate="%{x}<br>mean delta %{y:+.1f}<br>%{customdata[0]} scored "
                                  "pairs, McNemar p=%{customdata[1]:.3g}<extra></extra>")
    fig.add_hline(y=0, line_color="#888")
    return _layout(fig, f"Paired score deltas, {cmp.new_run_id} − {cmp.old_run_id} "
                        "(95% bootstrap CI)", barmode="group",
                   yaxis=dict(title="new − old (points)"),
                   xaxis=dict(title="model · strategy"))


def comparison_changes(cmp: RunComparison) -> go.Figure:
    """Cases per cell by change: resolved, regressed, unchanged, unscored, new, dropped."""
    cells = cmp.by_cell[cmp.by_cell["model"] != ALL_CELLS]
    labels = [f"{m} · {s}" for m, s in zip(cells["model"], cells["strategy"])]
    colors = {"resolved": "#2ca02c", "regressed": "#d62728", "still correct": "#aec7e8",
              "still incorrect": "#ffbb78", "unscored": "#c7c7c7", "new": "#9467bd",
              "dropped": "#8c564b"}
    fig = go.Figure()
    for change in CHANGES:
        fig.add_bar(x=labels, y=cells[change].tolist(), name=change,
                    marker_color=colors[change])
    return _layout(fig, f"What changed per case (correct = correctness ≥ {cmp.threshold:g})",
                   barmode="stack", yaxis=dict(title="cases"),
                   xaxis=dict(title="model · strategy"))


__all__ = ["FigureEmbed", "RunTables", "cache_savings", "comparison_changes", "comparison_deltas",
           "cost_breakdown", "cost_vs_correctness", "embed_figures", "figure_html",
           "judge_agreement", "latency", "main_charts", "scores", "tool_effort", "verdicts"]
