"""The CaseExplorer and the charts rendered in a real JupyterLab in headless Chromium; screenshots.

    .venv/bin/python bench/bench_explore_lab.py                 # check + write docs/img/*.png
    .venv/bin/python bench/bench_explore_lab.py --img /tmp/img  # screenshots elsewhere

Steps (outputs under bench/out/explore-lab/, reused when present):
1. corpus + run: a 300-row synthetic corpus (`corpus build` + `corpus index`) and an offline
   grid of 8 questions x baseline x both strategies, rubric judge (real sandboxed tools);
2. JupyterLab lives in its OWN venv (bench/out/labvenv: `pip install jupyterlab` plus the
   project's ipywidgets and plotly versions, whose wheels carry the front-end extensions), made
   once. The kernel is this project's `.venv` python, through a `python3` kernelspec in an
   isolated JUPYTER_PATH. Why not the project venv: JupyterLab pulls jsonschema[format-nongpl],
   whose import adds ~2.2 s to every `import nbformat` (every papermill run and notebook test);
3. JupyterLab starts isolated (config, runtime, settings, workspaces in a temp dir; token auth;
   news and update checks off); Playwright opens a notebook that shows `CaseExplorer(run)` and
   one chart, waits for the kernel to connect (through `window.jupyterapp`), runs all cells,
   then checks in the page: the explorer rendered with 16 cases; choosing strategy
   `sql+stream` narrows it to 8 and changes the case view; a tool call expands to its
   arguments; the plotly chart drew (jupyterlab-plotly, no CDN). Screenshots:
   docs/img/explorer-lab.png (filters, case list, first section) and
   docs/img/explorer-lab-tool-call.png (an expanded tool call);
4. the main charts of a priced run (two models behind a fake OpenAI server on 127.0.0.1 with
   gateway-reported costs, a retry per answer of one of them; see `make_priced_run`) on one
   offline page (`charts.figure_html`, plotly.js inlined once) in
   Chromium from file://, no request leaves the page; one screenshot per chart:
   docs/img/chart-<name>.png;
5. a second priced run (`variant=1`: other answers right and wrong) compared with the first:
   the comparison section and its two charts, docs/img/compare.png and compare-charts.png.

Prints one JSON object with the timings and the PNG sizes (each must stay under 300 KB).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LAB_PINS = ["jupyterlab>=4.2,<5", "ipywidgets==8.1.9", "plotly==7.1.0"]
MAX_PNG = 300_000


def _cli(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "parquet_agent", *args], check=True, cwd=REPO)


def make_run(work: Path) -> Path:
    corpus = work / "corpus"
    if not (corpus / "_index" / "index.json").exists():
        _cli("corpus", "build", "--rows", "300", "--out", str(corpus), "--seed", "0")
        _cli("corpus", "index", str(corpus))
    run_dir = work / "runs" / "lab-demo"
    if not (run_dir / "cases-index.json").exists():
        from parquet_agent.experiment.runner import Experiment
        from parquet_agent.cli.experiment import demo_config

        config = demo_config(corpus, work / "runs", sample_n=8)
        Experiment(config, progress=False).run(run_dir)
    return run_dir


def make_priced_run(work: Path, name: str = "lab-priced", variant: int = 0) -> Path:
    """Two models behind a fake OpenAI server on 127.0.0.1 (the official SDK, the recording
    transport) with gateway-reported costs, so the cost charts have something to show:
    `cheap` (0.0003 USD a call) answers every other question right; `careful` (0.002 a call,
    its first attempt on each answer turn a 503 then a retry) answers every question with the
    reference answer. One SQL query per case, the same everywhere (result-cache hits).
    `variant` 1 is "the next run": `cheap` right on two questions in three, `careful` wrong on
    one in four and no 503s (for the comparison screenshot)."""
    import threading

    from parquet_agent.corpus.questions import load_questions
    from parquet_agent.experiment.runner import Experiment
    from parquet_agent.experiment.config import ExperimentConfig
    from parquet_agent.models.fakes import FakeReply, FakeToolCall, openai_server
    from parquet_agent.models.fakes.server import http_error

    corpus = work / "corpus"
    run_dir = work / "runs" / name
    if (run_dir / "cases-index.json").exists():
        return run_dir
    qs = load_questions(corpus / "questions.jsonl")
    answers = {q.question: (i, r.reference_answer)
               for i, (q, r) in enumerate(zip(qs.questions, qs.references))}
    seen: set[str] = set()
    lock = threading.Lock()

    def script(request):
        body = request.json or {}
        messages = body.get("messages", [])
        user = next((m["content"] for m in messages if m.get("role") == "user"), "")
        careful = body.get("model") == "gpt-careful"
        price = 0.002 if careful else 0.0003
        if "single word" in user:
            return FakeReply(text="OK", cost=0.0001)
        if not any(m.get("role") == "tool" for m in messages):
            return FakeReply(tool_calls=(FakeToolCall(
                "sql", {"query": "SELECT count(*) AS n FROM filings"}, id="c1"),), cost=price,
                input_tokens=900, output_tokens=40)
        key = f"{body.get('model')}|{user}|{len(messages)}"
        with lock:
            first = key not in seen
            seen.add(key)
        if careful and first and variant == 0:
            return http_error(503, retry_after="0")
        index, reference = answers.get(user, (1, "unknown"))
        if variant == 0:
            right = careful or index % 2 == 0
        else:
            right = index % 4 != 0 if careful else index % 3 != 0
        return FakeReply(text=reference if right else "I could not find it.", cost=price,
                         input_tokens=1800, output_tokens=120)

    with openai_server(script) as server:
        models = [{"name": name, "provider": "openai", "model": f"gpt-{name}",
                   "api_key_env": "FAKE_OPENAI_KEY", "base_url": f"{server.url}/v1",
                   "max_attempts": 3} for name in ("cheap", "careful")]
        config = ExperimentConfig.from_dict({
            "name": "priced", "corpus": str(corpus), "questions": str(corpus / "questions.jsonl"),
            "sample": {"n": 8, "seed": 7}, "strategies": ["sql", "sql+stream"],
            "runs_dir": str(work / "runs"), "models": models,
            "judge": {"name": "rubric", "provider": "rubric"}, "limits": {"case_workers": 2}})
        Experiment(config, env={"FAKE_OPENAI_KEY": "sk-bench"}, progress=False).run(run_dir)
    return run_dir


def lab_venv() -> Path:
    venv = OUT / "labvenv"
    if not (venv / "bin" / "jupyter-lab").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", *LAB_PINS], check=True)
    return venv


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _notebook(root: Path, run_dir: Path) -> Path:
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    nb = new_notebook(cells=[
        new_code_cell("from parquet_agent import CaseExplorer, charts\n"
                      f"explorer = CaseExplorer(r\"{run_dir}\")\nexplorer"),
        new_code_cell(f"charts.scores(r\"{run_dir}\")"),
    ], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                "language": "python"}})
    path = root / "explore.ipynb"
    nbformat.write(nb, path)
    return path


def _drive_lab(browser, url: str, token: str, img: Path, total: int, narrowed: int,
               timings: dict, t0: float) -> None:
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{url}/lab/tree/explore.ipynb?token={token}")
    page.wait_for_selector(".jp-Notebook .jp-Cell .cm-content", timeout=60_000)
    page.wait_for_function("""() => { const w = window.jupyterapp &&
        window.jupyterapp.shell.currentWidget; const k = w && w.sessionContext &&
        w.sessionContext.session && w.sessionContext.session.kernel;
        return !!k && k.connectionStatus === 'connected' && k.status === 'idle'; }""",
                           timeout=60_000)
    timings["kernel_connected_s"] = time.perf_counter() - t0
    page.evaluate("() => { const app = window.jupyterapp;"
                  " if (!app.shell.leftCollapsed) app.commands.execute("
                  "'application:toggle-left-area');"
                  " return app.commands.execute('notebook:run-all-cells'); }")
    count = page.locator(".pa-count b")
    expect(count).to_have_text(str(total), timeout=60_000)
    timings["explorer_rendered_s"] = time.perf_counter() - t0
    strategy = page.locator(".widget-dropdown").filter(
        has=page.locator("label", has_text="strategy")).locator("select")
    strategy.select_option("sql+stream")
    expect(count).to_have_text(str(narrowed))
    expect(page.locator("section.pa-sec").first).to_contain_text("sql+stream")
    call = page.locator("details.pa-call summary").first
    call.click()
    expect(page.locator("details.pa-call[open]").first).to_contain_text("arguments")
    expect(page.locator(".js-plotly-plot .main-svg").first).to_be_visible(timeout=30_000)
    timings["interaction_done_s"] = time.perf_counter() - t0
    page.mouse.move(0, 0)
    # the top of the explorer: run header, filters, case list, section 1
    page.evaluate("() => document.querySelector('.widget-select').closest("
                  "'.jp-OutputArea-output').scrollIntoView({block: 'start'})")
    page.screenshot(path=str(img / "explorer-lab.png"))
    # further down: the expanded tool call with its exact arguments
    page.evaluate("() => document.querySelector('details.pa-call').scrollIntoView("
                  "{block: 'start'})")
    page.screenshot(path=str(img / "explorer-lab-tool-call.png"))
    page.close()
    if errors:
        raise RuntimeError(f"page errors in JupyterLab: {errors}")


def lab_check(run_dir: Path, img: Path, venv: Path, *, total: int = 16,
              narrowed: int = 8, browser=None) -> dict:
    """Open the explorer of `run_dir` in JupyterLab; `total` cases, `narrowed` of them with
    strategy sql+stream (asserted in the page); screenshots into `img`; timings."""
    from playwright.sync_api import sync_playwright

    home = Path(tempfile.mkdtemp(prefix="pa-lab-"))
    root = home / "root"
    root.mkdir()
    _notebook(root, run_dir)
    kernels = home / "data" / "kernels" / "python3"
    kernels.mkdir(parents=True)
    # the project's interpreter as the notebook's `python3` kernel: Lab itself stays outside
    (kernels / "kernel.json").write_text(json.dumps({
        "argv": [str(REPO / ".venv" / "bin" / "python"), "-m", "ipykernel_launcher", "-f",
                 "{connection_file}"],
        "display_name": "Python 3 (parquet_agent)", "language": "python"}))
    settings = home / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}')
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(home / "config"),
           "JUPYTER_RUNTIME_DIR": str(home / "runtime"), "JUPYTER_PATH": str(home / "data"),
           "JUPYTER_DATA_DIR": str(home / "userdata"),
           "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(home / "ws")}
    t0 = time.perf_counter()
    server = subprocess.Popen(
        [str(venv / "bin" / "python"), "-m", "jupyterlab", "--no-browser", "--allow-root",
         "--ip=127.0.0.1", f"--port={port}", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True",
         "--LabApp.news_url=None",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        env=env, stdout=subprocess.DEVNULL, stderr=open(home / "lab.log", "wb"))
    timings: dict[str, float] = {}
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise RuntimeError(f"JupyterLab did not start; see {home / 'lab.log'}")
        timings["server_up_s"] = time.perf_counter() - t0
        if browser is None:
            with sync_playwright() as pw:
                own = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
                try:
                    _drive_lab(own, url, token, img, total, narrowed, timings, t0)
                finally:
                    own.close()
        else:  # a test's session browser: a second sync Playwright cannot start in one thread
            _drive_lab(browser, url, token, img, total, narrowed, timings, t0)
    finally:
        server.terminate()
        server.wait(timeout=20)
    return timings


def charts_check(run_dir: Path, img: Path) -> dict:
    from playwright.sync_api import sync_playwright

    from parquet_agent import charts

    figures = charts.main_charts(run_dir)
    parts = []
    for i, (name, fig) in enumerate(figures.items()):
        fig.update_layout(width=820, height=420)
        parts.append(f'<div id="wrap-{name}" style="width:820px">'
                     + charts.figure_html(fig, include_plotlyjs=(i == 0)) + "</div>")
    page_path = OUT / "explore-lab" / "charts.html"
    page_path.write_text("<!doctype html><meta charset=utf-8><body style='margin:0'>"
                         + "".join(parts), encoding="utf-8")
    requests: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        page = browser.new_page(viewport={"width": 840, "height": 800})
        page.on("request", lambda r: requests.append(r.url))
        page.goto(page_path.as_uri())
        page.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length"
                               f" >= {len(figures)}")
        page.wait_for_timeout(500)
        for name in figures:
            page.locator(f"#wrap-{name}").screenshot(path=str(img / f"chart-{name}.png"))
        browser.close()
    outside = [u for u in requests if not u.startswith(("file://", "data:"))]
    if outside:
        raise RuntimeError(f"the charts page requested the network: {outside}")
    return {"charts": sorted(figures)}


def compare_check(new: Path, old: Path, img: Path) -> dict:
    """The comparison section (tables) and its two charts on one offline page; screenshots
    docs/img/compare.png (warnings, counts, per-cell table) and compare-charts.png."""
    from playwright.sync_api import sync_playwright

    from parquet_agent.explore import compare_runs

    cmp = compare_runs(new, old)
    delta, transition = cmp.delta_chart(), cmp.transition_chart()
    for fig in (delta, transition):
        fig.update_layout(width=640, height=400)
    from parquet_agent import charts

    page_path = OUT / "explore-lab" / "compare.html"
    page_path.write_text(
        "<!doctype html><meta charset=utf-8><style>body{font:13px sans-serif;margin:8px}"
        "table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #ccc;padding:2px 6px}"
        "</style><body><div id=section style='width:1100px'>" + cmp.to_html() + "</div>"
        "<div id=charts style='display:flex;width:1290px'>"
        + charts.figure_html(delta, include_plotlyjs=True)
        + charts.figure_html(transition, include_plotlyjs=False) + "</div>", encoding="utf-8")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        page.goto(page_path.as_uri())
        page.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length"
                               " >= 2")
        page.wait_for_timeout(500)
        page.locator("#section").screenshot(path=str(img / "compare.png"))
        page.locator("#charts").screenshot(path=str(img / "compare-charts.png"))
        browser.close()
    return {"comparison": cmp.counts()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--img", type=Path, default=REPO / "docs" / "img")
    args = parser.parse_args()
    if not os.path.exists(CHROMIUM):
        print(f"Chromium not found at {CHROMIUM}: apt-get install --no-install-recommends "
              "chromium fonts-liberation", file=sys.stderr)
        return 2
    work = OUT / "explore-lab"
    work.mkdir(parents=True, exist_ok=True)
    args.img.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    run_dir = make_run(work)
    priced = make_priced_run(work)
    priced_next = make_priced_run(work, "lab-priced-next", variant=1)
    result: dict = {"runs": [str(run_dir), str(priced), str(priced_next)],
                    "runs_s": round(time.perf_counter() - t0, 2)}
    t1 = time.perf_counter()
    venv = lab_venv()
    result["labvenv_s"] = round(time.perf_counter() - t1, 2)
    result["lab"] = {k: round(v, 2) for k, v in lab_check(run_dir, args.img, venv).items()}
    result.update(charts_check(priced, args.img))
    result.update(compare_check(priced_next, priced, args.img))
    sizes = {p.name: p.stat().st_size for p in sorted(args.img.glob("*.png"))}
    result["png_bytes"] = sizes
    too_big = {k: v for k, v in sizes.items() if v > MAX_PNG}
    print(json.dumps(result, indent=1))
    if too_big:
        print(f"screenshots over {MAX_PNG} bytes: {too_big}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
