"""Benchmark batch judging against one request at a time: cost (from the price table) and wall
time of judging N cases, through our adapters and the official SDKs, against the local fake
servers of all three providers (which speak their batch protocols).

    .venv/bin/python bench/bench_judge_batch.py [--cases 400] [--workers 4] [--poll-s 0.05]

Each case's judge input is realistic in size (question, a cited answer, reference, gold evidence,
three tool outputs of ~2 KB). The fakes bill `len(request body) / 4` input tokens and 120 output
tokens per judgment, the same way on both paths, so the cost ratio is the price table's batch
multiplier applied to the same usage. One at a time: `Judge.judge` per case on `--workers`
threads (a run's case workers), every request and response fsynced to a `DirectorySink`. Batch:
`judge_in_batches` (one input file, an upload/create, polls every `--poll-s` doubling, result
files), also fsynced. The fake ends a batch after one poll: real batches take minutes to hours
(24 h window), so the batch wall time here is our overhead, not the provider's queue. Prints one
JSON object per provider and the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from parquet_agent.judge import JUDGMENT_TOOL, Judge, JudgeInput
from parquet_agent.judge.batch import judge_in_batches
from parquet_agent.models import DirectorySink, ModelSpec, build_model
from parquet_agent.models.batch import FileLedger, Polling
from parquet_agent.models.fakes import (FakeBatches, FakeReply, FakeToolCall, anthropic_server,
                                        gemini_server, openai_server)
from parquet_agent.models.protocol import total_cost

PROVIDERS = {"openai": (openai_server, "/v1", "gpt-4o-mini"),
             "anthropic": (anthropic_server, "", "claude-haiku-4-5"),
             "google": (gemini_server, "", "gemini-2.5-flash")}
JUDGMENT = {"rationale": "The figure matches the reference.", "verdict": "correct",
            "correctness": 100, "citation_support": 80}


def judge_input(i: int) -> JudgeInput:
    table = "\n".join(f"| {i}-{r} | segment {r % 5} | {1000 + 37 * r + i} |" for r in range(60))
    evidence = tuple({"call_id": f"c{k}", "name": "read_filing",
                      "arguments": {"file_stem": f"0000{i:06d}", "start": k * 2000},
                      "output": {"file_stem": f"0000{i:06d}", "start": k * 2000,
                                 "text": table[:2000]}} for k in range(3))
    return JudgeInput(
        question=f"What was Company {i}'s total revenue in fiscal 2024, in millions of dollars?",
        candidate_answer=f"Total revenue was ${800 + i} million [source: 0000{i:06d}, chars "
                         f"120-180], up 4% from the prior year.",
        reference_answer=f"${800 + i} million",
        gold_evidence=({"file_stem": f"0000{i:06d}", "quote": f"Total revenue {800 + i}",
                        "start": 120, "end": 180},),
        tool_evidence=evidence)


def reply_for(provider: str, body_bytes: int) -> FakeReply:
    tokens = dict(input_tokens=max(1, body_bytes // 4), output_tokens=120)
    if provider == "anthropic":
        return FakeReply(tool_calls=(FakeToolCall(JUDGMENT_TOOL, JUDGMENT, id="toolu_j"),),
                         **tokens)
    return FakeReply(text=json.dumps(JUDGMENT), **tokens)


def one_provider(provider: str, cases: int, workers: int, poll_s: float, root: Path) -> dict:
    factory, suffix, model_id = PROVIDERS[provider]
    inputs = {f"Q{i:04d}__m__sql/judge": judge_input(i) for i in range(cases)}
    batches = FakeBatches(lambda cid, body: reply_for(provider, len(json.dumps(body))))
    script = lambda req: reply_for(provider, len(json.dumps(req.json)))  # noqa: E731
    with factory(script, batches=batches) as server:
        spec = ModelSpec(name="judge", provider=provider, model=model_id, api_key_env="K",
                         base_url=server.url + suffix)
        judge = Judge(build_model(spec, env={"K": "bench-key-not-secret"}))
        sink = DirectorySink(root / provider / "single")
        t0 = time.perf_counter()
        with ThreadPoolExecutor(workers) as pool:
            single = list(pool.map(lambda kv: judge.judge(kv[1], sink=sink, label=kv[0]),
                                   inputs.items()))
        single_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        verdicts, pending = judge_in_batches(
            judge, inputs, DirectorySink(root / provider / "batch"),
            FileLedger(root / provider / "batches.jsonl"), polling=Polling(poll_s=poll_s))
        batch_s = time.perf_counter() - t0
    single_attempts = [a for v in single for a in v.attempts]
    batch_attempts = [a for v in verdicts.values() for a in v.attempts]
    single_usd, batch_usd = total_cost(single_attempts), total_cost(batch_attempts)
    return {
        "provider": provider, "model": model_id, "cases": cases,
        "single": {"scored": sum(v.scored for v in single), "wall_s": round(single_s, 2),
                   "input_tokens": sum(a.usage.input_tokens for a in single_attempts),
                   "output_tokens": sum(a.usage.output_tokens for a in single_attempts),
                   "cost_usd": round(single_usd, 6), "workers": workers},
        "batch": {"scored": sum(v.scored for v in verdicts.values()), "pending": len(pending),
                  "wall_s": round(batch_s, 2), "batches_created": batches.created,
                  "input_tokens": sum(a.usage.input_tokens for a in batch_attempts),
                  "output_tokens": sum(a.usage.output_tokens for a in batch_attempts),
                  "cost_usd": round(batch_usd, 6)},
        "cost_ratio_batch_over_single": round(batch_usd / single_usd, 4),
        "wall_ratio_batch_over_single": round(batch_s / single_s, 3),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=400)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--poll-s", type=float, default=0.05)
    ap.add_argument("--providers", default="openai,anthropic,google")
    args = ap.parse_args()
    out = {"load_average_1m": round(os.getloadavg()[0], 2), "providers": []}
    with tempfile.TemporaryDirectory() as tmp:
        for provider in args.providers.split(","):
            out["providers"].append(one_provider(provider, args.cases, args.workers,
                                                 args.poll_s, Path(tmp)))
    out["median_cost_ratio"] = statistics.median(p["cost_ratio_batch_over_single"]
                                                 for p in out["providers"])
    print(json.dumps(out, indent=1))
    ok = all(p["single"]["scored"] == p["batch"]["scored"] == args.cases
             for p in out["providers"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
