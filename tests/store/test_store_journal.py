"""Journals: typed events round trip, torn tails are reported and repaired, damage is loud."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap

import pytest

from parquet_agent.store import (
    CaseFinished,
    CaseStarted,
    Journal,
    ModelAttempt,
    ToolCallEvent,
    read_journal,
)
from parquet_agent.tools.result import Timings
from parquet_agent.transcript import SCHEMA_VERSION

from tests.store.store_fixtures import make_attempt


def test_events_round_trip_typed(tmp_path):
    journal = Journal(tmp_path / "journal" / "Q1__m__sql.jsonl")
    attempt = make_attempt()
    journal.append(CaseStarted(case_id="Q1__m__sql", question_id="Q1", model="m", strategy="sql"))
    journal.append(ModelAttempt(label="Q1__m__sql/turn-01", attempt=attempt))
    journal.append(ToolCallEvent(turn=1, call_id="c1", name="sql", arguments={"query": "SELECT 1"},
                                 ok=True, model_text='{"rows":[[1]]}', output={"rows": [[1]]},
                                 timings=Timings(total_ms=3.5)))
    journal.append(CaseFinished(status="complete", answer="42"))
    journal.close()
    read = read_journal(journal.path)
    assert read.torn is None
    assert [e.event for e in read.events] == ["case_started", "model_attempt", "tool_call",
                                              "case_finished"]
    assert [e.seq for e in read.events] == [0, 1, 2, 3]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", e.at) for e in read.events)
    assert read.events[1].payload.attempt == attempt  # typed all the way down
    assert read.events[1].payload.role == "answer"
    assert read.events[2].payload.arguments == {"query": "SELECT 1"}
    assert read.events[2].payload.timings == Timings(total_ms=3.5)
    line = json.loads(journal.path.read_text().splitlines()[0])
    assert line["schema_version"] == SCHEMA_VERSION and len(line["chain"]) == 32
    assert line["event"] == "case_started"
    with pytest.raises(ValueError):
        CaseFinished(status="done")


def test_torn_last_line_is_reported_then_moved_aside(tmp_path):
    path = tmp_path / "c.jsonl"
    journal = Journal(path)
    journal.append(CaseStarted(case_id="c", question_id="Q", model="m", strategy="sql"))
    journal.close()
    with open(path, "ab") as f:
        f.write(b'{"schema_version":1,"event":"model_tu')
    read = read_journal(path)
    assert len(read.events) == 1 and read.torn.startswith('{"schema_version"')
    journal = Journal(path)  # reopening repairs: new events never follow a broken line
    journal.append(CaseFinished(status="failed", reason="x"))
    journal.close()
    read = read_journal(path)
    assert read.torn is None and [e.seq for e in read.events] == [0, 1]
    assert b"model_tu" in (tmp_path / "c.jsonl.torn").read_bytes()


def test_a_damaged_line_mid_file_is_skipped_and_named_the_rest_reads(tmp_path):
    path = tmp_path / "c.jsonl"
    journal = Journal(path)
    for _ in range(3):
        journal.append(CaseStarted(case_id="c", question_id="Q", model="m", strategy="sql"))
    journal.close()
    lines = path.read_bytes().split(b"\n")
    lines[1] = lines[1][:20]
    path.write_bytes(b"\n".join(lines))
    read = read_journal(path)
    assert [e.seq for e in read.events] == [0, 2]
    assert len(read.damaged) == 1 and "line 2" in read.damaged[0]
    again = Journal(path)  # a writer continues after the damage; nothing is rewritten
    again.append(CaseStarted(case_id="c", question_id="Q", model="m", strategy="sql"))
    again.close()
    read = read_journal(path)
    assert [e.seq for e in read.events] == [0, 2, 3] and len(read.damaged) == 1


_APPENDER = textwrap.dedent("""
    import sys
    from parquet_agent.store import Journal, ToolCallEvent
    journal = Journal(sys.argv[1])
    session, i = int(sys.argv[2]), 0
    while True:
        journal.append(ToolCallEvent(turn=i, call_id=f"s{session}", name="sql", arguments={"i": i},
                                     ok=True, model_text="x" * (i * 997 % 20000)))
        print(i, flush=True)
        i += 1
