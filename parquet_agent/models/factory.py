"""`build_model(spec, env=...)`: the model for one config entry, with its recording transport.

For `openai`, `anthropic` and `google` it reads the key from `env[spec.api_key_env]` (default
`os.environ`) once, builds the official SDK client with its own retries off and an
`httpx2.Client` whose transport is a `RecordingTransport` that knows the key (to keep it off
disk), and wraps the client in the adapter. `scripted` and `baseline` need no network.
A missing key is a `ConfigError` that names the variable.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Mapping, Sequence

import httpx2

from parquet_agent.errors import ConfigError
from parquet_agent.models.prices import declared_price, table_applies
from parquet_agent.models.protocol import GenerationSettings, Model
from parquet_agent.models.retry import RetryPolicy
from parquet_agent.models.spec import ModelSpec
from parquet_agent.models.transport import RecordingTransport


def known_keys(specs: Sequence[ModelSpec], env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Every API key these entries name that is set: what each recorder must keep off disk."""
    env = os.environ if env is None else env
    return tuple(sorted({env[s.api_key_env] for s in specs
                         if s.api_key_env and env.get(s.api_key_env)}))


def build_model(spec: ModelSpec, *, env: Mapping[str, str] | None = None,
                retry: RetryPolicy | None = None, secrets: Sequence[str] = ()) -> Model:
    """`secrets`: every other key the run knows (other models', the judge's), kept off disk by
    this model's recorder too."""
    if spec.provider == "scripted":
        from parquet_agent.models.scripted import ScriptedModel

        replies = json.loads(Path(spec.script).read_text()) if spec.script else []
        return ScriptedModel(replies, name=spec.name, model=spec.model)
    if spec.provider == "baseline":
        from parquet_agent.models.baseline import BaselineModel

        return BaselineModel(name=spec.name, model=spec.model)
    if spec.provider == "rubric":
        raise ConfigError(f"model {spec.name!r}: provider 'rubric' is the judge piece's offline "
                          "judge; build it with parquet_agent.judge, not build_model")
    env = os.environ if env is None else env
    key = env.get(spec.api_key_env or "")
    if not key:
        raise ConfigError(
            f"model {spec.name!r}: environment variable {spec.api_key_env!r} is not set; export "
            "the provider's API key under that name (the config holds only the name)"
        )
    transport = RecordingTransport(httpx2.HTTPTransport(), secrets=[key, *secrets])
    http = httpx2.Client(transport=transport, timeout=httpx2.Timeout(spec.timeout_s, connect=10.0))
    common = dict(
        name=spec.name,
        model=spec.model,
        official_endpoint=spec.base_url is None,
        defaults=GenerationSettings(temperature=spec.temperature,
                                    reasoning_effort=spec.reasoning_effort),
        retry=retry or RetryPolicy(max_attempts=spec.max_attempts),
        price=(declared_price(spec.price, model=spec.model, where=f"model {spec.name!r}")
               if spec.price is not None else None),
        table_priced=table_applies(spec.base_url, spec.price),
        base_url=spec.base_url,
        structured_output=spec.structured_output,
    )
    if spec.provider == "openai":
        import openai

        from parquet_agent.models.openai_chat import OpenAIChatModel

        openai_client = openai.OpenAI(api_key=key, base_url=spec.base_url, max_retries=0,
                                      http_client=http, timeout=spec.timeout_s)
        return OpenAIChatModel(openai_client, transport, provider_pin=spec.provider_pin,
                               fail_on_pin_mismatch=spec.fail_on_pin_mismatch,
                               tool_call_content=spec.tool_call_content,
                               max_tokens_field=spec.max_tokens_field, **common)
    if spec.provider == "anthropic":
        import anthropic

        from parquet_agent.models.anthropic_messages import AnthropicMessagesModel

        anthropic_client = anthropic.Anthropic(api_key=key, base_url=spec.base_url, max_retries=0,
                                               http_client=http, timeout=spec.timeout_s)
        return AnthropicMessagesModel(anthropic_client, transport, cache_prompts=spec.cache_prompts,
                                      **common)
    if spec.provider == "google":
        from google import genai
        from google.genai import types

        from parquet_agent.models.gemini import GeminiModel

        options = types.HttpOptions(base_url=spec.base_url, httpx_client=http,
                                    timeout=int(spec.timeout_s * 1000))
        return GeminiModel(genai.Client(api_key=key, http_options=options), transport, **common)
    raise ConfigError(f"model {spec.name!r}: unknown provider {spec.provider!r}")
