"""Compare a run with the FinanceBench paper's published, human-labelled results.

Contract:
- `load_paper_results(source) -> DataFrame`: every `results/<model>_<mode>.jsonl` of a
  FinanceBench checkout, one row per (configuration, question): `question_id`,
  `paper_config` (the file stem, e.g. `gpt-4-1106-preview_sharedStore`), `paper_model`,
  `paper_mode`, `paper_label` (`correct` | `incorrect` | `refusal`, from the paper's human labels
  "Correct Answer" / "Incorrect Answer" / "Refusal"), `paper_answer`.
- `compare_with_paper(run, source, *, paper_configs=None, correct_at=50) -> DataFrame`: our cases
  (a `Run`, anything with `cases_df()`, or a DataFrame with `question_id, model, strategy,
  status, answer, correctness, citation_support` and, optionally, `verdict`) paired with the
  paper's rows on the same question ids (an inner join: only questions both sides have). Adds
  `our_label` from the judgment's verdict: `correct`, `incorrect`, or `refusal` for `abstained`
  (the paper's word), so our refusals are told apart from our errors as the paper's are;
  `unscored` when the case has no judgment (incomplete, failed, awaiting judgment: never counted
  as wrong or right). Only a judgment without a verdict (judged before judge-v2, or a DataFrame
  without the column) falls back to the score: `correct` when correctness >= `correct_at`, else
  `incorrect`. `label_from` says which (`verdict`, `correctness >= 50`, or None). `agree`: our
  label and the paper's agree on correct vs not correct (refusals are not correct), both scored.
- `comparison_summary(df) -> DataFrame`: per our model x strategy x paper configuration: paired
  questions, our mean correctness and citation support, our correct / incorrect / refusal /
  unscored shares, how many of our labels fell back to the score (`labelled_by_score`), the
  paper's correct / incorrect / refusal shares, and the agreement rate on correctness.
- `comparison_chart(df) -> plotly Figure`: stacked shares of correct / incorrect / refusal or
  unscored for each of our model x strategy series and each paper configuration, on the same
  question ids.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from parquet_agent.errors import UsageError

_LABELS = {"Correct Answer": "correct", "Incorrect Answer": "incorrect", "Refusal": "refusal"}
_CASE_COLUMNS = ("question_id", "model", "strategy", "status", "answer", "correctness",
                 "citation_support")
# our verdicts in the paper's words (`abstained` is what the paper calls a refusal)
_VERDICT_LABELS = {"correct": "correct", "incorrect": "incorrect", "abstained": "refusal"}


def load_paper_results(source: str | Path) -> pd.DataFrame:
    folder = Path(source) / "results"
    files = sorted(folder.glob("*.jsonl"))
    if not files:
        raise UsageError(f"no FinanceBench results in {folder} (expected results/<model>_<mode>"
                         ".jsonl as in the FinanceBench repository)")
    rows = []
    for path in files:
        model, _, mode = path.stem.rpartition("_")
        for n, line in enumerate(path.open(encoding="utf-8"), 1):
            if not line.strip():
                continue
            r = json.loads(line)
            label = _LABELS.get(r.get("label"))
            if label is None:
                raise UsageError(f"{path}:{n}: unknown label {r.get('label')!r}; expected one of "
                                 f"{', '.join(_LABELS)}")
            rows.append({"question_id": r["financebench_id"], "paper_config": path.stem,
                         "paper_model": r.get("model_name") or model,
                         "paper_mode": r.get("eval_mode") or mode, "paper_label": label,
                         "paper_answer": r.get("model_answer")})
    return pd.DataFrame(rows)


def _cases(run) -> pd.DataFrame:
    if isinstance(run, pd.DataFrame):
        cases = run
    elif hasattr(run, "cases_df"):
        cases = run.cases_df()
    else:
        raise UsageError("compare_with_paper needs a Run (or anything with cases_df()) or a "
                         f"DataFrame of cases, not {type(run).__name__}")
    missing = [c for c in _CASE_COLUMNS if c not in cases.columns]
    if missing:
        raise UsageError(f"the cases lack column(s) {', '.join(missing)}")
    cases = cases.loc[:, [*_CASE_COLUMNS, *(["verdict"] if "verdict" in cases.columns else [])]]
    return cases if "verdict" in cases.columns else cases.assign(verdict=None)


def compare_with_paper(run, source: str | Path, *, paper_configs: list[str] | None = None,
                       correct_at: float = 50.0) -> pd.DataFrame:
    cases = _cases(run)
    paper = load_paper_results(source)
    if paper_configs is not None:
        unknown = sorted(set(paper_configs) - set(paper["paper_config"]))
        if unknown:
            raise UsageError(f"unknown paper configuration(s) {', '.join(unknown)}; available: "
                             f"{', '.join(sorted(set(paper['paper_config'])))}")
        paper = paper[paper["paper_config"].isin(paper_configs)]
    df = cases.merge(paper, on="question_id", how="inner")
    _label(df, correct_at)
    scored = df["our_label"] != "unscored"
    ours_ok = df["our_label"] == "correct"
    theirs_ok = df["paper_label"] == "correct"
    df["agree"] = pd.Series(pd.NA, index=df.index, dtype="boolean")
    df.loc[scored, "agree"] = ours_ok[scored] == theirs_ok[scored]
    return df.sort_values(["model", "strategy", "paper_config", "question_id"]).reset_index(
        drop=True)


def _label(df: pd.DataFrame, correct_at: float) -> None:
    """`our_label` and `label_from`: the verdict where the judgment has one, else the score."""
    score = pd.to_numeric(df["correctness"], errors="coerce")
    verdict = df["verdict"].map(_VERDICT_LABELS)
    by_score = verdict.isna() & score.notna()
    df["our_label"] = verdict.fillna("unscored")
    df.loc[by_score & (score >= correct_at), "our_label"] = "correct"
    df.loc[by_score & (score < correct_at), "our_label"] = "incorrect"
    df["label_from"] = None
    df.loc[verdict.notna(), "label_from"] = "verdict"
    df.loc[by_score, "label_from"] = f"correctness >= {correct_at:g}"


def comparison_summary(df: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (model, strategy, config), g in df.groupby(["model", "strategy", "paper_config"],
                                                    sort=True):
        n = len(g)
        ours = g["our_label"].value_counts()
        paper = g["paper_label"].value_counts()
        agree = g["agree"].dropna()
        rows.append({
            "model": model, "strategy": strategy, "paper_config": config, "questions": n,
            "correctness": pd.to_numeric(g["correctness"], errors="coerce").mean(),
            "citation_support": pd.to_numeric(g["citation_support"], errors="coerce").mean(),
            "our_correct": ours.get("correct", 0) / n,
            "our_incorrect": ours.get("incorrect", 0) / n,
            "our_refusal": ours.get("refusal", 0) / n,
            "our_unscored": ours.get("unscored", 0) / n,
            "labelled_by_score": int((g["label_from"].fillna("").str.startswith(
                "correctness")).sum()),
            "paper_correct": paper.get("correct", 0) / n,
            "paper_incorrect": paper.get("incorrect", 0) / n,
            "paper_refusal": paper.get("refusal", 0) / n,
            "agreement": float(agree.mean()) if len(agree) else float("nan"),
        })
    return pd.DataFrame(rows)


def comparison_chart(df: pd.DataFrame):
    """Stacked bars: one per our model x strategy and per paper configuration."""
    import plotly.graph_objects as go

    series: dict[str, pd.Series] = {}
    for (model, strategy), g in df.drop_duplicates(["model", "strategy", "question_id"]).groupby(
            ["model", "strategy"], sort=True):
        series[f"ours: {model} / {strategy}"] = g["our_label"].value_counts(normalize=True)
    for config, g in df.drop_duplicates(["paper_config", "question_id"]).groupby(
            "paper_config", sort=True):
        series[f"paper: {config}"] = g["paper_label"].value_counts(normalize=True)
    names = list(series)
    colors = {"correct": "#2e7d32", "incorrect": "#c62828", "refusal": "#9e9e9e",
              "unscored": "#bdbdbd"}
    fig = go.Figure()
    for label in ("correct", "incorrect", "refusal", "unscored"):
        values = [float(series[n].get(label, 0.0)) for n in names]
        if any(values):
            fig.add_bar(name=label, x=names, y=values, marker_color=colors[label])
    n_questions = df["question_id"].nunique()
    fig.update_layout(barmode="stack", yaxis_tickformat=".0%", yaxis_title="share of questions",
                      title=f"FinanceBench: our runs vs the paper's human labels "
                      f"({n_questions} shared question ids)")
    return fig
