"""No API key reaches disk, stdout or another provider in any encoding (issue 24 item 2).

Three fake servers (OpenAI, Anthropic, Gemini wire formats, through the official SDKs), one per
module, echo the key each request carries in every spelling of `tests.leaks` (JSON unicode
escapes inside JSON: tool-call arguments, a judge's and an audit judge's JSON verdict; percent;
base64 at 3 alignments and URL-safe; hex; and, for Anthropic and Gemini, the plain key split
across two text blocks / parts). Per adapter, one experiment (answer model and judge on that
adapter, each with its own key), one re-judging by the CLI, and one audit whose auditor is on
that adapter and whose judge is on the next one. Each role's test looks for its key, decoding
every encoding, in every file of the run folder (raw packs record by record, SQLite rows), the
findings store, the command's stdout, and (the auditor) in what the audit judge's provider got.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from parquet_agent.audit.baseline import BaselineAuditor
from parquet_agent.audit.prompt import unquoted
from parquet_agent.cli import main
from parquet_agent.judge.judgment import INPUT_MARKER
from parquet_agent.models.fakes import (
    FakeReply,
    FakeToolCall,
    anthropic_server,
    gemini_server,
    openai_server,
)
from tests.audit.conftest import write_orders
from tests.harness_corpus import make_harness_corpus
from tests.leaks import escaped, exposures, leak_text, leaks_in

ADAPTERS = {  # provider: (server, model, base_url suffix)
    "openai": (openai_server, "gpt-4o-mini", "/v1"),
    "anthropic": (anthropic_server, "claude-haiku-4-5", ""),
    "google": (gemini_server, "gemini-2.5-pro", ""),
}
ROLES = ("answer", "judge", "rejudge", "auditor", "audit_judge")
NEXT = {"openai": "anthropic", "anthropic": "google", "google": "openai"}


def key_of(provider: str, role: str) -> str:
    return f"sk-{provider[:3]}-{role.replace('_', '')}-7f3a9c1e5b2d4f60a8e7c3b1d9f2e4a6"


def env_name(provider: str, role: str) -> str:
    return f"LEAK_{provider.upper()}_{role.upper()}"


# -- the fakes: each reply echoes the key the request carried --------------------------------


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _split_text(body: dict, key: str) -> dict:
    """The reply's text block (Anthropic) or part (Gemini) cut in two inside the plain key."""
    if "content" in body:
        blocks = body["content"]
    else:
        blocks = body["candidates"][0]["content"]["parts"]
    for i, block in enumerate(blocks):
        text = block.get("text")
        if text and key in text:
            cut = text.rindex(key) + len(key) // 2
            first, second = dict(block, text=text[:cut]), dict(block, text=text[cut:])
            blocks[i:i + 1] = [first, second]
            break
    return body


def _audit_step(body: dict, leak: str) -> FakeReply:
    state_text = [s for s in _strings(body) if s.startswith("State:\n")][-1]
    reasoning, tool, args = BaselineAuditor().decide(unquoted(state_text))
    if tool == "write_finding":
        args = {**args, "rationale": f"{args['rationale']} {leak}"}
    return FakeReply(text=f"{reasoning} {leak}", tool_calls=(FakeToolCall(tool, args, id="c1"),))


def _reply(provider: str, request, key: str):
    body = request.json or {}
    raw = request.body
    leak = leak_text(key)
    if b"single word" in raw:
        return FakeReply(text="OK")
    if INPUT_MARKER.encode() in raw:  # the experiment's judge: a JSON verdict, key escaped
        return FakeReply(text='{"rationale": "' + escaped(key) + " " + leak.replace("\\", "\\\\")
                         + '", "verdict": "incorrect", "correctness": 10, '
                         '"citation_support": 50}')
    if b"State:" in raw and b"tool" in raw:
        return _audit_step(body, leak)
    if b"verdict" in raw:  # an audit gate's judge: a JSON verdict, key escaped
        return FakeReply(text='{"verdict": "PASS", "critique": "' + escaped(key) + " "
                         + leak.replace("\\", "\\\\") + '"}')
    if b"Total revenue" in raw or b"tool_result" in raw or b"functionResponse" in raw \
            or b'"role": "tool"' in raw or b'"role":"tool"' in raw:
        return FakeReply(text=f"Total revenue was $813 million. {leak}")
    arguments = ('{"query": "SELECT \'' + escaped(key) + '\' AS k"}' if provider == "openai"
                 else {"query": f"SELECT '{key}' AS k -- {leak}"})
    return FakeReply(tool_calls=(FakeToolCall("sql", arguments, id="tu_1"),))


def _script(provider: str, wire_holder: list):
    def script(request):
        wire = wire_holder[0].wire
        key = wire.api_key(request)
        reply = _reply(provider, request, key)
        if provider == "openai" or not reply.text or key not in reply.text:
            return reply
        return _split_text(wire.render(reply, request), key)
    return script


@pytest.fixture(scope="module")
def servers():
    holders: dict[str, list] = {}
    running = {}
    for provider, (factory, _, _) in ADAPTERS.items():
        holder: list = []
        server = factory(_script(provider, holder))
        holder.append(server)
        running[provider] = server.__enter__()
        holders[provider] = holder
    yield running
    for server in running.values():
        server.__exit__(None, None, None)


