"""How the agent ends a case on what real providers do: blocks, cut-off answers, context
overflow, unparseable tool arguments. Real tools over a real corpus, the official OpenAI SDK
through our adapter to the local fake server."""

from __future__ import annotations

import json

from parquet_agent.agent.loop import TRUNCATED_PROMPT, Agent
from parquet_agent.corpus.questions import load_questions
from parquet_agent.models import DirectorySink
from parquet_agent.models.fakes import FakeReply, FakeToolCall, RawResponse, openai_server
from tests.models.conftest import make_model
from tests.test_agent import corpus, tools  # noqa: F401  (module-scoped fixtures: one sandbox)



def _run(corpus, tools, tmp_path, script):
    question = load_questions(corpus / "questions.jsonl").question("Q001")
    with openai_server(script) as server:
        model = make_model("openai", server)
        outcome = Agent(model, tools).run(question, case_id="Q001__m__sql+stream",
                                          sink=DirectorySink(tmp_path))
        sent = [r.json for r in server.model_calls()]
    return outcome, sent


def test_a_blocked_reply_ends_the_case_with_the_providers_reason(corpus, tools, tmp_path):
    outcome, sent = _run(corpus, tools, tmp_path,
                         [FakeReply(text=None, finish_reason="content_filter")])
    assert outcome.status == "incomplete" and not outcome.retryable
    assert "blocked" in outcome.reason and "content_filter" in outcome.reason
    assert len(sent) == 1  # never retried


def test_a_cut_off_answer_is_asked_for_once_more(corpus, tools, tmp_path):
    """Before: finish_reason "length" was recorded, but the case was complete / "answered"."""
    outcome, sent = _run(corpus, tools, tmp_path, [
        FakeReply(text="Revenue in fiscal 2023 was", finish_reason="length"),
        FakeReply(text="Revenue was $813 million."),
    ])
    assert outcome.status == "complete" and outcome.forced_final
    assert outcome.answer == "Revenue was $813 million."
    assert sent[1]["messages"][-1] == {"role": "user", "content": TRUNCATED_PROMPT}
    assert sent[1]["tool_choice"] == "none"


def test_an_answer_cut_off_twice_is_incomplete(corpus, tools, tmp_path):
    outcome, sent = _run(corpus, tools, tmp_path, [
        FakeReply(text="Revenue in fiscal", finish_reason="length"),
        FakeReply(text="Revenue was", finish_reason="length"),
    ])
    assert outcome.status == "incomplete" and outcome.answer is None
    assert "cut off at the output limit" in outcome.reason and len(sent) == 2


OVERFLOW = (b'{"error": {"message": "This model\'s maximum context length is 2048 tokens. '
            b'However, you requested 2310 tokens (2054 in the messages, 256 in the completion).",'
            b' "type": "invalid_request_error", "param": "messages", '
            b'"code": "context_length_exceeded"}}')


def test_context_overflow_ends_the_case_at_once_as_incomplete(corpus, tools, tmp_path):
    """Before: the case ended `failed` with advice about model ids and base_url."""
    outcome, sent = _run(corpus, tools, tmp_path, [
        FakeReply(tool_calls=(FakeToolCall("sql", {"query": "SELECT 1 AS one"}, id="c1"),)),
        RawResponse(400, OVERFLOW),
    ])
    assert outcome.status == "incomplete" and not outcome.retryable
    assert outcome.reason.startswith("context window exceeded at turn 2 (This model's maximum "
                                     "context length is 2048 tokens. However, you requested 2310")
    assert len(sent) == 2  # not retried
    assert [e.call_id for e in outcome.evidence] == ["c1"]  # the output that was not answered


def test_unparseable_arguments_are_a_tool_error_the_model_reads(corpus, tools, tmp_path):
    """Before: the adapter raised, the case failed, and failed again on every resume."""
    bad = '{"query": "SELECT 1\n FROM t"}'  # a raw newline: invalid control character
    outcome, sent = _run(corpus, tools, tmp_path, [
        FakeReply(tool_calls=(FakeToolCall("sql", bad, id="c1"),)),
        FakeReply(text="I could not run the query."),
    ])
    assert outcome.status == "complete"
    (event,) = outcome.evidence
    assert not event.ok and event.error_kind == "validation"
    tool_message = [m for m in sent[1]["messages"] if m["role"] == "tool"][0]
    assert "Invalid control character" in tool_message["content"]
    # the raw text went back on the wire as the model sent it
    assistant = [m for m in sent[1]["messages"] if m["role"] == "assistant"][0]
    assert assistant["tool_calls"][0]["function"]["arguments"] == bad
    assert json.loads(json.dumps(bad)) == bad
