"""A judge against FinanceBench's human labels: how often does our judge's verdict agree with
the paper authors' label (correct / incorrect / refusal) of the same answer?

    rows = judge_paper_answers(source, Judge(RubricJudgeModel()), sink)
    summary, matrix = labels_agreement(rows)

Every labelled answer in `results/*.jsonl` (16 model x mode configurations x 150 questions) is
judged as our judge judges a case: the question, the paper model's answer as the candidate, the
gold answer as the reference (every FinanceBench question is answerable from its filing), no
tool evidence (the paper's models read their context, not our tools). The paper's `refusal`
is our `abstained`. `labels_agreement` gives, per paper configuration and over all, accuracy
(verdict == label), Cohen's kappa with bootstrap intervals, and the confusion matrix
(rows: human label, columns: our verdict). `--batch` judges through the judge model's batch API.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from parquet_agent.bench.paper import load_paper_results
from parquet_agent.judge import Judge, JudgeInput
from parquet_agent.analysis.judge_stats import confusion, pair_agreement
from parquet_agent.judge.batch import judge_in_batches
from parquet_agent.models.batch import FileLedger

HUMAN_TO_VERDICT = {"correct": "correct", "incorrect": "incorrect", "refusal": "abstained"}


class MemorySink:
    """Raw records kept in memory (the offline rubric judge's, which nobody audits here)."""

    def __init__(self) -> None:
        self.records: dict[str, bytes] = {}

    def write(self, name: str, data: bytes) -> str:
        self.records[name] = data
        return f"memory:{name}"


def _gold(source: Path) -> dict[str, str]:
    """question id -> the paper's gold answer (the results files repeat it per row)."""
    import json

    out: dict[str, str] = {}
    for path in sorted((source / "results").glob("*.jsonl")):
        for line in path.open(encoding="utf-8"):
            if line.strip():
                row = json.loads(line)
                out.setdefault(row["financebench_id"], row.get("gold_answer") or "")
    return out


def paper_inputs(source: Path, paper_configs: list[str] | None = None,
                 limit: int | None = None) -> tuple[pd.DataFrame, dict[str, JudgeInput]]:
    """The labelled answers (one row each, keyed by `label`) and the judge input of each."""
    import json

    rows, inputs = [], {}
    questions: dict[str, str] = {}
    for path in sorted((source / "results").glob("*.jsonl")):
        for line in path.open(encoding="utf-8"):
            if line.strip():
                r = json.loads(line)
                questions.setdefault(r["financebench_id"], r.get("question") or "")
    gold = _gold(source)
    paper = load_paper_results(source)
    if paper_configs:
        paper = paper[paper["paper_config"].isin(paper_configs)]
    if limit:
        paper = paper.groupby("paper_config").head(limit)
    for r in paper.itertuples(index=False):
        qid = str(r.question_id)  # the frame's string columns (itertuples types them as Scalar)
        label = f"{qid}__{r.paper_config}/judge"
        inputs[label] = JudgeInput(question=questions[qid],
                                   candidate_answer=str(r.paper_answer) if r.paper_answer else None,
                                   reference_answer=str(gold[qid]), gold_evidence=(),
                                   tool_evidence=(), answerable=True)
        rows.append({"label": label, "question_id": r.question_id,
                     "paper_config": r.paper_config,
                     "human": HUMAN_TO_VERDICT[str(r.paper_label)]})
    return pd.DataFrame(rows), inputs


def judge_paper_answers(source: str | Path, judge: Judge, sink: Any, *,
                        paper_configs: list[str] | None = None, limit: int | None = None,
                        batch_ledger: Path | None = None) -> pd.DataFrame:
    """One row per labelled answer: `human` label, our `verdict` (None: unscored or pending),
    `correctness`, `unscored_reason`. With `batch_ledger`, judged through the batch API."""
    rows, inputs = paper_inputs(Path(source), paper_configs, limit)
    if batch_ledger is not None:
        verdicts, pending = judge_in_batches(judge, inputs, sink, FileLedger(batch_ledger))
    else:
        verdicts = {label: judge.judge(inp, sink=sink, label=label)
                    for label, inp in inputs.items()}
        pending = {}
    rows["verdict"] = [getattr(verdicts.get(x), "verdict", None) for x in rows["label"]]
    rows["correctness"] = [getattr(verdicts.get(x), "correctness", None) for x in rows["label"]]
    rows["unscored_reason"] = [pending.get(x) or getattr(verdicts.get(x), "unscored_reason",
                                                         None) for x in rows["label"]]
    return rows


def labels_agreement(rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per paper configuration and `all`: n, accuracy, kappa with intervals; the confusion
    matrix over all rows: human label x our verdict)."""
    out = []
    groups = [("all", rows)] + list(rows.groupby("paper_config"))
    for name, group in groups:
        frame = group.set_index("label")
        stats = pair_agreement(frame["human"], frame["verdict"])
        out.append({"paper_config": name, "answers": len(group),
                    "unscored": int(group["verdict"].isna().sum()), **{
                        k: stats[k] for k in ("n", "verdict_agreement", "accuracy_low",
                                              "accuracy_high", "kappa", "kappa_low",
                                              "kappa_high")}})
    summary = pd.DataFrame(out).rename(columns={"verdict_agreement": "accuracy"})
    frame = rows.set_index("label")
    matrix = confusion(frame["human"], frame["verdict"])
    matrix.index.name, matrix.columns.name = "human label", "judge verdict"
    return summary, matrix
