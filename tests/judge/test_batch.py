"""Batch judging (issue 16 part 3): the judge's requests go through the provider's batch API,
judgments are parsed as one at a time (a malformed one gets its repair request in the next
round's batch), and a request the batch did not answer stays pending with the reason."""

from __future__ import annotations

import json

from parquet_agent.judge import JUDGMENT_TOOL, Judge, JudgeInput
from parquet_agent.judge.batch import judge_in_batches
from parquet_agent.models import DirectorySink
from parquet_agent.models.batch import FileLedger, Polling
from parquet_agent.models.fakes import FakeBatches, FakeReply, FakeToolCall
from tests.models.conftest import make_model

GOOD = {"rationale": "matches", "verdict": "correct", "correctness": 100,
        "citation_support": 50}


def _reply(provider: str, judgment: dict) -> FakeReply:
    if provider == "anthropic":
        return FakeReply(tool_calls=(FakeToolCall(JUDGMENT_TOOL, judgment, id="toolu_b"),))
    return FakeReply(text=json.dumps(judgment))


def test_batch_judging_repairs_in_the_next_round_and_leaves_failures_pending(
        provider, server_for, tmp_path):
    seen: list[str] = []

    def reply(custom_id: str, body: dict) -> FakeReply:
        seen.append(custom_id)
        repaired = "could not be read" in json.dumps(body)
        if custom_id == "r00002" and not repaired:  # the second case's first judgment is bad
            return _reply(provider, {**GOOD, "verdict": "maybe"})
        return _reply(provider, GOOD)

    fb = FakeBatches(reply, failed={"r00003"})
    inputs = {f"Q{i}__m__sql/judge": JudgeInput(f"q{i}", "$5", "$5", (), ()) for i in (1, 2, 3)}
    with server_for([]) as server:
        server.batches = fb
        judge = Judge(make_model(provider, server))
        verdicts, pending = judge_in_batches(judge, inputs, DirectorySink(tmp_path),
                                             FileLedger(tmp_path / "batches.jsonl"),
                                             polling=Polling(poll_s=0.001))
    assert fb.created == 2  # round 1 with all three, round 2 with the one repair
    assert sorted(verdicts) == ["Q1__m__sql/judge", "Q2__m__sql/judge"]
    assert all(v.scored and v.verdict == "correct" for v in verdicts.values())
    repaired = verdicts["Q2__m__sql/judge"]
    assert repaired.provenance["repair_requests"] == 1 and repaired.provenance["batch"]
    assert [a.label for a in repaired.attempts] == ["Q2__m__sql/judge", "Q2__m__sql/judge-02"]
    assert all("batch price" in a.cost.note for a in repaired.attempts)
    assert list(pending) == ["Q3__m__sql/judge"] and "injected failure" in pending[
        "Q3__m__sql/judge"]


def test_a_resume_with_more_requests_polls_the_first_batch_for_its_own(provider, server_for,
                                                                       tmp_path):
    """Requests of a batch still running go back into exactly that batch (the same input file),
    the new ones into a batch of their own: a run resumed after more cases finished never pays
    twice. Before, all of them went into one new batch."""
    fb = FakeBatches(lambda custom_id, body: _reply(provider, GOOD), polls=10_000)
    inputs = {f"Q{i}__m__sql/judge": JudgeInput(f"q{i}", "$5", "$5", (), ()) for i in (1, 2, 3)}
    first_two = {k: v for k, v in inputs.items() if not k.startswith("Q3")}
    ledger = FileLedger(tmp_path / "batches.jsonl")
    with server_for([]) as server:
        server.batches = fb
        judge = Judge(make_model(provider, server))
        verdicts, pending = judge_in_batches(judge, first_two, DirectorySink(tmp_path), ledger,
                                             polling=Polling(poll_s=0.001, max_wait_s=0))
        assert not verdicts and len(pending) == 2 and fb.created == 1
        first = next(iter(fb.batches.values()))
        first.polls_left = 0
        fb.polls = 0
        verdicts, pending = judge_in_batches(judge, inputs, DirectorySink(tmp_path), ledger,
                                             polling=Polling(poll_s=0.001))
    assert sorted(verdicts) == sorted(inputs) and not pending
    assert fb.created == 2 and [len(b.items) for b in fb.batches.values()] == [2, 1]
    assert "sent in" in verdicts["Q1__m__sql/judge"].attempts[0].notes[-1]
    assert first.id in verdicts["Q1__m__sql/judge"].attempts[0].notes[-1]
