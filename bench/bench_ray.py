"""Local engine vs the Ray engine on one machine: the same grid, model latency ~1 s per call.

    nice -n 10 .venv/bin/python bench/bench_ray.py [--questions 100] [--latency 1.0]
        [--case-workers 16] [--data DIR] [--out FILE]

The grid: `--questions` sampled questions of the bundled sample corpus (2,000 synthetic filings;
built into --data when missing) x 2 models x 2 strategies (400 cases by default), every answer
call served by the fake OpenAI server after `--latency` seconds (the official SDK over HTTP).
Each case makes three answer calls: an SQL count, an SQL scan of every filing's Markdown for the
company's name (a realistic data-tool cost: it reads the whole `parsed_md` column), then the
answer; the rubric judge scores it. Local: `--case-workers` threads, one data gate. Ray: a real
local cluster of 2 node processes (`ray start --head` + `ray start --address`, 1 CPU each),
`--case-workers / 2` cases per node, one data gate per node; the driver holds the run folder.

Reported per engine: wall time, cases per minute, data-tool queue and run time (median, p95),
the driver write round trip (Ray: node -> mailbox -> driver fsync -> node, and the driver's own
apply time), peak memory (PSS of the driver's process tree, plus every Ray process for Ray), and
the parts the scaling estimate in docs/benchmarks.md is built from.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from parquet_agent.experiment.runner import Experiment  # noqa: E402
from parquet_agent.memory import TreeMemory  # noqa: E402
from parquet_agent.corpus.sample import ensure_sample  # noqa: E402
from parquet_agent.models.fakes import openai_server  # noqa: E402
from tests.engine.grid import GridScript, write_config  # noqa: E402


def _q(values: list[float], p: float) -> float | None:
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    return round(values[min(len(values) - 1, int(len(values) * p))], 1)


def _measure(run, wall_s: float, peak: int) -> dict:
    tools = run.tool_calls_df()
    data = tools[tools["name"] == "sql"]
    scans = data[~data["cache_hit"].astype(bool)]  # the calls that reached a sandbox worker
    cases = run.cases_df()
    finished = [e for e in run.run_events() if e.event == "run_finished"][-1].data
    out = {
        "cases": len(cases), "complete": int((cases["status"] == "complete").sum()),
        "wall_s": round(wall_s, 1), "cases_per_min": round(len(cases) / wall_s * 60, 1),
        "data_queue_ms_median": _q(list(data["queue_ms"]), 0.5),
        "data_queue_ms_p95": _q(list(data["queue_ms"]), 0.95),
        "data_run_ms_median": _q(list(data["run_ms"]), 0.5),
        "data_run_ms_p95": _q(list(data["run_ms"]), 0.95),
        "data_calls": len(data), "data_calls_uncached": len(scans),
        "uncached_queue_ms_median": _q(list(scans["queue_ms"]), 0.5),
        "uncached_queue_ms_p95": _q(list(scans["queue_ms"]), 0.95),
        "uncached_run_ms_median": _q(list(scans["run_ms"]), 0.5),
        "uncached_run_ms_p95": _q(list(scans["run_ms"]), 0.95),
        "uncached_run_s_total": round(float(scans["run_ms"].sum()) / 1000, 1),
        "peak_pss_mib": round(peak / 2**20, 1),
        "verify_ok": run.verify().ok,
    }
    engine = finished.get("engine")
    if engine:
        out["write_round_trip"] = engine["write_round_trip"]
        out["driver_apply"] = engine["driver_apply"]
        out["nodes"] = {k: {"cases": v["cases"], "cases_per_min": v["cases_per_min"]}
                        for k, v in engine["nodes"].items()}
        out["writes_per_case"] = round(engine["write_round_trip"]["count"] / len(cases), 1)
    return out


def _run(corpus: Path, work: Path, name: str, latency: float, engine: str, case_workers: int,
         questions: int, extra=lambda: []) -> dict:
    script = GridScript({}, latency_s=latency)
    with openai_server(script) as server:
        config = write_config(work / f"{name}.toml", corpus, work / "runs", server.url,
                              engine=engine, case_workers=case_workers)
        text = config.read_text().replace('strategies = ["sql", "sql+stream"]',
                                          f'strategies = ["sql", "sql+stream"]\n'
                                          f'sample = {{ n = {questions}, seed = 7 }}')
        config.write_text(text)
        t0 = time.perf_counter()
        with TreeMemory(0.5, extra) as peak:
            run = Experiment.from_toml(config, env={"FAKE_OPENAI_KEY": "sk-bench"},
                                       progress=False).run(work / "runs" / name)
        wall = time.perf_counter() - t0
    result = _measure(run, wall, peak.peak)
    result["server_duplicates"] = sum(n - 1 for n in script.duplicates().values())
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--case-workers", type=int, default=16)
    parser.add_argument("--data", type=Path, default=REPO / "data" / "sample")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    corpus = ensure_sample(args.data)
    from tests.engine.ray_cluster import LocalRayCluster

    with tempfile.TemporaryDirectory(prefix="bench-ray-") as tmp:
        work = Path(tmp)
        load0 = psutil.getloadavg()
        local = _run(corpus, work, "local", args.latency, "", args.case_workers, args.questions)
        print(json.dumps({"local": local}, indent=1), flush=True)
        per_node = max(1, args.case_workers // 2)
        with LocalRayCluster(2, names=["node-0", "node-1"]) as cluster, cluster.as_driver():
            engine = (f'[engine]\nkind = "ray"\naddress = "{cluster.address}"\n'
                      f"case_workers_per_node = {per_node}\ndata_workers_per_node = 1\n")
            ray_result = _run(corpus, work, "ray", args.latency, engine, args.case_workers,
                              args.questions, extra=cluster._ours)
        load1 = psutil.getloadavg()
    result = {"machine": {"cpus": psutil.cpu_count(), "load_before": load0, "load_after": load1},
              "args": {k: str(v) for k, v in vars(args).items()},
              "local": local, "ray": ray_result,
              "ratio_ray_over_local_cases_per_min": round(
                  ray_result["cases_per_min"] / local["cases_per_min"], 2)}
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
