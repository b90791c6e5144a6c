"""Replay tier, the two records that did not come out right (issue 25 item 7), served byte for
byte from `fixtures/wire_replay/responses.jsonl` (see its PROVENANCE.md) to the official
google-genai SDK through our adapter and a real agent over real tools.

- `UNEXPECTED_TOOL_CALL`: the model called `list_files`, which the request did not declare.
  Before: a malformed reply, failed after two identical attempts, the case failed. Now the call
  reaches the tools, which answer it as an unknown tool, and the agent goes on (the recorded
  conversation shows the model recovering).
- a prompt blocked by Model Armor (`promptFeedback.blockReason` and its message, no candidate).
  Before: recorded with finish reason None; now the attempt and the case say the block.

And issue 25 item 8: an answer cut off at the output limit and asked for again is labelled as
truncation, not as "tool budget or round limit reached"."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from parquet_agent.agent.loop import Agent
from parquet_agent.corpus.questions import load_questions
from parquet_agent.models import DirectorySink
from parquet_agent.models.fakes import FakeReply, RawResponse, gemini_server, openai_server
from parquet_agent.transcript import ModelAttempt, ToolCallEvent
from tests.models.conftest import make_model
from tests.test_agent import corpus, tools  # noqa: F401  (module-scoped fixtures: one sandbox)

FIXTURES = Path(__file__).parent / "fixtures" / "wire_replay" / "responses.jsonl"
RECORDS = {r["id"].split("__")[-2]: r for r in map(json.loads, FIXTURES.read_text().splitlines())
           if r["id"].endswith(("google_vertex__0", "text_gets_blocked__1"))}
UNDECLARED = RECORDS["test_multimodal_tool_return_matrix_tool_return_content-url-image-google_vertex"]
ARMOR = RECORDS["test_google_model_armor_prompt_template_text_gets_blocked"]


class _Journal:
    """Collects what the agent journals (the transcript's JournalWriter protocol)."""

    def __init__(self) -> None:
        self.events: list = []

    def append(self, payload):
        self.events.append(payload)

    def append_many(self, payloads):
        self.events.extend(payloads)


def _served(record: dict) -> RawResponse:
    return RawResponse(record["status"], record["response_body"].encode(), "application/json")


def _run(corpus, tools, tmp_path, server, provider: str, model_id: str):
    question = load_questions(corpus / "questions.jsonl").question("Q001")
    journal = _Journal()
    with server:
        model = make_model(provider, server, model=model_id)
        outcome = Agent(model, tools).run(question, case_id="Q001__m__sql+stream",
                                          sink=DirectorySink(tmp_path), journal=journal)
        sent = [r.json for r in server.model_calls()]
    return outcome, sent, journal.events


def test_a_call_of_an_undeclared_function_is_an_unknown_tool_error_and_the_agent_goes_on(
        corpus, tools, tmp_path):
    replies = iter([_served(UNDECLARED), FakeReply(text="Revenue was $813 million.")])
    outcome, sent, events = _run(corpus, tools, tmp_path,
                                 gemini_server(lambda req: next(replies)), "google",
                                 "gemini-3-flash-preview")
    assert outcome.status == "complete" and outcome.answer == "Revenue was $813 million."
    assert len(sent) == 2  # no retry of the recorded reply
    (call,) = [e for e in events if isinstance(e, ToolCallEvent)]
    assert call.name == "list_files" and not call.ok and call.error_kind == "unknown_tool"
    first = [e.attempt for e in events if isinstance(e, ModelAttempt)][0]
    assert first.outcome == "ok" and first.finish_reason == "UNEXPECTED_TOOL_CALL"
    assert any("did not declare (list_files)" in n and "undeclared function" in n
               for n in first.notes)
    # the follow-up carries the model's call with its thought signature, and the error
    model_turn, answer = sent[1]["contents"][1], sent[1]["contents"][2]
    recorded = json.loads(UNDECLARED["response_body"])["candidates"][0]["content"]["parts"][0]
    part = model_turn["parts"][0]
    assert part["functionCall"]["name"] == "list_files"
    signature = part.get("thoughtSignature") or part.get("thought_signature")
    # the same bytes (the SDK sends them url-safe base64, as the recorded follow-up shows)
    assert base64.urlsafe_b64decode(signature) == base64.b64decode(recorded["thoughtSignature"])
    response = answer["parts"][0]["functionResponse"]
    assert response["name"] == "list_files" and "unknown_tool" in json.dumps(response)


def test_a_blocked_prompt_records_the_block_reason_and_message(corpus, tools, tmp_path):
    outcome, sent, events = _run(corpus, tools, tmp_path,
                                 gemini_server(lambda req: _served(ARMOR)), "google",
                                 "gemini-2.5-flash")
    message = "The prompt violated Prompt Injection and Jailbreak filters."
    assert outcome.status == "incomplete" and len(sent) == 1
    assert outcome.reason == f"the provider blocked the prompt (MODEL_ARMOR): {message}"
    (attempt,) = [e.attempt for e in events if isinstance(e, ModelAttempt)]
    assert attempt.finish_reason == "MODEL_ARMOR"
    assert f"the provider blocked the prompt (MODEL_ARMOR): {message}" in attempt.notes


def test_an_answer_asked_for_again_after_a_cut_off_says_truncation(corpus, tools, tmp_path):
    outcome, _, _ = _run(corpus, tools, tmp_path, openai_server([
        FakeReply(text="Revenue in fiscal 2023 was", finish_reason="length"),
        FakeReply(text="Revenue was $813 million.")]), "openai", "gpt-4o-mini")
    assert outcome.status == "complete" and outcome.forced_final
    assert "cut off at the output limit" in outcome.reason
    assert "tool budget" not in outcome.reason
