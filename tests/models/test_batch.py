"""Batch APIs (issue 16 part 3) through the official SDKs against the fake servers, which speak
OpenAI Batch (files + batches, JSONL), Anthropic Message Batches and Gemini batch mode: results
mapped back by custom id, partial failures and expiry left pending with the reason, the input
file in raw/ before upload, every poll and result file recorded, costs at the batch price from
the price table, and a resume that picks up the same batch id instead of paying again."""

from __future__ import annotations

import json

import pytest

from parquet_agent.errors import ConfigError
from parquet_agent.models import DirectorySink, PriceTable
from parquet_agent.models.batch import FileLedger, Polling, batch_api, run_batch
from parquet_agent.models.fakes import FakeBatches, FakeReply
from parquet_agent.models.protocol import ModelRequest, SystemMessage, UserMessage
from parquet_agent.models.scripted import ScriptedModel
from tests.models.conftest import make_model

FAST = Polling(poll_s=0.001, max_poll_s=0.002)


class OrderedSink(DirectorySink):
    """Remembers the order in which raw records were written."""

    def __init__(self, root):
        super().__init__(root)
        self.order: list[str] = []

    def write(self, name, data):
        path = super().write(name, data)
        self.order.append(path)
        return path


def _requests(n: int) -> dict[str, ModelRequest]:
    return {f"Q{i:03d}__m__sql/judge": ModelRequest(
        (SystemMessage("grade"), UserMessage(f"question {i}")), purpose="judge",
        label=f"Q{i:03d}__m__sql/judge") for i in range(1, n + 1)}


def _batches(**kwargs) -> FakeBatches:
    return FakeBatches(lambda custom_id, body: FakeReply(text=f"graded {custom_id}",
                                                         input_tokens=1000, output_tokens=100),
                       **kwargs)


def _run(provider, server, tmp_path, requests, polling=FAST, sink=None):
    sink = sink or OrderedSink(tmp_path)
    model = make_model(provider, server)
    out = run_batch(batch_api(model), requests, sink, FileLedger(tmp_path / "ledger.jsonl"),
                    name="judge", polling=polling)
    return out, sink, model


def test_a_batch_with_a_partial_failure_maps_results_back_at_the_batch_price(
        provider, server_for, tmp_path):
    fb = _batches(polls=2, failed={"r00003"})
    with server_for([]) as server:
        server.batches = fb
        out, sink, model = _run(provider, server, tmp_path, _requests(5))
    assert fb.created == 1 and out.state == "ended" and not out.resumed
    assert sorted(out.results) == [f"Q00{i}__m__sql/judge" for i in (1, 2, 4, 5)]
    assert out.results["Q002__m__sql/judge"].reply.text == "graded r00002"
    assert list(out.pending) == ["Q003__m__sql/judge"]
    assert "injected failure of r00003" in out.pending["Q003__m__sql/judge"]
    # the input file was on disk before anything went out, and is what was sent
    first_http = next(i for i, p in enumerate(sink.order) if p.endswith(".request.json"))
    assert sink.order.index(next(p for p in sink.order if p.endswith("input.jsonl"))) < first_http
    # every status poll the server answered is recorded, and so is every result file
    polls = [p for p in sink.order if "/poll-" in p and p.endswith(".response.json")]
    assert len(polls) == out.polls == 3
    attempt = out.results["Q001__m__sql/judge"].attempts[0]
    assert attempt.request_path.endswith("input.jsonl") and attempt.response_path in sink.order
    assert any("batch" in n and "r00001" in n for n in attempt.notes)
    assert attempt.purpose == "judge" and attempt.label == "Q001__m__sql/judge"
    list_price = PriceTable.load().cost((model.model,), attempt.usage)
    assert attempt.cost.usd == pytest.approx(list_price.usd * 0.5)
    assert "batch price: 0.5 x list" in attempt.cost.note and "retrieved" in attempt.cost.note


