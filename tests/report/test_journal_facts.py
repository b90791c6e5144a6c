"""The journal records the facts the exports need (issue 26 item 6), so the exporter does not
parse raw HTTP bodies for them: which tool results each answer request carried (on its attempt's
line), and what the run's judge was given that the journal holds nowhere else (cited spans,
`answerable`, on its judgment). Runs journaled before lack these fields: they are still read
from the raw bodies there (tests/report/test_reexport_fixture.py holds their bytes)."""

from __future__ import annotations

import json

from parquet_agent.experiment.config import ExperimentConfig
from parquet_agent.experiment.run import ExperimentRun
from parquet_agent.experiment.runner import Experiment
from parquet_agent.explore.runs import RunStore
from parquet_agent.judge.rejudge import case_input
from parquet_agent.models.fakes import FakeReply, FakeToolCall, openai_server
from parquet_agent.report.exporter import export_run
from parquet_agent.store.blobs import _Pack
from parquet_agent.store.packformat import expand_numbers
from parquet_agent.transcript import Judgment, ModelAttempt
from parquet_agent.transcript.rawview import (
    parse_record,
    sent_tool_results,
    wire_body,
)
from tests.report.conftest import INCOMPLETE_CASE, fresh_copy
from tests.store.damage import flip


def _record(run_dir, case_id):
    return json.loads((run_dir / "cases" / f"{case_id}.json").read_text(encoding="utf-8"))


def test_each_answer_attempt_records_the_tool_results_its_request_carried(http_run):
    run = ExperimentRun(http_run)
    checked = 0
    for case_id in run.case_ids():
        for event in run.case_events(case_id):
            p = event.payload
            if not isinstance(p, ModelAttempt) or p.role not in ("answer", "final_answer"):
                continue
            path = p.attempt.request_path
            if path is None or path not in run.raw:  # the fixture's never-written request
                continue
            ids, anonymous = sent_tool_results(wire_body(parse_record(path, run.raw.read(path))))
            assert p.tool_results is not None and anonymous == 0, (case_id, path)
            assert set(p.tool_results) == ids, (case_id, path)
            checked += 1
    assert checked >= 10


def _latest_request(run_dir, case_id):
    """The raw name of the case's newest answer request (what the record calls latest)."""
    return _record(run_dir, case_id)["incomplete"]["latest_request_path"]


def _make_unreadable(run_dir, path):
    """Two flipped bits in bytes the request at `path` is made of and that only its case's
    records use: its read fails (one bit would be repaired), no other case is touched."""
    pack_path = run_dir / "raw" / "bodies.pack"
    pack = _Pack(pack_path)
    pack.scan()
    name = path.removeprefix("raw/")  # the pack names records without the folder
    case = name.split("/")[0]
    users: dict[int, set[str]] = {}
    for other, recipe in pack.recipes.items():
        for chunk in expand_numbers(recipe["c"]):
            users.setdefault(chunk, set()).add(other.split("/")[0])
    mine = [c for c in expand_numbers(pack.recipes[name]["c"]) if users[c] == {case}]
    assert mine, "the request has no bytes only its case uses"
    record = pack.records[pack.chunks[mine[-1]][0]]
    middle = record.data_offset + record.data_length // 2
    flip(pack_path, 8 * middle + 4)
    flip(pack_path, 8 * (middle + 1) + 4)


def test_unsent_outputs_come_from_the_journal_when_the_latest_request_is_unreadable(
        http_run, tmp_path):
    run_dir = fresh_copy(http_run, tmp_path)
    export_run(run_dir)
    latest = _latest_request(run_dir, INCOMPLETE_CASE)
    assert _record(run_dir, INCOMPLETE_CASE)["incomplete"]["unsent_tool_outputs"] == ["late-1"]
    _make_unreadable(run_dir, latest)
    export_run(run_dir)  # writes the exports with the damage marked
    record = _record(run_dir, INCOMPLETE_CASE)
    assert record["integrity"]["ok"] is False  # the damage is marked ...
    assert record["latest_request"] is None  # ... the request's bytes are gone ...
    # ... and what it carried is still known: t1 and t2 went out in it, late-1 never did
    assert record["incomplete"]["unsent_tool_outputs"] == ["late-1"]
    assert record["tool_outputs_not_in_latest_request"] == ["late-1"]


def _repeating_ids(request):
    messages = (request.json or {}).get("messages", [])
    if any("single word" in str(m.get("content")) for m in messages):
        return FakeReply(text="OK")
    if not any(m.get("role") == "tool" for m in messages):  # one id for two calls
        return FakeReply(tool_calls=(FakeToolCall("sql", {"query": "SELECT 1 AS one"}, id="dup"),
                                     FakeToolCall("describe_corpus", {}, id="dup")))
    return FakeReply(text="Total revenue was $813 million.")


def test_tool_results_sent_under_a_repeated_provider_id_count_as_sent(corpus, tmp_path):
    """The provider repeated a call id: the agent renames the second call (`call-1`) but sends
    its result under the provider's id. The request body cannot tell the two results apart;
    the journal can (the export used to list `call-1` as never sent)."""
    with openai_server(_repeating_ids) as server:
        config = ExperimentConfig.from_dict({
            "name": "dup", "corpus": str(corpus), "questions": str(corpus / "questions.jsonl"),
            "sample": {"ids": ["Q001"]}, "strategies": ["sql"], "runs_dir": str(tmp_path),
            "models": [{"name": "m", "provider": "openai", "model": "gpt-dup",
                        "api_key_env": "FAKE_KEY", "base_url": f"{server.url}/v1"}],
            "judge": {"provider": "rubric"}})
        run = Experiment(config, env={"FAKE_KEY": "k-test"}, progress=False).run(tmp_path / "r")
    record = _record(run.dir, "Q001__m__sql")
    assert record["status"] == "complete", record["status_reason"]
    assert [t["call_id"] for t in record["tool_calls"]] == ["dup", "call-1"]
    sent = json.loads(json.loads(record["final_request"]["text"])["body"])["messages"]
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == ["dup", "dup"]
    assert record["tool_outputs_not_in_latest_request"] == []


def test_the_run_judge_records_what_a_rejudging_needs(offline_run, tmp_path):
    run_dir = fresh_copy(offline_run, tmp_path)
    run = ExperimentRun(run_dir)
    case_id = run.case_ids()[0]
    judgment = next(e.payload for e in run.case_events(case_id)
                    if isinstance(e.payload, Judgment))
    assert judgment.answerable is not None and judgment.cited_spans is not None
    inp, why, _ = case_input(run, case_id)
    assert inp is not None, why
    assert (list(inp.cited_spans), inp.answerable) == (judgment.cited_spans, judgment.answerable)

    # a later judgment of the run's judge that records other facts: the re-judging takes
    # them from the journal, not from the raw judge request (which says otherwise)
    recorded = [{"file_stem": "x", "start": 0, "end": 4, "text": "from the journal"}]
    with RunStore(run_dir.parent).open(run_dir, writable=True) as writable:
        writable.journal(case_id).append(Judgment(
            judge=judgment.judge, correctness=None, citation_support=None, rationale=None,
            scored=False, request_path=judgment.request_path, cited_spans=recorded,
            answerable=not judgment.answerable))
    inp, _, _ = case_input(ExperimentRun(run_dir), case_id)
    assert inp is not None
    assert (list(inp.cited_spans), inp.answerable) == (recorded, not judgment.answerable)
