"""Per-call overhead of our model layer over the bare SDK, against a zero-latency local server.

For each provider: N sequential calls (a tool call reply, small conversation) through
  (a) the bare official SDK (max_retries=0, plain httpx2 client, nothing recorded), and
  (b) our adapter: recording transport + DirectorySink (fsync per file) + retry loop + pricing,
and (c) our adapter with an in-memory sink (no disk), to separate the cost of durable writes,
interleaved so drift hits all alike. Prints p50/p90 per call, the marginal p50 overhead, and
raw bytes written per call.

    .venv/bin/python bench/bench_models_overhead.py [--calls 200] [--out DIR]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import anthropic
import httpx2
import openai
from google import genai
from google.genai import types

from parquet_agent.models import DirectorySink, ModelSpec, RetryPolicy, build_model
from parquet_agent.models.fakes import (FakeReply, FakeToolCall, anthropic_server, gemini_server,
                                        openai_server)
from parquet_agent.models.protocol import ModelRequest, ToolSpec, UserMessage

KEY = "bench-key-0123456789"
REPLY = FakeReply(tool_calls=(FakeToolCall("sql", {"query": "SELECT 1"}),))
TOOL = ToolSpec("sql", "Run SQL.", {"type": "object", "properties": {"query": {"type": "string"}}})
QUESTION = "What was Northwind's revenue in 2024? " * 20


class MemorySink:
    def write(self, name: str, data: bytes) -> str:
        return name


def bare_call(provider: str, url: str):
    if provider == "openai":
        c = openai.OpenAI(api_key=KEY, base_url=url + "/v1", max_retries=0, http_client=httpx2.Client())
        tools = [{"type": "function", "function": {"name": TOOL.name, "description": TOOL.description,
                                                   "parameters": TOOL.parameters}}]
        return lambda: c.chat.completions.create(model="gpt-4o-mini", tools=tools,
                                                 messages=[{"role": "user", "content": QUESTION}])
    if provider == "anthropic":
        c = anthropic.Anthropic(api_key=KEY, base_url=url, max_retries=0, http_client=httpx2.Client())
        tools = [{"name": TOOL.name, "description": TOOL.description, "input_schema": TOOL.parameters}]
        return lambda: c.messages.create(model="claude-haiku-4-5", max_tokens=4096, tools=tools,
                                         messages=[{"role": "user", "content": QUESTION}])
    c = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=url,
                                                                 httpx_client=httpx2.Client()))
    cfg = types.GenerateContentConfig(tools=[types.Tool(function_declarations=[
        types.FunctionDeclaration(name=TOOL.name, description=TOOL.description,
                                  parameters_json_schema=TOOL.parameters)])])
    fn = lambda: c.models.generate_content(model="gemini-2.5-pro", contents=QUESTION, config=cfg)  # noqa: E731
    fn.client = c  # keep the client alive (it closes its HTTP client when collected)
    return fn


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-models-"))
    servers = {"openai": (openai_server, "/v1", "gpt-4o-mini"),
               "anthropic": (anthropic_server, "", "claude-haiku-4-5"),
               "google": (gemini_server, "", "gemini-2.5-pro")}
    print(f"{'provider':10} {'bare p50':>9} {'ours p50':>9} {'bare p90':>9} {'ours p90':>9} "
          f"{'overhead p50':>13} {'no-disk p50':>12} {'raw bytes/call':>15}")
    for provider, (factory, suffix, model_id) in servers.items():
        with factory(lambda req: REPLY) as server:
            bare = bare_call(provider, server.url)
            ours = build_model(ModelSpec(name="b", provider=provider, model=model_id,
                                         api_key_env="K", base_url=server.url + suffix),
                               env={"K": KEY}, retry=RetryPolicy(max_attempts=1))
            sink = DirectorySink(out / provider)
            t_bare, t_ours, t_mem = [], [], []
            mem = MemorySink()
            for _ in range(5):  # warm up connections and imports
                bare()
                ours.complete(ModelRequest(messages=(UserMessage(QUESTION),), tools=(TOOL,),
                                           label="warm"), sink)
            for i in range(args.calls):
                t0 = time.perf_counter()
                bare()
                t1 = time.perf_counter()
                ours.complete(ModelRequest(messages=(UserMessage(QUESTION),), tools=(TOOL,),
                                           label=f"c{i:05d}"), sink)
                t2 = time.perf_counter()
                ours.complete(ModelRequest(messages=(UserMessage(QUESTION),), tools=(TOOL,),
                                           label=f"m{i:05d}"), mem)
                t3 = time.perf_counter()
                t_bare.append((t1 - t0) * 1000)
                t_ours.append((t2 - t1) * 1000)
                t_mem.append((t3 - t2) * 1000)
        size = sum(p.stat().st_size for p in (out / provider).rglob("c*.json"))
        q = lambda xs, p: statistics.quantiles(xs, n=100)[p - 1]  # noqa: E731
        print(f"{provider:10} {q(t_bare, 50):8.2f}ms {q(t_ours, 50):8.2f}ms {q(t_bare, 90):8.2f}ms "
              f"{q(t_ours, 90):8.2f}ms {q(t_ours, 50) - q(t_bare, 50):12.2f}ms {q(t_mem, 50):10.2f}ms "
              f"{size / args.calls:15.0f}")
    print(f"raw files under {out}")


if __name__ == "__main__":
    main()