def test_each_request_body_is_what_the_adapter_sends_on_its_own(provider, server_for, tmp_path):
    fb = _batches()
    with server_for([]) as server:
        server.batches = fb
        _run(provider, server, tmp_path, _requests(2))
    body = fb.batches[next(iter(fb.batches))].items[0][1]
    if provider == "openai":
        assert body["model"] == "gpt-4o-mini" and body["messages"][0]["role"] == "system"
    elif provider == "anthropic":
        assert body["model"] == "claude-haiku-4-5" and body["system"][0]["text"] == "grade"
    else:
        assert body["systemInstruction"]["parts"][0]["text"] == "grade"
        assert body["contents"][0]["parts"][0]["text"] == "question 1"


def test_an_expired_batch_leaves_the_unprocessed_requests_pending(provider, server_for,
                                                                  tmp_path):
    fb = _batches(expire_after=2)
    with server_for([]) as server:
        server.batches = fb
        out, _, _ = _run(provider, server, tmp_path, _requests(4))
    assert out.state == "expired"
    if provider == "google":  # Gemini: the job expires as a whole, with no output
        assert not out.results and len(out.pending) == 4
    else:
        assert sorted(out.results) == ["Q001__m__sql/judge", "Q002__m__sql/judge"]
        assert sorted(out.pending) == ["Q003__m__sql/judge", "Q004__m__sql/judge"]
    assert all("expired" in why for why in out.pending.values())


def test_a_resume_picks_up_the_same_batch_instead_of_paying_again(provider, server_for,
                                                                  tmp_path):
    fb = _batches(polls=50)
    with server_for([]) as server:
        server.batches = fb
        stopped, _, _ = _run(provider, server, tmp_path, _requests(3),
                             polling=Polling(poll_s=0.001, max_poll_s=0.001, max_wait_s=0.002))
        assert stopped.state == "running" and not stopped.results
        assert all("still running" in why and stopped.batch_id in why
                   for why in stopped.pending.values())
        fb.batches[next(iter(fb.batches))].polls_left = 0  # the provider finishes it
        resumed, _, _ = _run(provider, server, tmp_path, _requests(3))
    assert fb.created == 1 and resumed.resumed and resumed.batch_id == stopped.batch_id
    assert len(resumed.results) == 3 and not resumed.pending
    ledger = [json.loads(x) for x in (tmp_path / "ledger.jsonl").read_text().splitlines()]
    assert [r["event"] for r in ledger] == ["batch_submitted", "batch_ended"]


def test_only_the_requests_left_pending_go_into_a_new_batch(provider, server_for, tmp_path):
    fb = _batches(failed={"r00002"})
    with server_for([]) as server:
        server.batches = fb
        first, _, _ = _run(provider, server, tmp_path, _requests(3))
        fb.failed = frozenset()
        again = {k: v for k, v in _requests(3).items() if k in first.pending}
        second, _, _ = _run(provider, server, tmp_path, again)
    assert fb.created == 2 and list(second.results) == ["Q002__m__sql/judge"]
    assert len(fb.batches[sorted(fb.batches)[-1]].items) == 1


def test_a_model_without_a_batch_api_says_what_to_do():
    with pytest.raises(ConfigError, match="no batch API.*no --batch"):
        batch_api(ScriptedModel([]))


def test_a_batch_that_expired_is_not_polled_again_its_requests_go_into_a_new_one(
        provider, server_for, tmp_path):
    """Before: the same requests after an expiry found the expired batch in the ledger and
    stayed pending for ever (nothing was ever sent again)."""
    fb = _batches(expire_after=0)
    with server_for([]) as server:
        server.batches = fb
        expired, _, _ = _run(provider, server, tmp_path, _requests(2))
        fb.expire_after = None
        again, _, _ = _run(provider, server, tmp_path, _requests(2))
    assert expired.state == "expired" and len(expired.pending) == 2
    assert fb.created == 2 and not again.resumed and again.batch_id != expired.batch_id
    assert len(again.results) == 2 and not again.pending
