"""Checked-in run folders of every journal schema version stay readable (make_fixture_run.py):
run-v1 was written by version 1, run-v2 by version 2 (chained, untyped lines), run-v3 by
version 3 (typed); the older ones read through the versioned reader. Their raw packs (the pack
format has not changed) repair one flipped bit like new ones."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from parquet_agent.explore.runs import RunStore
from parquet_agent.store import ModelAttempt, read_raw
from tests.store.store_fixtures import conversation_bodies

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize("name", ["run-v1", "run-v2", "run-v3"])
def test_checked_in_run_reads_verifies_and_replays(name):
    run = RunStore(FIXTURES).open(name)  # read-only: the fixture is never written
    report = run.verify()
    assert report.ok and report.bodies_checked == 13, str(report)
    assert run.manifest["schema_version"] == 1 and run.manifest["question_ids"] == ["Q001", "Q002"]
    for i in (1, 2):
        for turn, body in enumerate(conversation_bodies(i, turns=2), 1):
            path = f"raw/Q00{i}__flash__sql/turn-{turn:02d}/attempt-1.request.json"
            assert read_raw(run.dir, path) == body
    assert read_raw(run.dir, "raw/meta/models.json") == b'{"data":[{"id":"m"}]}'
    assert run.completed_cases() == {"Q001__flash__sql"}
    replay = run.replay("Q002__flash__sql")
    assert [t.turn for t in replay.turns] == [1, 2] and not replay.done
    assert replay.tool_results[(2, "c2")].model_text == "rows " * 400  # offloaded, resolved
    cases = run.cases_df().set_index("case_id")
    assert cases.loc["Q001__flash__sql", "correctness"] == 75.0
    assert cases.loc["Q002__flash__sql", "status"] == "incomplete"  # the contract's name
    assert not cases.loc["Q002__flash__sql", "finished"]
    assert RunStore(FIXTURES).list().set_index("run_id").loc[name, "status"] == "partial"
    # every line says its schema version; older attempts get their role from the reader
    events = run.case_events("Q001__flash__sql")
    assert {e.schema_version for e in events} == {int(name[-1])}
    assert {e.payload.role for e in events if isinstance(e.payload, ModelAttempt)} == {"answer"}


@pytest.mark.parametrize("name", ["run-v1", "run-v2", "run-v3"])
def test_a_flipped_bit_in_a_checked_in_pack_is_repaired(name, tmp_path):
    shutil.copytree(FIXTURES / name, tmp_path / name)
    pack = tmp_path / name / "raw" / "bodies.pack"
    data = bytearray(pack.read_bytes())
    data[len(data) // 2] ^= 0x08
    pack.write_bytes(bytes(data))
    run = RunStore(tmp_path).open(name)
    problems = run.verify().problems
    assert len(problems) == 1 and "repaired" in problems[0], problems
    for i in (1, 2):
        for turn, body in enumerate(conversation_bodies(i, turns=2), 1):
            path = f"raw/Q00{i}__flash__sql/turn-{turn:02d}/attempt-1.request.json"
            assert read_raw(run.dir, path) == body
