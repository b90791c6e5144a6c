"""A paid response that reached the raw store but whose turn was not journaled when the run
stopped (kill -9 in that window) is replayed from the raw records on resume, not bought again
(issue 18's gap; the Ray form of the same window is in tests/engine/test_ray_engine.py).

A real `parquet-agent run` process against the fake OpenAI server: the test watches the run's
raw store, stops the process (SIGSTOP) each time an answer's response is durable, and kills it
(SIGKILL) the first time that response is not journaled yet; `--resume` then finishes the run
and the server must not have seen any answer call twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from parquet_agent.explore.runs import RunStore
from parquet_agent.models.fakes import openai_server
from tests.engine.grid import GridScript, harness_answers, write_config
from tests.harness_corpus import make_harness_corpus
from tests.window import check_complete_once, replayed_attempts, stop_in_the_window

REPO = Path(__file__).resolve().parents[1]
ENV = dict(os.environ, FAKE_OPENAI_KEY="sk-test")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_harness_corpus(tmp_path_factory.mktemp("replay") / "corpus")


def test_a_response_recorded_but_not_journaled_is_replayed_on_resume(corpus, tmp_path):
    script = GridScript(harness_answers(corpus), latency_s=0.02)
    run_dir = tmp_path / "runs" / "r"
    with openai_server(script) as server:
        config = write_config(tmp_path / "exp.toml", corpus, tmp_path / "runs", server.url,
                              case_workers=1)
        command = [sys.executable, "-m", "parquet_agent", "run", str(config), "--run-dir",
                   str(run_dir), "--quiet"]
        proc = subprocess.Popen(command, cwd=REPO, env=ENV, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            lost = stop_in_the_window(
                run_dir, lambda: [proc.pid], lambda _: os.kill(proc.pid, signal.SIGKILL),
                lambda: proc.poll() is None, settle_s=0.05)
        finally:
            proc.wait(timeout=120)
        assert lost, "the run finished before a response was caught unjournaled"
        done = subprocess.run([*command, "--resume"], cwd=REPO, env=ENV, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
    assert script.duplicates() == {}, "a paid answer call was made twice"
    with RunStore(run_dir.parent).open(run_dir) as run:
        check_complete_once(run)
        assert [a["response_path"] for a in replayed_attempts(run)] == [lost]
