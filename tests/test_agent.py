"""The agent loop over real tools (sandboxed workers over a real corpus) and a scripted model."""

from __future__ import annotations

import json

import pytest

from parquet_agent.agent.loop import FINAL_ANSWER_PROMPT, Agent, AgentLimits
from parquet_agent.corpus.questions import load_questions
from parquet_agent.errors import ModelCallError
from parquet_agent.experiment.config import ExperimentConfig
from parquet_agent.experiment.run import create_run
from parquet_agent.explore.runs import RunStore
from parquet_agent.models.protocol import ToolCall, ToolMessage, UserMessage
from parquet_agent.models.scripted import ScriptedModel
from parquet_agent.store import freeze
from parquet_agent.tools import Tools
from tests.harness_corpus import make_harness_corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_harness_corpus(tmp_path_factory.mktemp("harness") / "corpus")


@pytest.fixture(scope="module")
def tools(corpus):
    with Tools.open(corpus, "sql+stream") as t:
        yield t


@pytest.fixture
def run(tmp_path, corpus):
    config = ExperimentConfig.from_dict({
        "name": "t", "corpus": str(corpus), "questions": str(corpus / "questions.jsonl"),
        "strategies": ["sql+stream"], "models": [{"name": "s", "provider": "scripted"}],
        "judge": {"provider": "rubric"}})
    frozen = freeze(config, question_ids=["Q001"], corpus_snapshot=None, prompt_hashes={},
                    sandbox_mode="test")
    r = create_run(RunStore(tmp_path / "runs"), config, frozen, run_id="r1")
    yield r
    r.close()


def _question(corpus):
    return load_questions(corpus / "questions.jsonl").question("Q001")


def _stem(corpus):
    return load_questions(corpus / "questions.jsonl").reference("Q001").gold_evidence[0].file_stem


def test_tool_round_trip_answers_and_journals_every_step(corpus, tools, run):
    stem = _stem(corpus)
    model = ScriptedModel([
        ToolCall("c1", "search_headers", {"query": "Northwind"}),
        ToolCall("c2", "read_filing", {"file_stem": stem, "pattern": "Total revenue"}),
        f"Revenue was $813 million [source: {stem}, chars 10-20]",
    ])
    cid = "Q001__s__sql+stream"
    outcome = Agent(model, tools).run(_question(corpus), case_id=cid, sink=run.raw,
                                      journal=run.journal(cid))

    assert outcome.status == "complete" and outcome.answer.startswith("Revenue was $813")
    counts = outcome.counts
    assert (counts.requested_by_model, counts.processed, counts.dispatched, counts.model_rounds,
            counts.errors, counts.api_attempt_count) == (2, 2, 2, 3, 0, 3)
    # The final request is exactly the accumulated conversation: tool outputs as tool messages.
    final = model.requests[-1].messages
    tool_texts = [m.content for m in final if isinstance(m, ToolMessage)]
    assert tool_texts == [e.model_text for e in outcome.evidence]
    assert "Total revenue for fiscal 2024 was $813 million" in tool_texts[1]
    events = [e.event for e in run.case_events(cid)]
    assert events == ["model_attempt", "model_turn", "tool_call", "model_attempt", "model_turn",
                      "tool_call", "model_attempt", "model_turn"]
    # Every request is on disk, exactly as built.
    turn = run.case_events(cid)[-1].payload
    assert turn.turn == 3 and not turn.final
    assert json.loads(run.read_raw(turn.request_path))["request"]["label"] == turn.label


def test_budget_rejections_then_one_forced_final_request(corpus, tools, run):
    model = ScriptedModel([
        [ToolCall("a", "describe_corpus", {}), ToolCall("b", "describe_corpus", {}),
         ToolCall("c", "sql", {"query": "SELECT 1"})],
        ToolCall("d", "sql", {"query": "SELECT 2"}),
        "I could not find it.",
    ])
    outcome = Agent(model, tools, limits=AgentLimits(max_tool_calls=1)).run(
        _question(corpus), case_id="Q001__s__sql+stream", sink=run.raw)
    c = outcome.counts
    assert (c.requested_by_model, c.processed, c.budgeted_attempts, c.dispatched,
            c.budget_rejected, c.errors) == (4, 4, 1, 1, 3, 3)
    assert [e.error_kind for e in outcome.evidence] == [None, "budget", "budget", "budget"]
    assert outcome.forced_final and outcome.status == "complete"
    last = model.requests[-1]
    assert last.settings.tool_choice == "none"
    assert last.messages[-1] == UserMessage(FINAL_ANSWER_PROMPT)


def test_round_limit_forces_the_final_request(corpus, tools, run):
    same = {"query": "SELECT 'round limit' AS probe"}
    model = ScriptedModel([ToolCall(f"c{i}", "sql", same) for i in range(2)] + [""])
    outcome = Agent(model, tools, limits=AgentLimits(max_rounds=2)).run(
        _question(corpus), case_id="Q001__s__sql+stream", sink=run.raw)
    assert outcome.forced_final and len(model.requests) == 3
    assert outcome.status == "incomplete" and outcome.answer is None  # no invented answer
    assert outcome.counts.cache_hits == 1  # the identical second call came from the cache


