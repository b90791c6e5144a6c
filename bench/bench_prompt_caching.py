"""Benchmark Anthropic prompt caching on a 12-turn agent case: billed input tokens and cost with
and without `cache_control`, against the fake Anthropic server whose usage models the cache
honestly (reads only of prefixes it was asked to cache before; writes counted).

    .venv/bin/python bench/bench_prompt_caching.py [--turns 12] [--model claude-haiku-4-5]

The conversation is what the agent sends on a `sql+stream` case whose every turn calls a tool:
the real system prompt and tool definitions, the question, and per turn the tool call and a
~6 KB tool result (`models/fakes/cache_case.py`). Each setting runs against a fresh server
(an empty cache). Prints one JSON object: per setting the input tokens billed uncached, read
from cache and written to it, output tokens, the cost our ledger recorded, and the cost computed
here from the fake's usage at the price table's rates (they must agree to the cent, and to
1e-9 USD); then the ratios.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from parquet_agent.agent.loop import system_prompt
from parquet_agent.models import DirectorySink, ModelSpec, build_model
from parquet_agent.models.fakes import FakeReply, FakeToolCall, PromptCache, anthropic_server
from parquet_agent.models.fakes.cache_case import run_cached_case
from parquet_agent.models.prices import PriceTable
from parquet_agent.tools.specs import STRATEGIES, ALL_TOOLS, tool_spec


def one_setting(cache_on: bool, turns: int, model_id: str, root: Path) -> dict:
    script = [FakeReply(tool_calls=(FakeToolCall("sql", {"query": f"SELECT {i}"}),),
                        output_tokens=40) for i in range(turns)]
    tools = tuple(tool_spec(ALL_TOOLS[name]) for name in STRATEGIES["sql+stream"])
    with anthropic_server(script, prompt_cache=PromptCache()) as server:
        spec = ModelSpec(name="haiku", provider="anthropic", model=model_id, api_key_env="K",
                         base_url=server.url, cache_prompts=cache_on)
        model = build_model(spec, env={"K": "bench-key-not-secret"})
        attempts = run_cached_case(model, DirectorySink(root / f"cache-{cache_on}"),
                                   system=system_prompt("sql+stream"), tools=tools, turns=turns)
    price = PriceTable.load().lookup(model_id)
    sums = {"uncached": 0, "read": 0, "written": 0, "output": 0}
    for a in attempts:
        u = a.usage
        sums["read"] += u.cached_tokens
        sums["written"] += u.cache_write_tokens
        sums["uncached"] += u.input_tokens - u.cached_tokens - u.cache_write_tokens
        sums["output"] += u.output_tokens
    expected = (sums["uncached"] * price.input + sums["read"] * price.cached_input
                + sums["written"] * price.cache_write + sums["output"] * price.output) / 1e6
    recorded = sum(a.cost.usd for a in attempts)
    return {"turns": len(attempts), "input_tokens": sums["uncached"] + sums["read"]
            + sums["written"], **{f"{k}_tokens": v for k, v in sums.items()},
            "cost_recorded_usd": round(recorded, 6), "cost_from_fake_usage_usd": round(expected, 6),
            "agree_to_1e-9": abs(recorded - expected) < 1e-9}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=12)
    ap.add_argument("--model", default="claude-haiku-4-5")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        on = one_setting(True, args.turns, args.model, Path(tmp))
        off = one_setting(False, args.turns, args.model, Path(tmp))
    uncached_billed = lambda r: r["uncached_tokens"]  # noqa: E731
    out = {
        "model": args.model, "price_table": PriceTable.load().version,
        "caching_on": on, "caching_off": off,
        "input_billed_at_full_rate_ratio_on_off": round(uncached_billed(on) / uncached_billed(off), 4),
        "cost_ratio_on_off": round(on["cost_recorded_usd"] / off["cost_recorded_usd"], 4),
    }
    print(json.dumps(out, indent=1))
    return 0 if on["agree_to_1e-9"] and off["agree_to_1e-9"] else 1


if __name__ == "__main__":
    sys.exit(main())
