"""A judge against FinanceBench's human labels (issue 16 part 2): the offline rubric's agreement,
and the same command with an LLM judge (the fake OpenAI server) sent through the batch API."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


from parquet_agent.bench.judge_labels import (MemorySink, judge_paper_answers,
                                              labels_agreement)
from parquet_agent.judge import Judge, RubricJudgeModel
from parquet_agent.models.fakes import FakeBatches, FakeReply, openai_server
from tests.fake_judge import JUDGE_KEY_ENV, judge_config
from tests.realdata import needs_realdata, realdata

SOURCE = realdata("financebench")
pytestmark = needs_realdata("financebench/results")
REPO = Path(__file__).resolve().parents[2]


def test_the_rubric_judge_agrees_with_the_human_labels_well_above_chance():
    rows = judge_paper_answers(SOURCE, Judge(RubricJudgeModel()), MemorySink(),
                               paper_configs=["gpt-4_sharedStore", "gpt-4_closedBook"])
    summary, matrix = labels_agreement(rows)
    everything = summary.set_index("paper_config").loc["all"]
    assert everything["answers"] == 300 and everything["unscored"] == 0
    assert everything["accuracy"] > 0.7 and everything["kappa_low"] > 0.4
    assert int(matrix.to_numpy().sum()) == 300
    # closed book is almost all refusals, and the rubric calls them abstentions
    assert matrix.loc["abstained", "abstained"] >= 200


def test_an_llm_judge_through_the_batch_api_from_the_command_line(tmp_path):
    judgment = {"rationale": "r", "verdict": "abstained", "correctness": 0,
                "citation_support": 0}
    batches = FakeBatches(lambda custom_id, body: FakeReply(text=json.dumps(judgment)))
    with openai_server([], batches=batches) as server:
        config = judge_config(tmp_path, server.url)
        out = tmp_path / "fb"
        proc = subprocess.run(
            [sys.executable, "-m", "parquet_agent", "bench", "financebench-judge", "--source",
             str(SOURCE), "--judge", str(config), "--batch", "--paper-config",
             "gpt-4_closedBook", "--limit", "10", "--out", str(out)],
            cwd=REPO, capture_output=True, text=True, timeout=120,
            env={**JUDGE_KEY_ENV, "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert batches.created == 1 and len(next(iter(batches.batches.values())).items) == 10
    assert "gpt-4_closedBook" in proc.stdout
    rows = (out / "judgments.csv").read_text().splitlines()
    assert len(rows) == 11 and all(",abstained," in r for r in rows[1:])
    assert list(out.rglob("input.jsonl")) and (out / "batches.jsonl").exists()
