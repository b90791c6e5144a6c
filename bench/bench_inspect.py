"""Our harness side by side with inspect_ai doing the same work per case, in one interleaved run.

Each case on every side: 2 model calls (a tool call, then the answer) through the official
`openai` SDK over local HTTP to ONE zero-latency fake OpenAI server process
(`parquet_agent.models.fakes.openai_server` with `bench_harness.script`: a distinct `sql` query
per question, then a text answer), and 1 tool call between them. The sides:

- `ours`: `Experiment.run` as `bench_harness.py` runs it: 4 case workers, every raw request
  durable before it is sent and every response before it is parsed (wire-exact bodies in the raw
  store), journals (fdatasync per turn), the sandboxed `sql` tool (a forked, rlimited worker per
  call, DuckDB over the corpus, cache off), the offline rubric judge (+ the cited-span lookup) and
  the run's exports (case records, report) at the end.
- `bare`: inspect_ai 0.3.285, a Task of N samples, solver `[use_tools(sql()), generate()]`
  (generate -> tool -> generate), model `openai/fake-1` with `base_url` at the fake server
  (chat completions, its own AsyncOpenAI client), the tool an in-process async Python function
  returning a small JSON result, scorer `includes()`, `max_samples=4`, its defaults otherwise
  (display none; the .eval log written to a temp folder, sample buffer in its local database,
  `log_model_api` default: the first few raw calls per model; nothing fsynced).
- `local` (like-for-like): the same, with `sandbox="local"` and a tool that runs the same DuckDB
  query through `sandbox().exec([python, -c, ...])` (one subprocess per call).
- `ours_cached` (optional): ours with the tool result cache on and a second fake server that asks
  every case the same query, so the tool is answered in-process from the cache as inspect's bare
  tool is: everything else of ours (raw bodies, journals, judge, exports) unchanged. The sandbox
  is the difference between `ours` and `ours_cached`.

Marginal ms per case = slope between a small and a large size, each side in its own process
(timed inside it, around the run call only: imports and the interpreter are not counted; the
slope removes start-up). The sizes run interleaved (ours, bare, local at the small size, then
at the large one, per round), so load from other work hits every side alike.

Setup (inspect_ai is not a dependency of parquet_agent, not even of its test extra: it lives in
its own virtualenv, used only as the interpreter of the `bare` and `local` sides):

    python3 -m venv .venv-inspect && .venv-inspect/bin/pip install inspect-ai==0.3.285 openai
    .venv/bin/parquet-agent corpus build --rows 2000 --seed 0 --out /tmp/sample2000

Run (from the repository root, with our own .venv):

    .venv/bin/python bench/bench_inspect.py --corpus /tmp/sample2000 --repeat 3
    .venv/bin/python bench/bench_inspect.py --sides ours,ours_cached,bare --repeat 3
    .venv/bin/python bench/bench_inspect.py --sides ours --also before=../old-checkout

Also printed: CPU ms per case (user + system of each side's process and the children it waited
for, the same slope), steadier than wall time on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PER_Q = 4  # our grid: 2 models x 2 strategies per question
INSPECT_SIDES = ("bare", "local")


# -- the fake server, in its own process ------------------------------------------------------

def serve(same_query: bool = False) -> None:
    """Serve the fake OpenAI server until stdin closes; print its URL first. `same_query`: every
    case is asked the same SQL (for `ours_cached`, whose tool answers from its result cache)."""
    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(REPO / "bench"))
    from bench_harness import script

    from parquet_agent.models.fakes import FakeReply, FakeToolCall, openai_server

    def same(request):
        reply = script(request)
        if not reply.tool_calls:
            return reply
        query = "SELECT count(*) AS n, 0 AS tag FROM filings WHERE month = 1"
        return FakeReply(tool_calls=(FakeToolCall("sql", {"query": query}, id="call_1"),),
                         cost=reply.cost)

    with openai_server(same if same_query else script) as server:
        print(server.url + "/v1", flush=True)
        sys.stdin.read()


# -- our side ---------------------------------------------------------------------------------

def run_ours(corpus: Path, n: int, url: str, work: Path, repo: Path = REPO,
             cache: str = "off") -> dict:
    sys.path.insert(0, str(repo))
    from parquet_agent.corpus.questions import load_questions
    from parquet_agent.experiment.config import ExperimentConfig
    from parquet_agent.experiment.runner import Experiment
    from parquet_agent.transcript import RunFinished

    ids = list(load_questions(corpus / "questions.jsonl").ids)[: n // PER_Q]
    config = ExperimentConfig.from_dict({
        "name": f"bench-{n}", "corpus": str(corpus),
        "questions": str(corpus / "questions.jsonl"), "sample": {"ids": ids},
        "strategies": ["sql", "sql+stream"], "runs_dir": str(work),
        "models": [{"name": m, "provider": "openai", "model": f"fake-{i}", "base_url": url,
                    "api_key_env": "BENCH_KEY"} for i, m in ((1, "m1"), (2, "m2"))],
        "judge": {"provider": "rubric"},
        "limits": {"case_workers": 4, "cache": cache}})
    t0, cpu0 = time.perf_counter(), _cpu_s()
    run = Experiment(config, env={"BENCH_KEY": "sk-bench"}, progress=False).run()
    wall, cpu = time.perf_counter() - t0, _cpu_s() - cpu0
    finished = [e.payload for e in run.run_events() if isinstance(e.payload, RunFinished)][-1]
    cases = run.cases_df()
    assert set(cases["status"]) == {"complete"}, cases["status"].value_counts()
    tools = run.tool_calls_df()
    assert len(tools) == len(cases), f"{len(tools)} tool calls for {len(cases)} cases"
    return {"cases": len(cases), "wall_s": wall, "cpu_s": cpu,
            "tool_cache_hits": int(tools["cache_hit"].sum()),
            "cases_wall_s": finished.wall_ms / 1000}


# -- inspect_ai's side (runs in .venv-inspect) -------------------------------------------------

_LOCAL_QUERY = """
import duckdb, json, sys
con = duckdb.connect()
con.sql("CREATE VIEW filings AS SELECT * FROM read_parquet(" + repr(sys.argv[1]) + ")")
rows = con.sql(sys.argv[2]).fetchall()
print(json.dumps({"rows": [list(r) for r in rows]}))
"""


def run_inspect(kind: str, corpus: Path, n: int, url: str, work: Path, query_python: str) -> dict:
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import get_model
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import tool
    from inspect_ai.util import sandbox

    glob = str(corpus / "*.parquet")

    @tool
    def sql():
        async def execute(query: str) -> str:
            """Run a SQL query over the `filings` table of the corpus.

            Args:
                query: the SQL query
            """
            if kind == "bare":
                return json.dumps({"columns": ["n", "tag"], "rows": [[42, 1]]})
            result = await sandbox().exec([query_python, "-c", _LOCAL_QUERY, glob, query])
            if not result.success:
                raise RuntimeError(result.stderr)
            return result.stdout

        return execute

    # distinct questions, so the fake server asks a distinct query per sample (as for ours)
    samples = [Sample(input=f"How many filings are there in month 1? (question {i})",
                      target="filings", id=i) for i in range(n)]
    task = Task(dataset=samples, solver=[use_tools(sql()), generate()], scorer=includes(),
                sandbox="local" if kind == "local" else None)
    model = get_model("openai/fake-1", base_url=url, api_key="sk-bench",
                      responses_api=False)  # the fake server speaks chat completions
    t0, cpu0 = time.perf_counter(), _cpu_s()
    logs = inspect_eval(task, model=model, display="none", log_dir=str(work), max_samples=4,
                        max_connections=4)
    wall, cpu = time.perf_counter() - t0, _cpu_s() - cpu0
    log = logs[0]
    assert log.status == "success", log.error
    assert log.samples is not None and len(log.samples) == n
    calls = sum(1 for s in log.samples for m in s.messages if m.role == "tool")
    assert calls == n, f"{calls} tool calls for {n} samples"
    return {"cases": n, "wall_s": wall, "cpu_s": cpu}


def _cpu_s() -> float:
    """User + system CPU seconds of this process and its waited-for children (our tool server
    and its workers once the run closes them; inspect's sandbox subprocesses)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


# -- the driver -------------------------------------------------------------------------------

def one(side: str, n: int, args: argparse.Namespace, url: str, tmp: Path) -> dict:
    ours = side not in INSPECT_SIDES
    python = sys.executable if ours else str(args.inspect_python)
    work = Path(tempfile.mkdtemp(dir=tmp, prefix=f"{side}-{n}-"))
    cmd = [python, str(Path(__file__).resolve()), "--side", side, "--n", str(n), "--url", url,
           "--work", str(work), "--corpus", str(args.corpus), "--query-python", sys.executable]
    if side in args.checkouts:
        cmd += ["--repo", str(args.checkouts[side])]
    if side == "ours_cached":
        cmd[cmd.index("--url") + 1] = args.cached_url
    out = subprocess.run(cmd, check=False, capture_output=True, text=True, cwd=REPO)
    if out.returncode != 0:
        raise SystemExit(f"{side} n={n} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/sample2000"))
    parser.add_argument("--small", type=int, default=40, help="cases in the small size")
    parser.add_argument("--large", type=int, default=400, help="cases in the large size")
    parser.add_argument("--local-small", type=int, default=20,
                        help="the like-for-like side's small size (a subprocess per tool call)")
    parser.add_argument("--local-large", type=int, default=100)
    parser.add_argument("--sides", default="ours,bare,local")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--inspect-python", type=Path, default=REPO / ".venv-inspect/bin/python")
    parser.add_argument("--base-repo", type=Path,
                        help="also run our side from this checkout (side `base`): before/after "
                             "pairs in the same run")
    parser.add_argument("--also", action="append", default=[], metavar="NAME=PATH",
                        help="one more side: our harness from the checkout PATH")
    # one measurement in this process (what the driver runs)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--same-query", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--side", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--query-python", help=argparse.SUPPRESS)
    parser.add_argument("--repo", type=Path, default=REPO, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve(args.same_query)
    if args.side:
        if args.side not in INSPECT_SIDES:
            result = run_ours(args.corpus, args.n, args.url, args.work, args.repo,
                              "on" if args.side == "ours_cached" else "off")
        else:
            result = run_inspect(args.side, args.corpus, args.n, args.url, args.work,
                                 args.query_python)
        print(json.dumps(result), flush=True)
        return
    args.checkouts = dict(a.split("=", 1) for a in args.also)
    if args.base_repo:
        args.checkouts["base"] = args.base_repo
    sides = [s for s in args.sides.split(",") if s] + list(args.checkouts)
    sizes = {s: (args.local_small, args.local_large) if s == "local" else (args.small, args.large)
             for s in sides}
    server = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, cwd=REPO)
    cached = subprocess.Popen([sys.executable, __file__, "--serve", "--same-query"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        url = server.stdout.readline().strip()
        args.cached_url = cached.stdout.readline().strip()
        marginal: dict[str, list[float]] = {s: [] for s in sides}
        cpu: dict[str, list[float]] = {s: [] for s in sides}
        with tempfile.TemporaryDirectory(prefix="bench-inspect-") as tmp:
            for r in range(args.repeat):
                rows: dict[str, dict] = {s: {} for s in sides}
                for index in (0, 1):  # small, then large; the sides interleaved at each size
                    for side in sides:
                        rows[side][index] = one(side, sizes[side][index], args, url, Path(tmp))
                for side in sides:
                    small, large = rows[side][0], rows[side][1]
                    ms = (large["wall_s"] - small["wall_s"]) / (large["cases"] - small["cases"])
                    marginal[side].append(ms * 1000)
                    cpu_ms = ((large["cpu_s"] - small["cpu_s"])
                              / (large["cases"] - small["cases"]) * 1000)
                    cpu[side].append(cpu_ms)
                    extra = ""
                    if "cases_wall_s" in small and side == "ours":  # without the exports
                        cases_ms = ((large["cases_wall_s"] - small["cases_wall_s"])
                                    / (large["cases"] - small["cases"]) * 1000)
                        marginal.setdefault("ours_cases_only", []).append(cases_ms)
                        extra = f", cases only (no exports) {cases_ms:.1f}"
                    print(f"round {r + 1} {side}: small {small['wall_s']:.2f} s, large "
                          f"{large['wall_s']:.2f} s, marginal {ms * 1000:.1f} ms/case{extra}, "
                          f"CPU {cpu_ms:.1f} ms/case",
                          flush=True)
    finally:
        for proc in (server, cached):
            proc.stdin.close()
            proc.wait(timeout=30)
    medians = {s: round(statistics.median(v), 1) for s, v in marginal.items()}
    ratios = {f"{o}/{s}": round(medians[o] / medians[s], 2)
              for o in ("ours", "ours_cases_only", "ours_cached") if o in medians
              for s in sides if s in INSPECT_SIDES}
    if "ours" in medians:
        ratios |= {f"ours/{s}": round(medians["ours"] / medians[s], 2) for s in args.checkouts}
    cpu_medians = {s: round(statistics.median(v), 1) for s, v in cpu.items()}
    ratios |= {f"cpu {o}/{s}": round(cpu_medians[o] / cpu_medians[s], 2)
               for o in ("ours", "ours_cached") if o in cpu_medians
               for s in sides if s not in ("ours", o)}
    print(json.dumps({"marginal_ms_per_case_median": medians,
                      "marginal_cpu_ms_per_case_median": cpu_medians,
                      "marginal_ms_all": {s: [round(x, 1) for x in v] for s, v in marginal.items()},
                      "ratios": ratios, "load_average": os.getloadavg(), "nproc": os.cpu_count(),
                      "command": " ".join([Path(sys.executable).name, *sys.argv])}, indent=1))


if __name__ == "__main__":
    main()
