"""Fake provider servers (test doubles that speak HTTP), one wire format per module.

    with openai_server([FakeReply(text="hi")]) as server:
        client = OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)

See `server.py` for scripts and fault injection.
"""

from parquet_agent.models.fakes.batches import FakeBatches
from parquet_agent.models.fakes.anthropic_wire import AnthropicWire, anthropic_server
from parquet_agent.models.fakes.gemini_wire import GeminiWire, gemini_server
from parquet_agent.models.fakes.openai_wire import OpenAIWire, openai_server
from parquet_agent.models.fakes.prompt_cache import PromptCache
from parquet_agent.models.fakes.server import (
    DROP,
    EMPTY,
    MALFORMED,
    FakeReply,
    FakeServer,
    FakeToolCall,
    Fault,
    RawResponse,
    ReceivedRequest,
    echo_key,
    http_error,
    slow,
)

__all__ = [
    "DROP",
    "EMPTY",
    "MALFORMED",
    "AnthropicWire",
    "FakeBatches",
    "FakeReply",
    "FakeServer",
    "FakeToolCall",
    "Fault",
    "GeminiWire",
    "OpenAIWire",
    "PromptCache",
    "RawResponse",
    "ReceivedRequest",
    "anthropic_server",
    "echo_key",
    "gemini_server",
    "http_error",
    "openai_server",
    "slow",
]