@pytest.fixture(scope="module")
def keys_env():
    env = {env_name(p, r): key_of(p, r) for p in ADAPTERS for r in ROLES}
    with pytest.MonkeyPatch.context() as mp:
        for name, value in env.items():
            mp.setenv(name, value)
        yield env


def _model_toml(provider: str, role: str, url: str) -> str:
    _, model, suffix = ADAPTERS[provider]
    return (f'provider = "{provider}"\nmodel = "{model}"\napi_key_env = "{env_name(provider, role)}"'
            f'\nbase_url = "{url}{suffix}"\nmax_attempts = 1\n')


# -- the runs, one set per adapter -----------------------------------------------------------


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_harness_corpus(tmp_path_factory.mktemp("leak-corpus") / "corpus")


class Outputs:
    def __init__(self):
        self.stdout: dict[str, str] = {}
        self.folders: dict[str, Path] = {}


@pytest.fixture(scope="module")
def experiments(servers, keys_env, corpus, tmp_path_factory):
    """Per adapter: `parquet-agent run` (answer model + judge) then `parquet-agent judge`."""
    import contextlib
    import io

    out = Outputs()
    for provider, server in servers.items():
        folder = tmp_path_factory.mktemp(f"leak-exp-{provider}")
        config = folder / "exp.toml"
        config.write_text(
            f'name = "leak"\ncorpus = "{corpus}"\nquestions = "{corpus / "questions.jsonl"}"\n'
            f'sample = {{ ids = ["Q001"] }}\nstrategies = ["sql"]\nruns_dir = "{folder}"\n'
            f'[[models]]\nname = "m"\n{_model_toml(provider, "answer", server.url)}'
            f'[judge]\n{_model_toml(provider, "judge", server.url)}')
        rejudge = folder / "rejudge.toml"
        rejudge.write_text(
            f'name = "j"\ncorpus = "."\nquestions = "q.jsonl"\n[[models]]\nname = "m"\n'
            f'provider = "baseline"\n[judge]\nname = "again"\n'
            f'{_model_toml(provider, "rejudge", server.url)}')
        run_dir = folder / "run"
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            main(["run", str(config), "--run-dir", str(run_dir)])
            main(["judge", str(run_dir), "--judge", str(rejudge)])
        out.stdout[provider] = buffer.getvalue()
        out.folders[provider] = run_dir
    return out


@pytest.fixture(scope="module")
def audits(servers, keys_env, tmp_path_factory):
    """Per adapter: `parquet-agent audit run` with the auditor on it, the judge on the next."""
    import contextlib
    import io

    out = Outputs()
    for provider, server in servers.items():
        other = NEXT[provider]
        folder = tmp_path_factory.mktemp(f"leak-audit-{provider}")
        dataset = write_orders(folder / "orders")
        config = folder / "audit.toml"
        config.write_text(
            "[audit]\nmax_steps = 20\n[audit.gates]\naction = [\"rules\"]\n"
            "finding = [\"rules\", \"judge\"]\nrun = [\"rules\", \"judge\"]\n"
            f"[audit.model]\n{_model_toml(provider, 'auditor', server.url)}"
            f"[audit.judge]\n{_model_toml(other, 'audit_judge', servers[other].url)}")
        before = len(servers[other].requests)
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            main(["audit", "run", str(dataset), "--config", str(config), "--run-dir",
                  str(folder / "run"), "--quiet"])
        out.stdout[provider] = buffer.getvalue()
        out.folders[provider] = folder  # the run and the findings store beside it
        out.folders[f"{provider}->judge"] = servers[other].requests[before:]  # type: ignore
    return out


# -- the matrix ------------------------------------------------------------------------------


def _where(outputs: Outputs, provider: str, role: str) -> tuple[Path, str]:
    return outputs.folders[provider], outputs.stdout[provider]


@pytest.mark.parametrize("role", ["answer", "judge", "rejudge"])
@pytest.mark.parametrize("provider", sorted(ADAPTERS))
def test_an_experiment_key_echoed_in_any_encoding_reaches_no_file_and_no_stdout(
        provider, role, experiments, servers):
    key = key_of(provider, role)
    echoed = [r for r in servers[provider].requests if r.headers and key in json.dumps(r.headers)]
    assert echoed, f"the {role} never called its server"
    run_dir = experiments.folders[provider]
    assert list((run_dir / "journal").iterdir())
    assert leaks_in(run_dir, key) == []
    assert exposures(experiments.stdout[provider].encode(), key) == []


@pytest.mark.parametrize("role", ["auditor", "audit_judge"])
@pytest.mark.parametrize("provider", sorted(ADAPTERS))
def test_an_audit_key_echoed_in_any_encoding_reaches_no_file_no_stdout_no_other_provider(
        provider, role, audits, servers):
    key = key_of(provider, role)
    # the audit whose auditor is on `provider`, or whose judge is
    audit = provider if role == "auditor" else next(p for p, o in NEXT.items() if o == provider)
    folder = audits.folders[audit]
    report = json.loads((folder / "run" / "findings.json").read_text())
    assert report["findings"] or report.get("dismissed")
    assert leaks_in(folder, key) == []
    assert exposures(audits.stdout[audit].encode(), key) == []
    judge_got = audits.folders[f"{audit}->judge"]
    assert judge_got, "the audit judge was never asked"
    if role == "auditor":  # the other provider never gets the auditor's key
        for request in judge_got:
            assert exposures(request.body + request.path.encode(), key) == []
