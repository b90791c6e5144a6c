"""A real process playing cases into a run folder is killed (SIGKILL) at several points; what it
acknowledged survives, the folder verifies, and a resumed session continues it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from parquet_agent.experiment.run import create_run
from parquet_agent.explore.runs import RunStore
from tests.store.store_fixtures import make_config, make_frozen

_PLAYER = textwrap.dedent("""
    import json, sys
    from dataclasses import asdict
    sys.path.insert(0, sys.argv[3])
    from store_fixtures import conversation_bodies, make_attempt, make_reply
    from parquet_agent.experiment.run import experiment_store
    from parquet_agent.store import (CaseFinished, CaseStarted, ModelAttempt, ModelTurn,
                                     ToolCallEvent)
    run = experiment_store(sys.argv[1]).open(sys.argv[2], writable=True)
    done = run.completed_cases()
    for i in range(10_000):
        case = f"Q{i:04d}__flash__sql"
        if case in done:
            continue
        replay = run.replay(case)
        j = run.journal(case)
        j.append(CaseStarted(case_id=case, question_id=f"Q{i:04d}", model="flash", strategy="sql",
                             session=replay.sessions))
        for turn, body in enumerate(conversation_bodies(i, turns=3), 1):
            if turn <= len(replay.turns):
                continue  # saved: replayed, never asked again
            label = f"{case}/turn-{turn:02d}"
            req = run.raw.write(f"{label}/attempt-1.request.json", body)
            reply = make_reply(calls=[("sql", {"query": "SELECT 1"})])
            resp = run.raw.write(f"{label}/attempt-1.response.json", json.dumps(asdict(reply)).encode())
            j.append(ModelAttempt(label, make_attempt(label)))
            j.append(ModelTurn(turn=turn, label=label, request_path=req, response_path=resp,
                               reply=reply))
            print("turn", case, turn, flush=True)
            j.append(ToolCallEvent(turn=turn, call_id=f"c{turn}", name="sql", arguments={}, ok=True,
                                   model_text="row " * (300 * turn)))
        j.append(CaseFinished(status="complete", answer="42"))
        print("case", case, flush=True)
""")


@pytest.mark.timeout(90)
def test_killed_sessions_resume_without_losing_or_repeating_work(tmp_path):
    store = RunStore(tmp_path / "runs")
    create_run(store, make_config(tmp_path), make_frozen(), run_id="r1").close()
    acked_turns: dict[str, set[int]] = {}
    acked_cases: set[str] = set()
    for stop_after in (4, 11, 23, 7):
        proc = subprocess.Popen([sys.executable, "-c", _PLAYER, str(store.dir), "r1",
                                 os.path.dirname(__file__)], stdout=subprocess.PIPE, text=True)
        lines = 0
        for line in proc.stdout:
            kind, case, *turn = line.split()
            if kind == "turn":
                assert int(turn[0]) not in acked_turns.get(case, set()), "a saved turn was redone"
                acked_turns.setdefault(case, set()).add(int(turn[0]))
            else:
                acked_cases.add(case)
            lines += 1
            if lines >= stop_after:
                break
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        run = store.open("r1")
        report = run.verify()
        assert report.ok, str(report)
        assert acked_cases <= run.completed_cases()
        for case, turns in acked_turns.items():
            saved = {t.turn for t in run.replay(case).turns}
            assert turns <= saved and saved == set(range(1, len(saved) + 1))
    writable = store.open("r1", writable=True)  # repairs any torn tail
    assert not any(".pack" in t for t in writable.verify().torn_lines)
    writable.close()
    cases = store.open("r1").cases_df()
    started = cases[cases["sessions"] > 0]
    assert (started["model_rounds"] >= 1).all() and len(started) >= len(acked_cases)
    json.dumps(store.list().to_dict("records"), default=str)
