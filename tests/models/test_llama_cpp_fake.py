"""The fake llama-cpp-python server answers as the real one did (fixtures/llama_cpp/: real
bodies recorded from llama-cpp-python 0.3.36 serving SmolLM2-135M, see its PROVENANCE.md).

Each recorded request goes to the fake started with the same chat format; the reply must have
the real one's status, the same JSON keys in the same order with values of the same types,
the same id forms, the same error message (the server's install path aside), and the same
decisions: which requests are refused, which become tool calls, and whether the prompt grew
with the tools."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from parquet_agent.models.fakes.llama_cpp import LlamaCpp, llama_cpp_server

FIXTURES = Path(__file__).parent / "fixtures" / "llama_cpp"
EXCHANGES = json.loads((FIXTURES / "exchanges.json").read_text())
APP_PATH = re.compile(r'File \\"[^"]*?/llama_cpp/server/app\.py\\"|File "[^"]*?/llama_cpp/'
                      r'server/app\.py"')
ID_FORMS = {"id": r"chatcmpl-[0-9a-f-]{36}", "call": r"call__0_echo_number_cmpl-[0-9a-f-]{36}"}


def _shape(value):
    if isinstance(value, dict):
        return [(k, _shape(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return type(value).__name__


def _post(url: str, body: dict) -> tuple[int, bytes]:
    request = urllib.request.Request(url + "/v1/chat/completions", json.dumps(body).encode(),
                                     {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _served(name: str) -> tuple[int, bytes]:
    exchange = EXCHANGES[name]
    with llama_cpp_server(LlamaCpp(chat_format=exchange["chat_format"])) as server:
        return _post(server.url, exchange["request"])


@pytest.mark.parametrize("name", sorted(EXCHANGES))
def test_the_fake_answers_as_the_real_server_did(name):
    exchange = EXCHANGES[name]
    real_bytes = (FIXTURES / exchange["response_file"]).read_bytes()
    status, fake_bytes = _served(name)
    assert status == exchange["status"]
    real, fake = json.loads(real_bytes), json.loads(fake_bytes)
    assert _shape(fake) == _shape(real)
    for body, raw in ((real, real_bytes), (fake, fake_bytes)):  # compact JSON, as FastAPI's
        assert raw == json.dumps(body, separators=(",", ":")).encode()
    if status != 200:
        same = [APP_PATH.sub("File <app.py>", json.dumps(b["error"]["message"]))
                for b in (real, fake)]
        assert same[0] == same[1]
        return
    assert re.fullmatch(ID_FORMS["id"], fake["id"])
    real_choice, fake_choice = real["choices"][0], fake["choices"][0]
    calls = real_choice["message"].get("tool_calls")
    if calls:  # a call, its arguments written as that chat format's grammar writes them
        fake_call = fake_choice["message"]["tool_calls"][0]
        assert re.fullmatch(ID_FORMS["call"], fake_call["id"])
        assert fake_call["function"] == calls[0]["function"]
        assert fake_choice["message"]["function_call"] == real_choice["message"]["function_call"]
        assert fake_choice["finish_reason"] == "tool_calls"
        assert (fake_call["id"].endswith(fake["id"][len("chatcmpl-"):])
                == calls[0]["id"].endswith(real["id"][len("chatcmpl-"):]))
    else:
        assert fake_choice["finish_reason"] in ("stop", "length")


def test_the_prompt_grows_with_the_tools_exactly_where_the_real_one_did():
    def tokens(name: str, source: str) -> int:
        if source == "real":
            body = json.loads((FIXTURES / EXCHANGES[name]["response_file"]).read_bytes())
        else:
            body = json.loads(_served(name)[1])
        return body["usage"]["prompt_tokens"]

    for source in ("real", "fake"):
        assert tokens("auto", source) == tokens("notools", source)  # the template drops them
        assert tokens("fc_auto", source) > tokens("fc_notools", source) + 100
