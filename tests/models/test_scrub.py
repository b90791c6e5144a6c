"""The credential scrub (issue 24 item 2): every spelling of a key, in the scrubber alone and
through each adapter's recording transport (real SDKs against the local fakes, one server per
adapter for the module)."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from parquet_agent.models import DirectorySink, ModelSpec, build_model
from parquet_agent.models.fakes import FakeReply, FakeToolCall
from parquet_agent.models.scrub import REDACTED, Scrubber
from tests.leaks import escaped, exposures, spellings
from tests.models.conftest import CANARY, PROVIDERS, all_bytes, ask, make_model

OTHER = "sk-other-provider-0123456789abcdef0123"


def _nested(text: str, depth: int) -> str:
    for _ in range(depth):
        text = json.dumps({"s": text})
    return text


SPELLED = {
    **spellings(CANARY),
    "json-escaped-depth-3": _nested(escaped(CANARY), 2),
    "json-escaped-backslash-as-u005c": escaped(CANARY).replace("\\", "\\u005c"),
    "url-encoded-twice": quote(quote(CANARY, safe=""), safe=""),
    "html-references": "".join(f"&#{ord(c)};" for c in CANARY),
    "base64-slash-escaped": json.dumps(spellings(CANARY)["base64-2"]).replace("/", "\\/"),
    "anthropic-blocks": json.dumps({"content": [{"type": "text", "text": "a " + CANARY[:13]},
                                                {"type": "text", "text": CANARY[13:] + " b"}]}),
    "gemini-parts": json.dumps({"parts": [{"text": CANARY[:3]}, {"text": CANARY[3:30]},
                                          {"text": CANARY[30:]}]}, indent=2),
}


@pytest.mark.parametrize("name", sorted(SPELLED))
def test_the_scrubber_replaces_every_spelling(name):
    text = f"before {SPELLED[name]} after"
    clean = Scrubber([CANARY]).text(text)
    assert REDACTED in clean and clean.startswith("before ") and clean.endswith(" after")
    assert exposures(clean.encode(), CANARY) == []
    if name in ("anthropic-blocks", "gemini-parts"):  # the glue is kept: still the same JSON
        json.loads(clean.removeprefix("before ").removesuffix(" after"))


def test_short_values_and_unknown_keys_are_left_alone():
    assert not Scrubber(["short", ""])
    assert Scrubber(["short"]).bytes(b"a short word") == b"a short word"
    assert Scrubber([OTHER]).text(f"x {CANARY} y") == f"x {CANARY} y"


# -- through each adapter ---------------------------------------------------------------------


def _echo(provider):
    def script(request):
        body = request.body.decode()
        name = next((n for n in SPELLED if f"echo {n}!" in body), None)
        if name is None:
            return FakeReply(text="nothing asked")
        key = request.headers.get("authorization", "").removeprefix("Bearer ") or \
            request.headers.get("x-api-key") or request.headers.get("x-goog-api-key")
        value = SPELLED[name].replace(CANARY, key)
        if provider == "openai":  # arguments: a JSON string inside the JSON body
            args = '{"query": "SELECT \'' + value.replace("\\", "\\\\").replace('"', '\\"') + "'\"}"
        else:
            args = {"query": f"SELECT '{value}'"}
        return FakeReply(text=f"the key: {value}", tool_calls=(FakeToolCall("sql", args),))
    return script


@pytest.fixture(scope="module")
def echo_servers():
    servers = {p: PROVIDERS[p][0](_echo(p)).__enter__() for p in PROVIDERS}
    yield servers
    for server in servers.values():
        server.__exit__(None, None, None)


@pytest.mark.parametrize("name", sorted(SPELLED))
@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_key_echoed_in_any_spelling_is_in_no_record_and_no_reply(provider, name, echo_servers,
                                                                    tmp_path):
    model = make_model(provider, echo_servers[provider])
    result = model.complete(ask(text=f"echo {name}!"), DirectorySink(tmp_path))
    reply = result.reply
    seen = json.dumps([reply.text, [c.arguments for c in reply.tool_calls],
                       [c.raw_arguments for c in reply.tool_calls]])
    assert exposures(seen.encode(), CANARY) == []
    for path, data in all_bytes(tmp_path):
        assert exposures(data, CANARY) == [], path


def test_the_assembled_text_of_split_blocks_holds_no_key(echo_servers, tmp_path):
    """Anthropic text blocks, each with a piece of the key: the reply's text joins them."""
    def split(request):
        key = request.headers.get("x-api-key") or \
            request.headers.get("authorization", "").removeprefix("Bearer ")
        return {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                "content": [{"type": "text", "text": key[:9]}, {"type": "text", "text": key[9:]}],
                "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 2}}

    with PROVIDERS["anthropic"][0](split) as server:
        reply = make_model("anthropic", server).complete(ask(), DirectorySink(tmp_path)).reply
    assert CANARY not in (reply.text or "") and REDACTED in (reply.text or "")
    for path, data in all_bytes(tmp_path):
        assert exposures(data, CANARY) == [], path


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_another_providers_key_never_leaves_the_process(provider, echo_servers, tmp_path):
    """A conversation carrying another model's key (encoded) is sent and recorded without it."""
    server = echo_servers[provider]
    _, suffix, model_id = PROVIDERS[provider]
    model = build_model(ModelSpec(name="m", provider=provider, model=model_id, api_key_env="K",
                                  base_url=server.url + suffix, timeout_s=5.0, price="list"),
                        env={"K": CANARY}, secrets=[OTHER])
    before = len(server.requests)
    text = " ".join(spellings(OTHER).values()) + " " + OTHER
    model.complete(ask(text=text), DirectorySink(tmp_path))
    sent = server.requests[before:]
    assert sent and all(exposures(r.body + r.path.encode(), OTHER) == [] for r in sent)
    for path, data in all_bytes(tmp_path):
        assert exposures(data, OTHER) == [], path
    record = json.loads(next(d for p, d in all_bytes(tmp_path) if p.name.endswith(
        "request.json")))
    assert "redacted before the request was sent" in record["note"]
