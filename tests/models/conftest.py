"""Shared helpers: real SDKs, through our adapters, against the local fake servers."""

from __future__ import annotations

from pathlib import Path

import pytest

from parquet_agent.models import DirectorySink, ModelSpec, RetryPolicy, build_model
from parquet_agent.models.fakes import anthropic_server, gemini_server, openai_server
from parquet_agent.models.protocol import ModelRequest, ToolSpec, UserMessage

CANARY = "sk-canary-7f3a9c1e5b2d4f60a8e7c3b1d9f2e4a6"
FAST = RetryPolicy(max_attempts=3, base_delay_s=0.001, max_delay_s=0.01, retry_after_cap_s=0.05)

PROVIDERS = {
    # provider: (server factory, base_url suffix, a priced model id)
    "openai": (openai_server, "/v1", "gpt-4o-mini"),
    "anthropic": (anthropic_server, "", "claude-haiku-4-5"),
    "google": (gemini_server, "", "gemini-2.5-pro"),
}

SQL_TOOL = ToolSpec(
    name="sql",
    description="Run one read-only SELECT.",
    parameters={"type": "object", "properties": {"query": {"type": "string"}},
                "required": ["query"]},
)


def make_model(provider: str, server, *, retry: RetryPolicy = FAST, **spec_fields):
    _, suffix, model = PROVIDERS[provider]
    # a fake stands for the vendor's own endpoint: it bills at list (the price table)
    fields = dict(name=f"{provider}-fake", provider=provider, model=model, api_key_env="FAKE_KEY",
                  base_url=server.url + suffix, timeout_s=5.0, price="list")
    fields.update(spec_fields)
    return build_model(ModelSpec(**fields), env={"FAKE_KEY": CANARY}, retry=retry)


def ask(text: str = "What is 6 x 7?", label: str = "Q001__m__sql/turn-01", tools=(SQL_TOOL,)):
    return ModelRequest(messages=(UserMessage(text),), tools=tools, label=label)


def all_bytes(root: Path) -> list[tuple[Path, bytes]]:
    return [(p, p.read_bytes()) for p in sorted(root.rglob("*")) if p.is_file()]


@pytest.fixture
def sink(tmp_path) -> DirectorySink:
    return DirectorySink(tmp_path)


@pytest.fixture(params=sorted(PROVIDERS))
def provider(request) -> str:
    return request.param


@pytest.fixture
def server_for(provider):
    def make(script):
        return PROVIDERS[provider][0](script)

    return make
