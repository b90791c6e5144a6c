"""Live provider checks: one cheap call per provider through the real adapters. They need a
key and network, are marked `live`, and skip cleanly without a key."""

from __future__ import annotations

import os

import pytest

from parquet_agent.models import DirectorySink, ModelSpec, build_model
from parquet_agent.models.protocol import GenerationSettings, ModelRequest, UserMessage

LIVE = [
    ("openai", "gpt-4o-mini", "OPENAI_API_KEY", None),
    ("anthropic", "claude-haiku-4-5", "ANTHROPIC_API_KEY", None),
    ("google", "gemini-2.5-flash", "GEMINI_API_KEY", None),
    ("openai", "openai/gpt-4o-mini", "OPENROUTER_API_KEY", "https://openrouter.ai/api/v1"),
]


@pytest.mark.live
@pytest.mark.parametrize("provider, model, key_env, base_url", LIVE)
def test_live_health_call(provider, model, key_env, base_url, tmp_path):
    if not os.environ.get(key_env):
        pytest.skip(f"{key_env} is not set")
    spec = ModelSpec(name="live", provider=provider, model=model, api_key_env=key_env,
                     base_url=base_url, max_attempts=2, timeout_s=60)
    result = build_model(spec).complete(
        ModelRequest(messages=(UserMessage("Reply with the single word: ok"),),
                     settings=GenerationSettings(max_output_tokens=16), purpose="health",
                     label="live"),
        DirectorySink(tmp_path))
    assert result.reply.text
    assert result.attempts[-1].usage.input_tokens
    for p in tmp_path.rglob("*"):
        if p.is_file():
            assert os.environ[key_env].encode() not in p.read_bytes()
