"""Preflight against a llama.cpp-class server (issue 25 items 1 and 2): the real CLI in a
subprocess, the official SDK, and a fake speaking llama-cpp-python's bytes and decisions.

Before: the tool probe forced its tool by name, which llama.cpp satisfies by grammar even when
its chat template leaves the tools out of the prompt (a 32-token prompt); preflight passed and
32/32 cases then made 0 tool calls. And the judge was checked with a plain prompt only, so a
judge that could not judge passed too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from parquet_agent.models.fakes.llama_cpp import FUNCTION_CALLING, TEMPLATE, LlamaCpp, \
    llama_cpp_server

KEY = {"LOCAL_KEY": "local-not-a-secret"}
ENTRY = """
provider = "openai"
model = "gpt-4o-mini"
base_url = "{url}/v1"
api_key_env = "LOCAL_KEY"
tool_call_content = ""
max_tokens_field = "max_tokens"
price = "free"
max_attempts = 2
{extra}
"""


def _preflight(tmp_path: Path, url: str, judge_extra: str = "") -> tuple[int, str, dict]:
    path = tmp_path / "local.toml"
    path.write_text('name = "local"\ncorpus = "c"\nquestions = "q.jsonl"\n\n[[models]]\n'
                    'name = "smol"' + ENTRY.format(url=url, extra="")
                    + '\n[judge]\nname = "smol-judge"' + ENTRY.format(url=url, extra=judge_extra))
    proc = subprocess.run([sys.executable, "-m", "parquet_agent", "preflight", str(path),
                           "--raw-dir", str(tmp_path / "raw")], capture_output=True, text=True,
                          env={**os.environ, **KEY}, timeout=300)
    report = json.loads((tmp_path / "raw" / "preflight.json").read_text())
    return proc.returncode, proc.stdout + proc.stderr, {m["role"]: m for m in report["models"]}


def test_a_chat_format_that_leaves_the_tools_out_fails_preflight_and_says_so(tmp_path):
    with llama_cpp_server(LlamaCpp(chat_format=TEMPLATE)) as server:
        code, out, entries = _preflight(tmp_path, server.url)
        probe = [r.json for r in server.model_calls() if (r.json or {}).get("tools")][0]
    assert code == 1, out
    assert probe["tool_choice"] == "auto"  # unforced, as the agent asks
    model = entries["model"]
    assert model["ok"] is False and model["calls_tools"] is False
    facts = model["tool_probe"]
    assert facts["tools_in_prompt"] is False
    assert facts["prompt_tokens_with_tools"] == facts["prompt_tokens_without_tools"]
    assert "left the tools out of the prompt" in out
    assert "chat format" in out and "--chat_format chatml-function-calling" in out


def test_a_chat_format_that_offers_tools_passes_and_the_judge_gets_json_object(tmp_path):
    with llama_cpp_server(LlamaCpp(chat_format=FUNCTION_CALLING)) as server:
        code, out, entries = _preflight(tmp_path, server.url)
    assert code == 0, out
    assert entries["model"]["calls_tools"] is True
    assert entries["model"]["tool_probe"]["arguments"] == {"n": 7}
    judge = entries["judge"]
    assert judge["ok"] and judge["structured_output"] == "json_object"
    assert "Input should be 'text' or 'json_object'" in judge["judge_format"]["tried"][0]["why"]
    assert "judge format: structured output as json_object (json_schema: rejected, HTTP 500" in out


def test_a_judge_that_cannot_judge_fails_preflight(tmp_path):
    with llama_cpp_server(LlamaCpp(chat_format=FUNCTION_CALLING, text="ok")) as server:
        code, out, entries = _preflight(tmp_path, server.url, "structured_output = false")
    assert code == 1
    judge = entries["judge"]
    assert judge["ok"] is False and judge["structured_output"] is None
    assert "cannot judge" in judge["error"] and "stop before their first case" in out
