"""A judge with a small context window (a local model) gets its evidence fitted to it, and the
verdict records what was cut (issue 13: every judged case overflowed a 2048-token context)."""

from __future__ import annotations

import json

from parquet_agent.judge import CHARS_PER_TOKEN, JUDGE_OUTPUT_TOKENS, Judge, JudgeInput, fit_evidence
from parquet_agent.models import DirectorySink
from parquet_agent.models.scripted import ScriptedModel


def _input(n_outputs: int = 6, size: int = 5000) -> JudgeInput:
    evidence = tuple({"call_id": f"c{i}", "name": "sql", "arguments": {"query": "SELECT 1"},
                      "output": {"rows": [["x" * size]]}} for i in range(n_outputs))
    return JudgeInput(question="What was revenue?", candidate_answer="$813 million",
                      reference_answer="$813 million", gold_evidence=(), tool_evidence=evidence)


def test_fit_evidence_cuts_the_longest_outputs_to_fit_and_says_what_it_cut():
    inp = _input()
    small = JudgeInput(**{**inp.__dict__, "tool_evidence": inp.tool_evidence[:1]})
    mixed = JudgeInput(**{**inp.__dict__, "tool_evidence": (
        {**inp.tool_evidence[0], "output": {"rows": [["short"]]}},) + inp.tool_evidence[1:]})
    fitted, cut = fit_evidence(mixed, 12_000)
    assert len(fitted.render()) <= 12_000 and cut["fits"]
    assert cut["tool_outputs_cut"] == ["c1", "c2", "c3", "c4", "c5"]  # the short one is whole
    assert fitted.tool_evidence[0] == mixed.tool_evidence[0]
    head = fitted.tool_evidence[1]["output"]
    assert head["cut_to_fit_the_judge_context"] and head["chars"] > len(head["head"]) > 1000
    assert fit_evidence(small, 100_000) == (small, None)


def test_a_judge_with_a_small_context_sends_what_fits_and_records_the_cut(tmp_path):
    reply = json.dumps({"verdict": "correct", "correctness": 100, "citation_support": 0,
                        "rationale": "ok"})
    model = ScriptedModel([reply], name="local-judge")
    verdict = Judge(model, context_tokens=2048).judge(_input(), sink=DirectorySink(tmp_path),
                                                     label="Q1/judge")
    assert verdict.scored
    sent = model.requests[0].messages
    assert sum(len(m.text) for m in sent) <= (2048 - JUDGE_OUTPUT_TOKENS) * CHARS_PER_TOKEN
    cut = verdict.provenance["evidence_cut"]
    assert cut["fits"] and len(cut["tool_outputs_cut"]) == 6 and cut["chars_before"] > 30_000