""")


@pytest.mark.timeout(60)
def test_sigkill_mid_append_keeps_every_acknowledged_event(tmp_path):
    path = tmp_path / "journal.jsonl"
    acked: dict[str, list[int]] = {}
    for session, stop_after in enumerate((3, 25, 60)):
        proc = subprocess.Popen([sys.executable, "-c", _APPENDER, str(path), str(session)],
                                stdout=subprocess.PIPE, text=True)
        got = acked[f"s{session}"] = []
        for line in proc.stdout:
            got.append(int(line))
            if len(got) >= stop_after:
                break
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        got += [int(line) for line in proc.stdout if line.strip()]
        proc.stdout.close()
    read = read_journal(path)  # the last kill may have left a torn line: skipped, not an error
    assert [e.seq for e in read.events] == list(range(len(read.events)))
    for session, got in acked.items():
        written = [e.payload.turn for e in read.events if e.payload.call_id == session]
        # in order, no gaps, and everything acknowledged is there (maybe one more, unacknowledged)
        assert written == list(range(len(written)))
        assert len(written) >= len(got) and len(written) - len(got) <= 1


def test_append_many_is_one_durable_write_with_consecutive_seqs(tmp_path):
    journal = Journal(tmp_path / "c.jsonl")
    journal.append(CaseStarted(case_id="c", question_id="Q", model="m", strategy="sql"))
    events = journal.append_many([ModelAttempt("l", make_attempt("l", number=1)),
                                  ModelAttempt("l", make_attempt("l", number=2)),
                                  CaseFinished(status="complete")])
    assert [e.seq for e in events] == [1, 2, 3] and len({e.at for e in events}) == 1
    with pytest.raises(TypeError):
        journal.append_many([{"not": "an event"}])
    journal.close()
    raw = (tmp_path / "c.jsonl").read_bytes()
    (tmp_path / "c.jsonl").write_bytes(raw[:-30])  # a crash mid-way keeps a prefix
    read = read_journal(tmp_path / "c.jsonl")
    assert [e.seq for e in read.events] == [0, 1, 2] and read.torn


def test_one_flipped_bit_in_a_plain_journal_is_repaired_newlines_included(tmp_path):
    """Each line's chain tells which single flip undoes the damage: one bit of every byte of a
    line, its newline turned into another byte (two lines read as one), a byte turned into a
    newline (one line read as two) and the file's last newline (it read as a torn write)."""
    path = tmp_path / "c.jsonl"
    journal = Journal(path)
    for question in ("QJ1", "QJ2", "QJ3"):  # "J" is one bit from a newline
        journal.append(CaseStarted(case_id="c", question_id=question, model="m", strategy="sql"))
    journal.close()
    raw, expected = path.read_bytes(), read_journal(path).events
    second = raw.index(b"\n") + 1
    bits = [8 * byte + byte % 8 for byte in range(second, raw.index(b"\n", second))]
    bits += [8 * at + k for at, byte in enumerate(raw) if byte == 0x0A for k in range(8)]
    edits = [(bit >> 3, raw[bit >> 3] ^ 1 << (bit & 7)) for bit in bits]
    edits += [(at, 0x0A) for at, byte in enumerate(raw) if byte == ord("J")]
    for at, byte in edits:
        damaged = bytearray(raw)
        damaged[at] = byte
        path.write_bytes(bytes(damaged))
        read = read_journal(path)
        assert read.events == expected and read.torn is None, (at, byte, read.damaged)
        assert len(read.damaged) == 1 and "repaired" in read.damaged[0], (at, read.damaged)
    again = Journal(path)  # a writer continues after the repaired line; nothing is cut off
    again.append(CaseStarted(case_id="c", question_id="Q4", model="m", strategy="sql"))
    again.close()
    assert [e.seq for e in read_journal(path).events] == [0, 1, 2, 3]
