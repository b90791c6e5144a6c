"""Compare two runs case by case: what changed, by how much, and whether it is more than noise.

    cmp = compare_runs(new, old)           # two open Runs; threshold=50, seed=0
    compare_cells(run, ("m", "sql+stream"), ("m", "sql"))   # two cells of one run, by question
    cmp.warnings                           # prompts, tool specs, corpus, config that differ
    cmp.cases                              # one row per case id in either run (outer join)
    cmp.by_cell                            # per model x strategy, plus an `(all)` row
    cmp.resolved() / regressed() / new_cases() / dropped_cases()
    cmp.to_html()                          # a self-contained HTML section (no script)

The comparison is data and one HTML section; its plotly figures live a layer up, in
`explore.compare` (`compare_runs` there returns a `ChartedComparison` with `delta_chart()` and
`transition_chart()`), so `Run.compare` and the report's comparison section need no plotting.

Pairing: cases are aligned by case id (`<question>__<model>__<strategy>`), so the same question
asked of the same model slug with the same strategy is compared with itself.

Per case (`cases.change`): `new` (only in the new run), `dropped` (only in the old one),
`unscored` (in both, but not scored in one of them: a failed or unfinished case has no score,
and none is invented), else by the correctness threshold (correct = correctness >= threshold):
`resolved` (incorrect -> correct), `regressed` (correct -> incorrect), `still correct`,
`still incorrect`.

Per cell (`by_cell`), over pairs scored in both runs: mean paired correctness and citation
deltas (new - old) with seeded 95% percentile-bootstrap intervals of the per-case deltas; the
paired test on correct/incorrect: McNemar, as the exact two-sided binomial test on the
discordant pairs when there are fewer than 25 of them, else the continuity-corrected chi-square
(1 dof); mean paired cost delta (USD, pairs whose cost is fully known) and wall-time delta (ms),
each with its interval. Nothing here needs scipy.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from parquet_agent.analysis.frames import cases_frame
from parquet_agent.analysis.stats import bootstrap_ci
from parquet_agent.errors import UsageError
from parquet_agent.escape import html_text

if TYPE_CHECKING:
    from parquet_agent.store.run import Run

CHANGES = ("resolved", "regressed", "still correct", "still incorrect", "unscored", "new",
           "dropped")
EXACT_BELOW = 25  # discordant pairs under which McNemar's exact binomial form is used
ALL_CELLS = "(all)"


@dataclass(frozen=True)
class PairedTest:
    """McNemar on correct/incorrect pairs: b = regressed, c = resolved."""

    regressed: int
    resolved: int
    method: str
    statistic: float | None
    p_value: float


def mcnemar(regressed: int, resolved: int) -> PairedTest:
    """Two-sided McNemar test from the discordant counts (exact binomial when few)."""
    b, c = int(regressed), int(resolved)
    n = b + c
    if n == 0:
        return PairedTest(b, c, "no discordant pairs", None, 1.0)
    if n < EXACT_BELOW:
        k = min(b, c)
        tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
        return PairedTest(b, c, "McNemar exact (binomial)", None, min(1.0, 2 * tail))
    chi2 = (abs(b - c) - 1) ** 2 / n
    return PairedTest(b, c, "McNemar chi-square, continuity-corrected", chi2,
                      math.erfc(math.sqrt(chi2 / 2)))


# -- what differs between the runs' frozen inputs ---------------------------------------------


def _snapshot_files(manifest: dict[str, Any]) -> dict[str, str]:
    snap = manifest.get("corpus_snapshot") or {}
    return {f.get("name"): f.get("content_hash") for f in snap.get("files") or []}


def manifest_warnings(new: dict[str, Any], old: dict[str, Any]) -> list[str]:
    """Human-readable differences between two run manifests that can explain score changes."""
    out: list[str] = []
    hn, ho = new.get("prompt_hashes") or {}, old.get("prompt_hashes") or {}
    for key in sorted(set(hn) | set(ho)):
        kind = "tool specs" if key.startswith("tools:") else "prompt"
        if key not in ho:
            out.append(f"{kind} {key!r} exists only in the new run")
        elif key not in hn:
            out.append(f"{kind} {key!r} exists only in the old run")
        elif hn[key] != ho[key]:
            out.append(f"{kind} {key!r} differs ({ho[key][:19]}… -> {hn[key][:19]}…): cases "
                       "using it were not asked the same way")
    sn, so = new.get("corpus_snapshot") or {}, old.get("corpus_snapshot") or {}
    if sn.get("snapshot_id") != so.get("snapshot_id"):
        fn, fo = _snapshot_files(new), _snapshot_files(old)
        added = sorted(set(fn) - set(fo))
        removed = sorted(set(fo) - set(fn))
        changed = sorted(k for k in set(fn) & set(fo) if fn[k] != fo[k])
        detail = "; ".join(f"{label}: {', '.join(names[:5])}{' …' if len(names) > 5 else ''}"
                           for label, names in (("added", added), ("removed", removed),
                                                ("changed", changed)) if names)
        out.append(f"corpus snapshot differs ({so.get('snapshot_id')} -> "
                   f"{sn.get('snapshot_id')}){': ' + detail if detail else ''}; the runs did "
                   "not search the same data")
    cn, co = new.get("config") or {}, old.get("config") or {}
    mn = {m.get("name"): m for m in cn.get("models") or []}
    mo = {m.get("name"): m for m in co.get("models") or []}
    for name in sorted(set(mn) & set(mo)):
        diffs = sorted(k for k in set(mn[name]) | set(mo[name])
                       if k != "script" and mn[name].get(k) != mo[name].get(k))
        if diffs:
            out.append(f"model {name!r} is configured differently: "
                       + ", ".join(f"{k} {mo[name].get(k)!r} -> {mn[name].get(k)!r}"
                                   for k in diffs))
    judge_n, judge_o = cn.get("judge") or {}, co.get("judge") or {}
    if (judge_n.get("provider"), judge_n.get("model")) != (judge_o.get("provider"),
                                                           judge_o.get("model")):
        out.append(f"judge differs: {judge_o.get('provider')}/{judge_o.get('model')} -> "
                   f"{judge_n.get('provider')}/{judge_n.get('model')}; scores are not on the "
                   "same scale")
    ln, lo = cn.get("limits") or {}, co.get("limits") or {}
    limit_diffs = sorted(k for k in set(ln) | set(lo) if ln.get(k) != lo.get(k))
    if limit_diffs:
        out.append("limits differ: " + ", ".join(f"{k} {lo.get(k)!r} -> {ln.get(k)!r}"
                                                  for k in limit_diffs))
    if new.get("code_hash") != old.get("code_hash"):
        out.append("the code differs (code_hash); see each manifest's package_versions")
    qn, qo = list(new.get("question_ids") or []), list(old.get("question_ids") or [])
    if qn != qo:  # issue 19: runs over other samples were called "the same in both runs"
        only_new, only_old = set(qn) - set(qo), set(qo) - set(qn)
        out.append(f"the question samples differ ({co.get('sample')!r} -> {cn.get('sample')!r}"
                   f"): {len(only_old)} questions only in the old run, {len(only_new)} only in "
                   f"the new one; paired results cover the {len(set(qn) & set(qo))} shared "
                   "questions")
    return out


# -- the comparison -----------------------------------------------------------------------------


def _frame(run) -> pd.DataFrame:
    c = cases_frame(run)  # the fold's statuses and costs (an unknown cost is NaN)
    c = c.assign(cost=c["cost_usd"])
    return c[["case_id", "question_id", "model", "strategy", "status", "correctness",
              "citation_support", "cost", "wall_ms"]]


def _change(row: pd.Series, threshold: float) -> str:
    if pd.isna(row["status_old"]):
        return "new"
    if pd.isna(row["status_new"]):
        return "dropped"
    if pd.isna(row["correctness_old"]) or pd.isna(row["correctness_new"]):
        return "unscored"
    before, after = row["correctness_old"] >= threshold, row["correctness_new"] >= threshold
    if before == after:
        return "still correct" if after else "still incorrect"
    return "resolved" if after else "regressed"


def _interval(values: pd.Series, seed: int) -> tuple[float | None, float | None, float | None]:
    ci = bootstrap_ci(values.tolist(), seed=seed)
    return ci.mean, ci.low, ci.high


def _cell_row(cell: tuple[Hashable, Hashable], g: pd.DataFrame, seed: int) -> dict[str, Any]:
    counts = g["change"].value_counts()
    both = g[g["change"].isin(("resolved", "regressed", "still correct", "still incorrect"))]
    test = mcnemar(int(counts.get("regressed", 0)), int(counts.get("resolved", 0)))
    row: dict[str, Any] = {"model": cell[0], "strategy": cell[1], "cases": len(g),
                           "paired_scored": len(both)}
    row.update({c: int(counts.get(c, 0)) for c in CHANGES})
    for name, new, old in (("correctness", "correctness_new", "correctness_old"),
                           ("citation", "citation_support_new", "citation_support_old")):
        d = (both[new] - both[old]).dropna()
        row[f"{name}_delta"], row[f"{name}_delta_low"], row[f"{name}_delta_high"] = \
            _interval(d, seed)
    paired = g[~g["change"].isin(("new", "dropped"))]
    for name, col in (("cost_usd", "cost"), ("wall_ms", "wall_ms")):
        d = (paired[f"{col}_new"] - paired[f"{col}_old"]).dropna()
        row[f"{name}_delta"], row[f"{name}_delta_low"], row[f"{name}_delta_high"] = \
            _interval(d, seed)
        row[f"{name}_pairs"] = len(d)
    row.update(test=test.method, p_value=test.p_value, statistic=test.statistic)
    return row


@dataclass(frozen=True)
class RunComparison:
    """The result of `compare_runs`; see the module docstring for every column."""

    new_run_id: str
    old_run_id: str
    threshold: float
    seed: int
    warnings: tuple[str, ...]
    cases: pd.DataFrame
    by_cell: pd.DataFrame

    def _where(self, change: str) -> pd.DataFrame:
        return self.cases[self.cases["change"] == change].reset_index(drop=True)

    def resolved(self) -> pd.DataFrame:
        return self._where("resolved")

    def regressed(self) -> pd.DataFrame:
        return self._where("regressed")

    def new_cases(self) -> pd.DataFrame:
        return self._where("new")

    def dropped_cases(self) -> pd.DataFrame:
        return self._where("dropped")

    def counts(self) -> dict[str, int]:
        vc = self.cases["change"].value_counts()
        return {c: int(vc.get(c, 0)) for c in CHANGES}

    @property
    def overall(self) -> dict[str, Any]:
        row = self.by_cell[self.by_cell["model"] == ALL_CELLS].iloc[0]
        return {str(k): v for k, v in row.to_dict().items()}

    # -- HTML -----------------------------------------------------------------------------------

    def to_html(self, *, figures: Sequence[str] = ()) -> str:
        """A `<section>` for a report or a notebook: warnings, change counts, per-cell deltas
        and tests, and the resolved / regressed / new / dropped case ids. Every string is
        escaped. `figures` (trusted HTML, e.g. the plotly figures `explore.compare` draws)
        close the section."""
        e = html_text
        out = [f'<section class="pa-compare"><h2>Comparison: {e(self.new_run_id)} (new) vs '
               f"{e(self.old_run_id)} (old)</h2>"]
        if self.warnings:
            out.append('<div class="pa-warnings"><b>Differences that can explain changes:</b>'
                       "<ul>" + "".join(f"<li>{e(w)}</li>" for w in self.warnings)
                       + "</ul></div>")
        else:
            out.append("<p>Prompts, tool specs, corpus snapshot, models, judge, limits and the "
                       "question sample are the same in both runs.</p>")
        counts = self.counts()
        out.append("<table class=\"pa-counts\"><tr>" + "".join(f"<th>{e(c)}</th>" for c in CHANGES)
                   + "</tr><tr>" + "".join(f"<td>{counts[c]}</td>" for c in CHANGES)
                   + "</tr></table>")
        out.append(f"<p>Correct means correctness ≥ {self.threshold:g}. Deltas are new − old "
                   f"over pairs scored in both runs, with 95% bootstrap intervals (seed "
                   f"{self.seed}); p-values are two-sided McNemar tests (exact binomial under "
                   f"{EXACT_BELOW} discordant pairs).</p>")
        out.append(_cell_table(self.by_cell))
        for change in ("regressed", "resolved", "new", "dropped"):
            ids = self._where(change)["case_id"].tolist()
            if ids:
                out.append(f"<details><summary>{e(change)} ({len(ids)})</summary><ul>"
                           + "".join(f"<li><code>{e(i)}</code></li>" for i in ids)
                           + "</ul></details>")
        out.extend(figures)
        out.append("</section>")
        return "".join(out)

    def _repr_html_(self) -> str:
        return self.to_html()


def _fmt(value: Any, spec: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return format(value, spec)


def _ci(row: Mapping[Hashable, Any], name: str, spec: str) -> str:
    return (f"{_fmt(row[f'{name}_delta'], spec)} [{_fmt(row[f'{name}_delta_low'], spec)}, "
            f"{_fmt(row[f'{name}_delta_high'], spec)}]")


def _cell_table(cells: pd.DataFrame) -> str:
    head = ("model", "strategy", "paired scored", "resolved", "regressed", "correctness Δ",
            "citation Δ", "McNemar p", "cost Δ USD", "wall Δ ms", "new", "dropped", "unscored")
    out = ["<table class=\"pa-cells\"><tr>" + "".join(f"<th>{html_text(h)}</th>" for h in head)
           + "</tr>"]
    for row in cells.to_dict("records"):
        values = (row["model"], row["strategy"], row["paired_scored"], row["resolved"],
                  row["regressed"], _ci(row, "correctness", "+.1f"), _ci(row, "citation", "+.1f"),
                  _fmt(row["p_value"], ".3g"), _ci(row, "cost_usd", "+.5f"),
                  _ci(row, "wall_ms", "+.0f"), row["new"], row["dropped"], row["unscored"])
        out.append("<tr>" + "".join(f"<td>{html_text(str(v))}</td>" for v in values) + "</tr>")
    out.append("</table>")
    return "".join(out)


def _check_threshold(threshold: float) -> None:
    if not 0 <= threshold <= 100:
        raise ValueError(f"threshold must be within 0..100 (a correctness score), got {threshold}")


def _pair(a: pd.DataFrame, b: pd.DataFrame, new_id: str, old_id: str, warnings: list[str],
          threshold: float, seed: int, what: str) -> RunComparison:
    """Outer-join two case frames on `case_id` and compute every change, delta and test."""
    merged = a.merge(b, on="case_id", how="outer", suffixes=("_new", "_old"), sort=True)
    for col in ("question_id", "model", "strategy"):
        merged[col] = merged[f"{col}_new"].combine_first(merged[f"{col}_old"])
        merged = merged.drop(columns=[f"{col}_new", f"{col}_old"])
    merged["change"] = [_change(r, threshold) for _, r in merged.iterrows()] if len(merged) \
        else pd.Series(dtype=str)
    merged["correctness_delta"] = merged["correctness_new"] - merged["correctness_old"]
    merged["citation_delta"] = merged["citation_support_new"] - merged["citation_support_old"]
    merged["cost_delta"] = merged["cost_new"] - merged["cost_old"]
    merged["wall_ms_delta"] = merged["wall_ms_new"] - merged["wall_ms_old"]
    order = ["case_id", "question_id", "model", "strategy", "change", "status_old", "status_new",
             "correctness_old", "correctness_new", "correctness_delta", "citation_support_old",
             "citation_support_new", "citation_delta", "cost_old", "cost_new", "cost_delta",
             "wall_ms_old", "wall_ms_new", "wall_ms_delta"]
    merged = merged[order]
    if int((~merged["change"].isin(("new", "dropped"))).sum()) == 0:
        warnings.append(f"nothing can be paired: {what}")
    rows = [_cell_row((m, s), g, seed)
            for (m, s), g in merged.groupby(["model", "strategy"], sort=True, dropna=False)]
    rows.append(_cell_row((ALL_CELLS, ALL_CELLS), merged, seed))
    return RunComparison(new_id, old_id, float(threshold), seed, tuple(warnings), merged,
                         pd.DataFrame(rows))


def compare_runs(new_run: Run, old_run: Run, *, threshold: float = 50.0,
                 seed: int = 0) -> RunComparison:
    """Pair two open runs by case id; see the module docstring. (`explore.compare_runs` and
    `Run.compare` also take run folders.)"""
    _check_threshold(threshold)
    warnings = manifest_warnings(new_run.manifest, old_run.manifest)
    return _pair(_frame(new_run), _frame(old_run), new_run.run_id, old_run.run_id, warnings,
                 threshold, seed, "the runs share no case id (case ids are "
                 "<question>__<model>__<strategy>; use the same model names)")


def compare_cells(the_run: Run, new: tuple[str, str], old: tuple[str, str], *,
                  threshold: float = 50.0, seed: int = 0) -> RunComparison:
    """Two model x strategy cells of ONE run, paired by question: is `new` (model, strategy)
    better than `old` on the same questions? Same columns and tests as `compare_runs`; case
    ids become question ids and the one cell is labelled `<new model> vs <old model>` /
    `<new strategy> vs <old strategy>`. E.g. `compare_cells(run, ("baseline", "sql+stream"),
    ("baseline", "sql"))`."""
    _check_threshold(threshold)
    frame = _frame(the_run)
    cells = set(zip(frame["model"], frame["strategy"]))
    for cell in (tuple(new), tuple(old)):
        if cell not in cells:
            raise UsageError(f"{the_run.run_id} has no cell {cell!r}; its (model, strategy) "
                             f"cells are {sorted(cells)}")

    def side(cell: tuple[str, str]) -> pd.DataFrame:
        part = frame[(frame["model"] == cell[0]) & (frame["strategy"] == cell[1])].copy()
        part["case_id"] = part["question_id"]
        part["model"] = f"{new[0]} vs {old[0]}"
        part["strategy"] = f"{new[1]} vs {old[1]}"
        return part

    label = f"{the_run.run_id}: {{}} · {{}}"
    return _pair(side(new), side(old), label.format(*new), label.format(*old), [], threshold,
                 seed, "the two cells share no question")


__all__ = ["CHANGES", "PairedTest", "RunComparison", "compare_cells", "compare_runs",
           "manifest_warnings", "mcnemar"]
