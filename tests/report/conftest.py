"""Real run folders for the export tests, made once per session.

- `offline_run`: the offline demo grid (baseline model x both strategies, rubric judge) over the
  harness corpus: 6 complete cases, offline raw records.
- `http_run`: two models behind a fake OpenAI server on 127.0.0.1, reached through the official
  SDK and the recording transport (HTTP envelopes on disk), 12 cases:
  Q001 complete with a hostile answer (`</script>`, tags, `javascript:`, RTL override, NUL), the
  right figure from fake-a and a wrong one from fake-b; Q002 incomplete (tool calls, then the
  server keeps failing with 503 until the retries run out); Q003 failed (HTTP 400). Afterwards,
  as a crash would leave it, the journal of Q002__fake-a__sql gets (through the store API) a
  tool output produced after the last request (`late-1`) and an attempt whose raw request never
  reached the store.
- `browser`/`page`: Debian's Chromium through Playwright (skipped when it is not installed).

Tests that export copy the run first (`fresh_copy`), so session fixtures stay as made.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from parquet_agent.cli.experiment import demo_config
from parquet_agent.experiment.runner import Experiment
from parquet_agent.explore.runs import RunStore
from parquet_agent.models.fakes import FakeReply, FakeToolCall, openai_server
from parquet_agent.models.fakes.server import http_error
from parquet_agent.models.protocol import Attempt, Cost, Usage
from parquet_agent.experiment.run import ExperimentRun
from parquet_agent.store import ModelAttempt, ToolCallEvent
from tests.engine.grid import write_config
from tests.harness_corpus import make_harness_corpus

HOSTILE = ("Total revenue was $813 million. </script><script>window.__pwned=1</script>"
           "<img src=x onerror=\"window.__pwned=2\"> <a href=\"javascript:window.__pwned=3\">"
           "click</a> \u202eevil-rtl\u202c NUL:\x00 end \x1b[31mred")
HOSTILE_SQL = "SELECT count(*) AS n FROM filings -- </script><b>bold</b>"
INCOMPLETE_CASE = "Q002__fake-a__sql"
MISSING_REQUEST = "raw/Q002__fake-a__sql/turn-03.attempt-01.request.json"


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    return make_harness_corpus(tmp_path_factory.mktemp("report-corpus") / "corpus")


@pytest.fixture(scope="session")
def offline_run(corpus, tmp_path_factory) -> Path:
    runs = tmp_path_factory.mktemp("offline-runs")
    run = Experiment(demo_config(corpus, runs), progress=False).run(runs / "offline")
    return run.dir


def _script(request):
    body = request.json or {}
    messages = body.get("messages", [])
    user = next((m["content"] for m in messages if m.get("role") == "user"), "")
    has_tools = any(m.get("role") == "tool" for m in messages)
    if "single word" in user:
        return FakeReply(text="OK")
    if "Northwind" in user:
        if not has_tools:
            return FakeReply(tool_calls=(FakeToolCall("sql", {"query": HOSTILE_SQL}, id="c1"),))
        right = body.get("model") == "gpt-fake-a"
        return FakeReply(text=HOSTILE if right else HOSTILE.replace("813", "999"), cost=0.0005)
    if "Apex" in user:
        if not has_tools:
            return FakeReply(tool_calls=(
                FakeToolCall("sql", {"query": "SELECT 1 AS one"}, id="t1"),
                FakeToolCall("describe_corpus", {}, id="t2")), cost=0.0002)
        return http_error(503, retry_after="0")
    return http_error(400)


def _config(folder: Path, corpus: Path, url: str) -> Path:
    return write_config(folder / "http.toml", corpus, folder / "runs", url, name="http", sample="all",
                        case_workers=2)


@pytest.fixture(scope="session")
def http_run(corpus, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("http-runs")
    with openai_server(_script) as server:
        config = _config(folder, corpus, server.url)
        run = Experiment.from_toml(config, env={"FAKE_OPENAI_KEY": "sk-test"},
                                   progress=False).run(folder / "runs" / "http")
    with RunStore(run.dir.parent).open(run.dir, writable=True) as writable:
        journal = writable.journal(INCOMPLETE_CASE)
        journal.append(ToolCallEvent(
            turn=3, call_id="late-1", name="describe_corpus", arguments={}, ok=True,
            model_text='{"tables": []}', output={"tables": []}))
        label = f"{INCOMPLETE_CASE}/turn-03"
        journal.append(ModelAttempt(label=label, attempt=Attempt(
            label=label, number=1, purpose="answer", requested_model="gpt-fake-a",
            requested_provider="openai", actual_model=None, actual_provider=None,
            temperature=None, reasoning_effort=None, started_at="2026-11-30T07:00:00.000000Z",
            ended_at="2026-11-30T07:00:00.000000Z", queue_ms=0.0, duration_ms=0.0,
            http_status=None, outcome="failed", error="killed", response_id=None,
            finish_reason=None, usage=Usage(), cost=Cost(usd=None, source="unknown"),
            request_path=MISSING_REQUEST, response_path=None)))
    return run.dir


def answer_requests(run_dir: Path, case_id: str) -> list[str]:
    """Request paths of a case's answer attempts in journal order, as the records give them
    (tests never spell raw file names out)."""
    attempts = ExperimentRun(run_dir).attempts_df()
    mine = attempts[(attempts["case_id"] == case_id)
                    & attempts["role"].isin(("answer", "final_answer"))]
    return [p for p in mine["request_path"] if isinstance(p, str)]


def fresh_copy(run_dir: Path, tmp_path: Path) -> Path:
    """A copy of a run folder without its exports, to export and compare freely."""
    target = tmp_path / run_dir.name
    shutil.copytree(run_dir, target, ignore=shutil.ignore_patterns(
        "cases", "cases-index.*", "summary.json", "report.html", "case-export-provenance.json",
        ".lock"))
    return target


# -- the browser ------------------------------------------------------------------------------



@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    pg = context.new_page()
    pg.errors = []
    pg.requests = []
    pg.on("console", lambda m: m.type == "error" and pg.errors.append(m.text))
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    pg.on("request", lambda r: pg.requests.append(r.url))
    yield pg
    context.close()
