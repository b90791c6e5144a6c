"""ScriptedModel, ModelSpec/config reading, build_model and the preflight command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.models.conftest import CANARY, ask

from parquet_agent.errors import ConfigError, ScriptExhaustedError
from parquet_agent.models import ModelSpec, ScriptedModel, build_model, load_model_specs
from parquet_agent.models.fakes import FakeReply, FakeToolCall, anthropic_server, openai_server
from parquet_agent.models.protocol import AssistantMessage, Reply, ToolCall, Usage


def test_scripted_model_replies_records_and_runs_out(sink, tmp_path):
    call = ToolCall("c1", "sql", {"query": "SELECT 1"})
    model = ScriptedModel([call, "done"], name="s")
    r1 = model.complete(ask(label="A/turn-01"), sink)
    assert r1.reply.tool_calls == (call,) and r1.reply.finish_reason == "tool_calls"
    r2 = model.complete(ask(label="A/turn-02"), sink)
    assert r2.reply.text == "done" and r2.reply.provider == "scripted"
    (a,) = r2.attempts
    assert a.cost.usd == 0.0 and a.cost.note and a.actual_provider == "scripted"
    raw = json.loads((tmp_path / a.request_path).read_text())
    assert raw["schema_version"] == 1 and raw["request"]["label"] == "A/turn-02"
    assert json.loads((tmp_path / a.response_path).read_text())["reply"]["text"] == "done"
    with pytest.raises(ScriptExhaustedError, match="reply #3"):
        model.complete(ask(label="A/turn-03"), sink)
    assert len(model.requests) == 3  # the failing request is recorded too


def test_scripted_model_as_a_function_and_full_replies(sink):
    model = ScriptedModel(lambda req: {"text": f"echo {req.messages[0].text}"})
    assert model.complete(ask(text="hi"), sink).reply.text == "echo hi"
    full = ScriptedModel([Reply("x", (), "stop", "id1", "m", "p", Usage(), AssistantMessage("x"))])
    assert full.complete(ask(), sink).reply.response_id == "id1"


CONFIG = """
name = "smoke"
corpus = "data/sample"
questions = "data/sample/questions.jsonl"
strategies = ["sql"]

[[models]]
name = "gw"
provider = "openai"
model = "gpt-4o-mini"
api_key_env = "PA_TEST_KEY"
base_url = "{openai}"
provider_pin = ["FakeUpstream"]
temperature = 0.0

[[models]]
name = "floor"
provider = "baseline"
model = "baseline-1"

