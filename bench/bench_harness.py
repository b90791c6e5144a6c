"""Harness overhead per case: the real runner, the real SDK over local HTTP, sandboxed tools.

Each case is 2 model calls (a tool call, then the answer) + 1 tool call, against a zero-latency
fake OpenAI server on 127.0.0.1 through the official `openai` SDK and our recording transport,
with every raw request and response in the run's raw store, the sandboxed tools (one fork per
call, distinct SQL per case so nothing comes from the cache) and the offline rubric judge.

The marginal cost per case is the slope between a small and a large grid, which removes start-up
(tools, fork servers, health checks). Also reported: peak memory of the whole process tree with
4 case workers, audit bytes per case (raw store + journals), and the run's start-up.

    .venv/bin/python bench/bench_harness.py --corpus data/sample --cases 400 --small 40
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from parquet_agent.corpus.questions import load_questions  # noqa: E402
from parquet_agent.experiment.runner import Experiment  # noqa: E402
from parquet_agent.experiment.config import ExperimentConfig  # noqa: E402
from parquet_agent.models.fakes import FakeReply, FakeToolCall, openai_server  # noqa: E402
from parquet_agent.transcript import RunFinished  # noqa: E402


def script(request):
    messages = (request.json or {}).get("messages", [])
    if not any(m.get("role") == "tool" for m in messages):
        question = next((m["content"] for m in messages if m["role"] == "user"), "")
        tag = str(abs(hash(question)) % 10**9)  # a distinct query per question: no cache hits
        return FakeReply(tool_calls=(FakeToolCall(
            "sql", {"query": f"SELECT count(*) AS n, {tag} AS tag FROM filings WHERE month = 1"},
            id="call_1"),), cost=0.0001)
    return FakeReply(text="There are some filings [source: x, chars 0-1].", cost=0.0001)


def run_grid(corpus: Path, n_questions: int, workers: int, url: str, out: Path) -> dict:
    ids = list(load_questions(corpus / "questions.jsonl").ids)[:n_questions]
    config = ExperimentConfig.from_dict({
        "name": f"bench-{n_questions}", "corpus": str(corpus),
        "questions": str(corpus / "questions.jsonl"), "sample": {"ids": ids},
        "strategies": ["sql", "sql+stream"], "runs_dir": str(out),
        "models": [{"name": "m1", "provider": "openai", "model": "fake-1", "base_url": url,
                    "api_key_env": "BENCH_KEY"},
                   {"name": "m2", "provider": "openai", "model": "fake-2", "base_url": url,
                    "api_key_env": "BENCH_KEY"}],
        "judge": {"provider": "rubric"},
        "limits": {"case_workers": workers, "cache": "off"}})
    t0 = time.perf_counter()
    run = Experiment(config, env={"BENCH_KEY": "sk-bench"}, progress=False).run()
    wall = time.perf_counter() - t0
    cases = run.cases_df()
    finished = [e.payload for e in run.run_events() if isinstance(e.payload, RunFinished)][-1]
    raw = sum(p.stat().st_size for p in (run.dir / "raw").rglob("*") if p.is_file())
    journals = sum(p.stat().st_size for p in (run.dir / "journal").iterdir() if p.is_file())
    assert set(cases["status"]) == {"complete"}, cases["status"].value_counts()
    return {"cases": len(cases), "wall_s": wall, "peak_pss_mib": finished.peak_rss_bytes / 2**20,
            "raw_bytes": raw, "journal_bytes": journals, "run_dir": str(run.dir)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=REPO / "data" / "sample")
    parser.add_argument("--cases", type=int, default=400, help="cases in the large grid")
    parser.add_argument("--small", type=int, default=40, help="cases in the small grid")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    per_q = 4  # 2 models x 2 strategies
    with openai_server(script) as server, tempfile.TemporaryDirectory() as tmp:
        url = server.url + "/v1"
        rows = []
        for _ in range(args.repeat):
            small = run_grid(args.corpus, args.small // per_q, args.workers, url, Path(tmp))
            large = run_grid(args.corpus, args.cases // per_q, args.workers, url, Path(tmp))
            marginal = (large["wall_s"] - small["wall_s"]) / (large["cases"] - small["cases"])
            rows.append({"small": small, "large": large, "marginal_ms": marginal * 1000})
            print(json.dumps(rows[-1]), flush=True)
        marginal = statistics.median(r["marginal_ms"] for r in rows)
        large = rows[-1]["large"]
        audit = (large["raw_bytes"] + large["journal_bytes"]) / large["cases"]
        print(json.dumps({
            "marginal_ms_per_case_median": round(marginal, 1),
            "marginal_ms_all": [round(r["marginal_ms"], 1) for r in rows],
            "large_grid_wall_s": [round(r["large"]["wall_s"], 1) for r in rows],
            "peak_tree_pss_mib_large": [round(r["large"]["peak_pss_mib"], 1) for r in rows],
            "audit_bytes_per_case": round(audit),
            "raw_bytes_per_case": round(large["raw_bytes"] / large["cases"]),
            "journal_bytes_per_case": round(large["journal_bytes"] / large["cases"]),
            "load_average": os.getloadavg(),
        }, indent=1))


if __name__ == "__main__":
    main()
