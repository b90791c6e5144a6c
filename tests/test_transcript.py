"""The transcript codec: typed events written and read by one codec (each line chained to the
one before); older journal schema versions read through the versioned reader; unknown or newer
lines are never silently lost."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import ClassVar

import pytest

from parquet_agent.store import Journal, read_journal
from parquet_agent.tools.result import Timings
from parquet_agent.transcript import (
    SCHEMA_VERSION,
    CaseFailed,
    CaseStarted,
    EventFamily,
    JudgeAttempt,
    ModelAttempt,
    ModelTurn,
    ToolCallEvent,
    UnknownEvent,
    decode_line,
    encode_line,
    plain,
)
from parquet_agent.transcript.codec import check_line, unrecorded
from tests.store.store_fixtures import make_attempt, make_reply


def _v1(event: str, seq: int, **data) -> str:
    return json.dumps({"schema_version": 1, "event": event, "at": "2026-11-30T07:00:00Z",
                       "seq": seq, **data})


def test_every_payload_round_trips_through_the_one_codec():
    reply = make_reply(calls=[("sql", {"query": "SELECT 1"})])
    payloads = [
        CaseStarted(case_id="Q1__m__sql", question_id="Q1", model="m", strategy="sql"),
        ModelAttempt("Q1__m__sql/turn-01", make_attempt("Q1__m__sql/turn-01"), role="answer"),
        ModelTurn(turn=1, label="Q1__m__sql/turn-01", request_path="raw/a", response_path="raw/b",
                  reply=reply, cost_usd=0.001),
        ToolCallEvent(turn=1, call_id="call_0", name="sql", arguments={"query": "SELECT 1"},
                      ok=True, model_text="[[1]]", output={"rows": [[1]]},
                      timings=Timings(1.0, 2.0, 3.0)),
        JudgeAttempt("Q1__m__sql/judge", make_attempt("Q1__m__sql/judge", purpose="judge")),
    ]
    prev = ""
    for seq, payload in enumerate(payloads):
        raw, chain = encode_line(payload, at="2026-12-01T00:00:00Z", seq=seq, prev=prev)
        assert raw.endswith(b"\n") and check_line(raw[:-1], prev) == (chain, None)
        line = json.loads(raw)
        assert line["schema_version"] == SCHEMA_VERSION and line["chain"] == chain
        event = decode_line(line)
        assert event.payload == payload and event.seq == seq
        prev = chain
    assert plain(payloads[1].attempt)["notes"] == []  # JSON form: lists, not tuples


def test_version_1_lines_are_upgraded_roles_costs_and_timings(tmp_path):
    attempt = plain(make_attempt("c/turn-02"))
    reply = plain(make_reply(text="best effort")) | {"_cost_usd": 0.002}
    lines = [
        _v1("model_attempt", 0, label="c/turn-01", attempt=plain(make_attempt("c/turn-01"))),
        _v1("model_attempt", 1, label="c/turn-02", attempt=attempt),
        _v1("model_turn", 2, turn=2, label="c/turn-02", request_path="raw/x", response_path=None,
            reply=reply, attempt_count=1, final=True),
        _v1("tool_call", 3, turn=1, call_id="k", name="sql", arguments={}, ok=True,
            model_text="x", timings={}),
        _v1("judge_attempt", 4, label="c/judge", attempt=plain(make_attempt("c/judge",
                                                                           purpose="judge"))),
    ]
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(lines) + "\n")
    events = read_journal(path).events
    assert [e.schema_version for e in events] == [1] * 5
    assert [e.payload.role for e in events if isinstance(e.payload, ModelAttempt)] == [
        "answer", "final_answer", "judge"]  # the final turn's attempts, told by the turn
    turn = events[2].payload
    assert turn.cost_usd == 0.002 and turn.reply == make_reply(text="best effort")
    assert events[3].payload.timings is None  # recorded as {}: not measured, not zeros


def test_unknown_kinds_are_kept_and_newer_versions_named_with_what_to_do(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(_v1("from_the_future", 0, x=1) + "\n" + json.dumps(
        {"schema_version": SCHEMA_VERSION, "event": "case_failed", "at": "t", "seq": 1,
         "error_type": "E", "message": "m"}) + "\n")
    first = read_journal(path).events[0]
    assert first.payload == UnknownEvent("from_the_future", {"x": 1})
    assert first.event == "from_the_future"
    newer = json.dumps({"schema_version": SCHEMA_VERSION + 1, "event": "case_failed",
                        "at": "t", "seq": 0, "error_type": "E", "message": "m"})
    path.write_text(newer + "\n" + _v1("case_failed", 1, error_type="E", message="m") + "\n")
    read = read_journal(path)  # never raises: the line is named, the rest still reads
    assert [e.seq for e in read.events] == [1] and read.torn is None
    assert len(read.damaged) == 1 and "line 1 was written by a newer version" in read.damaged[0]
    assert "upgrade parquet_agent" in read.damaged[0]


def test_a_whole_last_line_that_does_not_decode_is_damage_not_a_torn_write(tmp_path):
    """A torn write is never whole JSON; a last line that parses but is not a valid event was
    edited or damaged, and is named as damage instead of being skipped like a crash leftover."""
    path = tmp_path / "c.jsonl"
    journal = Journal(path)
    journal.append(CaseStarted(case_id="c", question_id="Q", model="m", strategy="sql"))
    journal.close()
    with open(path, "a") as f:
        f.write(_v1("model_attempt", 1, label="l", attempt={"number": 1}) + "\n")
    read = read_journal(path)
    assert read.torn is None and len(read.events) == 1
    assert len(read.damaged) == 1 and "line 2 is not a valid journal event" in read.damaged[0]


def test_payloads_are_typed_records_not_dicts():
    with pytest.raises(TypeError, match="Attempt"):
        ModelAttempt("l", {"number": 1})
    with pytest.raises(TypeError, match="Reply"):
        ModelTurn(turn=1, label="l", request_path=None, response_path=None, reply={"text": "x"})
    with pytest.raises(ValueError, match="role"):
        ModelAttempt("l", make_attempt(), role="other")


def test_a_usage_field_the_journal_did_not_record_stays_absent_not_null(tmp_path):
    """Schema 1 predates `cache_write_tokens`: the attempt reads it as None (figures count
    nothing) but writes back without the key, so "not recorded" stays apart from null."""
    old = plain(make_attempt("c/turn-01"))
    del old["usage"]["cache_write_tokens"]
    path = tmp_path / "c.jsonl"
    path.write_text(_v1("model_attempt", 0, label="c/turn-01", attempt=old) + "\n")
    attempt = read_journal(path).events[0].payload.attempt
    assert attempt.usage.cache_write_tokens is None
    assert unrecorded(attempt.usage) == {"cache_write_tokens"}
    assert plain(attempt)["usage"] == old["usage"]  # as recorded: no key, not a null
    assert attempt == make_attempt("c/turn-01")  # the same value: absence is not compared
    rewritten = json.loads(encode_line(ModelAttempt("c/turn-01", attempt), at="t", seq=0,
                                       prev="")[0])
    assert rewritten["attempt"]["usage"] == old["usage"]
    assert unrecorded(make_attempt("c/turn-01").usage) == frozenset()
    assert "cache_write_tokens" in plain(make_attempt("c/turn-01"))["usage"]  # written now


@dataclass(frozen=True)
class _Noted:  # another piece's payload: the transcript never imports it, the reader passes it
    EVENT: ClassVar[str] = "noted"
    text: str
    tags: list[str] = field(default_factory=list)


def test_a_reader_supplied_event_family_decodes_its_own_typed_payloads(tmp_path):
    family = EventFamily.of("notes", _Noted)
    path = tmp_path / "notes.jsonl"
    journal = Journal(path, family=family)
    journal.append_many([_Noted("a", ["x"]), CaseFailed("E", "m")])
    journal.close()
    typed = read_journal(path, family=family).events
    assert [e.payload for e in typed] == [_Noted("a", ["x"]), UnknownEvent(
        "case_failed", {"error_type": "E", "message": "m", "retryable": False})]
    assert typed[0].event == "noted" and typed[0].data == {"text": "a", "tags": ["x"]}
    assert read_journal(path).events[0].payload == UnknownEvent("noted", {"text": "a",
                                                                          "tags": ["x"]})
    assert read_journal(path).events[1].payload == CaseFailed("E", "m")  # the case family
    with pytest.raises(TypeError, match="not a journal payload type"):
        EventFamily.of("bad", dict)
    with pytest.raises(ValueError, match="named by both"):
        EventFamily.of("bad", _Noted, _Noted)