[judge]
provider = "anthropic"
model = "claude-haiku-4-5"
api_key_env = "PA_TEST_KEY"
base_url = "{anthropic}"
"""


def test_load_model_specs_reads_models_and_judge(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(CONFIG.format(openai="http://x/v1", anthropic="http://y"))
    models, judge = load_model_specs(path)
    assert [m.name for m in models] == ["gw", "floor"]
    assert models[0].provider_pin == ("FakeUpstream",) and models[0].temperature == 0.0
    assert judge == ModelSpec(name="judge", provider="anthropic", model="claude-haiku-4-5",
                              api_key_env="PA_TEST_KEY", base_url="http://y")


@pytest.mark.parametrize("table, message", [
    ('name = "a"\nprovider = "openai"\nmodel = "m"\napi_key_env = "K"\ntemprature = 1', "temprature"),
    ('name = "a"\nprovider = "mistral"\nmodel = "m"', "not one of"),
    ('name = "a"\nprovider = "openai"\nmodel = "m"', "api_key_env"),
])
def test_bad_model_tables_are_config_errors(tmp_path, table, message):
    path = tmp_path / "c.toml"
    path.write_text("[[models]]\n" + table + "\n")
    with pytest.raises(ConfigError, match=message):
        load_model_specs(path)


def test_missing_key_names_the_variable():
    spec = ModelSpec(name="a", provider="openai", model="gpt-4o", api_key_env="NOPE_KEY")
    with pytest.raises(ConfigError, match="NOPE_KEY"):
        build_model(spec, env={})


def test_preflight_reports_actual_provider_and_cost(tmp_path):
    """The real CLI, in a subprocess, against fake servers; the key only in the environment."""
    echo = FakeReply(tool_calls=(FakeToolCall("echo_number", {"n": 7}),), provider="FakeUpstream",
                     cost=0.0001)
    judgment = FakeReply(tool_calls=(FakeToolCall("record_judgment", {
        "rationale": "Matches.", "verdict": "correct", "correctness": 100,
        "citation_support": 100}),))
    with openai_server([FakeReply(text="ok", provider="FakeUpstream", cost=0.0001), echo]) as o, \
            anthropic_server([FakeReply(text="ok"), judgment]) as a:
        path = tmp_path / "c.toml"
        path.write_text(CONFIG.format(openai=o.url + "/v1", anthropic=a.url))
        env = {**os.environ, "PA_TEST_KEY": CANARY}
        proc = subprocess.run(
            [sys.executable, "-m", "parquet_agent", "preflight", str(path), "--raw-dir",
             str(tmp_path / "raw")],
            capture_output=True, text=True, env=env, timeout=180)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "actual FakeUpstream gpt-4o-mini" in out and "$0.000100 (gateway" in out
    assert "[judge] judge: anthropic claude-haiku-4-5 -> actual unverified" in out
    assert "[model] floor: baseline" in out
    assert "judge format: structured output as json_schema" in out
    # issue 25: each call's attempt 1 is named by its call, not printed as "attempt 1" twice
    attempt_lines = [line.strip() for line in out.splitlines() if " attempt " in line]
    assert "preflight/gw attempt 1: ok" in out and "preflight/gw-tools attempt 1: ok" in out
    assert len(set(attempt_lines)) == len(attempt_lines) == 5  # floor's offline call too
    report = json.loads((tmp_path / "raw" / "preflight.json").read_text())
    assert report["schema_version"] == 1 and all(m["ok"] for m in report["models"])
    for p in (tmp_path / "raw").rglob("*"):
        if p.is_file():
            assert CANARY.encode() not in p.read_bytes()
    assert CANARY not in out + proc.stderr


def test_preflight_fails_clearly_without_key(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(CONFIG.format(openai="http://127.0.0.1:9/v1", anthropic="http://127.0.0.1:9"))
    env = {k: v for k, v in os.environ.items() if k != "PA_TEST_KEY"}
    proc = subprocess.run([sys.executable, "-m", "parquet_agent", "preflight", str(path)],
                          capture_output=True, text=True, env=env, timeout=180)
    assert proc.returncode == 1
    assert "PA_TEST_KEY" in proc.stdout and "FAILED" in proc.stdout


def test_public_surface_and_cheap_protocol_import():
    import parquet_agent.models as models
    import parquet_agent.models.fakes as fakes

    assert models.__all__ == sorted([
        "BaselineModel", "DirectorySink", "ModelSpec", "PriceTable", "RecordingTransport",
        "RetryPolicy", "ScriptedModel", "build_model", "load_model_specs",
        "model_spec_from_table"])
    for name in models.__all__:
        assert getattr(models, name) is not None
    assert {"FakeReply", "Fault", "openai_server", "anthropic_server", "gemini_server",
            "http_error", "DROP", "MALFORMED", "EMPTY", "slow", "echo_key"} <= set(fakes.__all__)
    # Workers import the protocol records only: that must not drag in httpx2 or an SDK.
    code = ("import sys, parquet_agent.models.protocol; "
            "print(sorted(m for m in ('httpx2', 'openai', 'anthropic', 'google.genai') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_rubric_judge_is_passed_through_and_skipped_by_preflight(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[[models]]\nname = "floor"\nprovider = "baseline"\n\n'
                    '[judge]\nprovider = "rubric"\n')
    models, judge = load_model_specs(path)
    assert judge.provider == "rubric" and judge.name == "judge"
    with pytest.raises(ConfigError, match="judge piece"):
        build_model(judge)
    proc = subprocess.run([sys.executable, "-m", "parquet_agent", "preflight", str(path),
                           "--raw-dir", str(tmp_path / "raw")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "rubric -> skipped" in proc.stdout
    # issue 19: the offline judge made no call, so it is skipped, not "answered"
    assert "1/1 model(s) answered, 1 offline skipped (no call)" in proc.stdout


def test_preflight_writes_into_no_folder_of_someone_else(tmp_path):
    """Issue 27 item 4: a --raw-dir holding other files is refused, untouched; an earlier
    preflight's folder is reused (its raw files are never written over)."""
    path = tmp_path / "c.toml"
    path.write_text('[[models]]\nname = "floor"\nprovider = "baseline"\n'
                    '[judge]\nname = "rubric"\nprovider = "rubric"\n')
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")

    def preflight(raw: Path) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "parquet_agent", "preflight", str(path),
                               "--raw-dir", str(raw)], capture_output=True, text=True, timeout=180)

    refused = preflight(mine)
    assert refused.returncode == 2, refused.stderr
    assert f"--raw-dir {mine} is not empty (notes.txt, ...)" in refused.stderr
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    for _ in range(2):  # new, then an earlier preflight's folder again
        done = preflight(tmp_path / "raw")
        assert done.returncode == 0, done.stderr
