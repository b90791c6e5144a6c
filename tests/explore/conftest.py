"""Real run folders for the explorer, chart and comparison tests, made once per session.

- `demo_run`: the offline demo grid (baseline x sql, sql+stream; rubric judge) over the harness
  corpus: 6 complete cases, all correct, exported.
- `scripted_run`: a ScriptedModel (named `baseline` too, so its case ids pair with `demo_run`),
  strategy `sql` only, one case worker so the script is read in grid order. Every case runs the
  same SQL (so Q002 and Q003 are served from the result cache); Q001 answers correctly with a
  hostile tail (`</script>`, an `<img onerror>`, an RTL override), Q002 wrongly, and Q003 runs
  out of script after its tool call: an unfinished (`incomplete`) case with no score.
- `http_run`: a model behind a fake OpenAI server on 127.0.0.1 through the official SDK, with
  gateway-reported costs: health 0.0001 USD; Q001 tool call 0.0002 + answer 0.0005; Q002 a 503
  first (a retry), then the same; Q003 an answer without a reported cost (unknown, not 0).
- `browser`: Debian's Chromium through Playwright (skipped when it is not installed).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from parquet_agent.experiment.runner import Experiment
from parquet_agent.cli.experiment import demo_config
from parquet_agent.experiment.config import ExperimentConfig
from parquet_agent.models.fakes import FakeReply, FakeToolCall, openai_server
from parquet_agent.models.fakes.server import http_error
from tests.harness_corpus import make_harness_corpus

SQL = "SELECT count(*) AS n FROM filings"
HOSTILE_TAIL = "</script><img src=x onerror=alert(1)> \u202eevil"


@pytest.fixture(scope="session")
def corpus(tmp_path_factory) -> Path:
    return make_harness_corpus(tmp_path_factory.mktemp("explore-corpus") / "corpus")


@pytest.fixture(scope="session")
def runs_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("explore-runs")


@pytest.fixture(scope="session")
def demo_run(corpus, runs_dir) -> Path:
    return Experiment(demo_config(corpus, runs_dir), progress=False).run(runs_dir / "demo").dir


@pytest.fixture(scope="session")
def scripted_run(corpus, runs_dir) -> Path:
    tool = {"text": "", "tool_calls": [{"name": "sql", "arguments": {"query": SQL}}]}
    script = ["OK", tool, f"$813 million {HOSTILE_TAIL}", tool, "I do not know", tool]
    path = runs_dir / "script.json"
    path.write_text(json.dumps(script))
    config = ExperimentConfig.from_dict({
        "name": "scripted", "corpus": str(corpus), "questions": str(corpus / "questions.jsonl"),
        "sample": "all", "strategies": ["sql"], "runs_dir": str(runs_dir),
        "models": [{"name": "baseline", "provider": "scripted", "script": str(path)}],
        "judge": {"name": "rubric", "provider": "rubric"}, "limits": {"case_workers": 1}})
    return Experiment(config, progress=False).run(runs_dir / "scripted").dir


def _http_script():
    seen: dict[str, int] = {}
    lock = threading.Lock()

    def script(request):
        body = request.json or {}
        messages = body.get("messages", [])
        user = next((m["content"] for m in messages if m.get("role") == "user"), "")
        has_tools = any(m.get("role") == "tool" for m in messages)
        if "single word" in user:
            return FakeReply(text="OK", cost=0.0001)
        if "Blue Harbor" in user:
            return FakeReply(text="I could not find it.")  # no cost reported: unknown
        with lock:
            seen[user] = seen.get(user, 0) + 1
            first = seen[user] == 1
        if "Apex" in user and first:
            return http_error(503, retry_after="0")
        if not has_tools:
            return FakeReply(tool_calls=(FakeToolCall("sql", {"query": SQL}, id="c1"),),
                             cost=0.0002)
        return FakeReply(text="$813 million", cost=0.0005)

    return script


@pytest.fixture(scope="session")
def http_run(corpus, runs_dir) -> Path:
    with openai_server(_http_script()) as server:
        config = ExperimentConfig.from_dict({
            "name": "http", "corpus": str(corpus), "questions": str(corpus / "questions.jsonl"),
            "sample": "all", "strategies": ["sql"], "runs_dir": str(runs_dir),
            "models": [{"name": "fake", "provider": "openai", "model": "gpt-fake",
                        "api_key_env": "FAKE_OPENAI_KEY", "base_url": f"{server.url}/v1",
                        "max_attempts": 2}],
            "judge": {"name": "rubric", "provider": "rubric"}, "limits": {"case_workers": 1}})
        run = Experiment(config, env={"FAKE_OPENAI_KEY": "sk-test"}, progress=False)\
            .run(runs_dir / "http")
    return run.dir


@pytest.fixture(autouse=True)
def _close_widgets():
    yield
    import ipywidgets

    ipywidgets.Widget.close_all()  # widgets live in a registry: keep tests independent


