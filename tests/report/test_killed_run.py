"""A run killed with SIGKILL while a model request is in flight: the export shows the case as
incomplete, with the request that was written before sending as the latest context actually
sent, and no answer or score."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from parquet_agent.models.fakes import FakeReply, FakeToolCall, openai_server
from parquet_agent.models.fakes.server import slow
from parquet_agent.report.exporter import export_run
from parquet_agent.store import read_raw
from parquet_agent.transcript.rawview import request_name

REPO = Path(__file__).resolve().parents[2]


def _script(request):
    messages = (request.json or {}).get("messages", [])
    if any("single word" in str(m.get("content")) for m in messages):
        return FakeReply(text="OK")
    if not any(m.get("role") == "tool" for m in messages):
        return FakeReply(tool_calls=(FakeToolCall("sql", {"query": "SELECT 1 AS one"}, id="k1"),))
    return slow(3.0)  # the second turn hangs: the run is killed while it waits


def test_a_killed_run_exports_its_in_flight_case_as_incomplete(corpus, tmp_path):
    with openai_server(_script) as server:
        config = tmp_path / "kill.toml"
        config.write_text(f"""
name = "kill"
corpus = "{corpus}"
questions = "{corpus / 'questions.jsonl'}"
sample = {{ ids = ["Q001"] }}
strategies = ["sql"]
runs_dir = "{tmp_path / 'runs'}"

[[models]]
name = "m"
provider = "openai"
model = "gpt-kill"
api_key_env = "FAKE_OPENAI_KEY"
base_url = "{server.url}/v1"

[judge]
provider = "rubric"
""")
        run_dir = tmp_path / "runs" / "killed"
        proc = subprocess.Popen(
            [sys.executable, "-m", "parquet_agent", "run", str(config), "--run-dir", str(run_dir),
             "--quiet"], cwd=REPO, env=dict(os.environ, FAKE_OPENAI_KEY="sk-x"),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 240  # a bound for a stuck run only (CLI start under load)
        while len(server.model_calls()) < 3 and proc.poll() is None:  # health, turn 1, turn 2
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    assert not (run_dir / "report.html").exists()  # the runner never got to export
    export_run(run_dir)
    record = json.loads((run_dir / "cases" / "Q001__m__sql.json").read_text(encoding="utf-8"))
    assert record["status"] == "incomplete" and not record["finished"]
    assert record["status_reason"].startswith("unfinished")
    assert record["final_answer"] is None and record["judgment"] is None
    latest = record["latest_request"]
    # no journal names it: only its raw name says which request it was (rawview.request_name)
    name = request_name(latest["path"])
    assert (name.label, name.turn, name.number) == ("Q001__m__sql/turn-02", 2, 1)
    assert latest["text"].encode() == read_raw(run_dir, latest["path"])
    # the request was on disk before it was sent, but no attempt record was journaled for it
    assert [a["label"] for a in record["attempts"]] == ["Q001__m__sql/turn-01"]
    assert record["incomplete"]["unsent_tool_outputs"] == []  # k1 went out in that request
    assert record["incomplete"]["missing_raw_requests"] == []
    row = json.loads((run_dir / "cases-index.json").read_text())["cases"][0]
    assert row["status"] == "incomplete" and row["correctness"] is None