def test_model_failure_keeps_attempts_and_fails_the_case(corpus, tools, run):
    def broken(request):
        raise ModelCallError("HTTP 400: bad request", (), retryable=False)

    cid = "Q001__s__sql+stream"
    outcome = Agent(ScriptedModel(broken), tools).run(_question(corpus), case_id=cid,
                                                      sink=run.raw, journal=run.journal(cid))
    assert outcome.status == "failed" and not outcome.retryable
    assert "HTTP 400" in outcome.reason


def test_replay_rebuilds_the_conversation_without_model_or_tool_calls(corpus, tools, run):
    stem = _stem(corpus)
    script = [ToolCall("c1", "read_filing", {"file_stem": stem, "max_chars": 200}),
              f"Done [source: {stem}, chars 0-10]"]
    cid = "Q001__s__sql+stream"
    first = Agent(ScriptedModel(script), tools).run(_question(corpus), case_id=cid,
                                                    sink=run.raw, journal=run.journal(cid))
    replayed = Agent(ScriptedModel([]), tools).run(_question(corpus), case_id=cid, sink=run.raw,
                                                   replay=run.replay(cid))
    assert replayed.answer == first.answer and replayed.messages == first.messages
    assert replayed.counts.model_rounds == first.counts.model_rounds


def test_unknown_tool_and_bad_arguments_are_values_the_model_sees(corpus, tools, run):
    model = ScriptedModel([
        [ToolCall("a", "rm_rf", {}), ToolCall("b", "read_filing", {"file_stem": 42}),
         ToolCall("c", "sql", {}, raw_arguments="{not json")],
        "no answer found",
    ])
    outcome = Agent(model, tools).run(_question(corpus), case_id="Q001__s__sql+stream",
                                      sink=run.raw)
    kinds = [e.error_kind for e in outcome.evidence]
    assert kinds == ["unknown_tool", "validation", "validation"]
    assert outcome.counts.errors == 3 and outcome.status == "complete"


def test_replay_keeps_each_turns_results_when_call_ids_repeat(corpus, tools, run):
    # scripted dict items (and Gemini replies without ids) reuse "call_0" on every turn
    script = [{"tool_calls": [{"name": "sql", "arguments": {"query": "SELECT 'first' AS x"}}]},
              {"tool_calls": [{"name": "sql", "arguments": {"query": "SELECT 'second' AS x"}}]},
              "done"]
    cid = "Q001__s__sql+stream"
    first = Agent(ScriptedModel(script), tools).run(_question(corpus), case_id=cid,
                                                    sink=run.raw, journal=run.journal(cid))
    replayed = Agent(ScriptedModel([]), tools).run(_question(corpus), case_id=cid, sink=run.raw,
                                                   replay=run.replay(cid))
    texts = [m.content for m in replayed.messages if isinstance(m, ToolMessage)]
    assert "first" in texts[0] and "second" in texts[1]
    assert replayed.messages == first.messages


def test_token_cap_stops_the_case_without_another_request(corpus, tools, run):
    from parquet_agent.models.protocol import AssistantMessage, Reply, Usage

    call = ToolCall("c1", "sql", {"query": "SELECT 1"})
    costly = Reply(None, (call,), "tool_calls", "r1", "m", "scripted", Usage(900, 200),
                   AssistantMessage(None, (call,)))
    model = ScriptedModel([costly, "never asked"])
    outcome = Agent(model, tools, limits=AgentLimits(max_tokens=1000)).run(
        _question(corpus), case_id="Q001__s__sql+stream", sink=run.raw)
    assert outcome.status == "incomplete" and "token cap" in outcome.reason
    assert len(model.requests) == 1 and outcome.answer is None


def test_each_attempt_records_its_role_and_the_journal_tallies_as_the_agent(corpus, tools, run):
    from parquet_agent.analysis.fold import fold_case
    from parquet_agent.transcript import ModelAttempt

    model = ScriptedModel([ToolCall("a", "describe_corpus", {}),
                           ToolCall("b", "sql", {"query": "SELECT 2"}), "Not found."])
    cid = "Q001__s__sql+stream"
    outcome = Agent(model, tools, limits=AgentLimits(max_tool_calls=1)).run(
        _question(corpus), case_id=cid, sink=run.raw, journal=run.journal(cid))
    events = run.case_events(cid)
    roles = [(e.payload.label, e.payload.role) for e in events
             if isinstance(e.payload, ModelAttempt)]
    assert [r for _, r in roles] == ["answer", "answer", "final_answer"]
    view = fold_case(cid, events)
    # the final-answer request is found from the records, never from a raw name
    final = [e.payload.attempt for e in events
             if isinstance(e.payload, ModelAttempt) and e.payload.role == "final_answer"]
    assert view.forced_final and view.final_turn.request_path == final[-1].request_path
    assert view.final_turn.label == roles[-1][0]
    # the fold of an unfinished journal counts exactly as the agent did
    assert view.tool_counts_source.startswith("recomputed")
    assert view.tool_counts == outcome.counts.to_dict()
