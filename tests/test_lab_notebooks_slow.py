"""JupyterLab as a user runs it (slow tier, `pytest -m slow`; CI runs it once): `parquet-agent
lab` (JupyterLab from this environment, the `lab` extra), the project's `parquet-agent` kernel
and save hook registered by our own `install_kernel` / `install_server_config`, headless Debian
Chromium driven by Playwright in a 1400-px window. Twice: as root (how CI and many containers
run; the command adds --allow-root itself) with the kernel in an isolated prefix, and as user
nobody from a virtualenv of its own (`parquet-agent lab` registers the kernel there itself).

In a copy of notebooks/ and configs/ over a 300-row synthetic sample, every notebook with its
defaults: run_experiment.ipynb is opened and run twice (two runs to compare), then
explore_run.ipynb (the CaseExplorer rendered, a strategy chosen, a case picked, a tool call
expanded, its links served, not file://), compare_runs.ipynb and audit_dataset.ipynb; every
cell of each ran without an error output and the page raised no error; a save leaves the
notebook on disk without outputs. Screenshot (root): docs/img/explorer-lab.png.
"""

from __future__ import annotations

import json
import pwd
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.lab_server import isolated_env, parquet_agent_lab

REPO = Path(__file__).resolve().parents[1]
IMG = REPO / "docs" / "img"

ALL_CELLS_RAN = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  if (!k || k.status !== 'idle') return false;
  const cells = w.content.model.cells;
  for (let i = 0; i < cells.length; i++) {
    const c = cells.get(i);
    if (c.type === 'code' && c.sharedModel.getSource().trim() && !c.executionCount) return false;
  }
  return true;
}"""
ERRORS = """() => {
  const cells = window.jupyterapp.shell.currentWidget.content.model.cells, out = [];
  for (let i = 0; i < cells.length; i++) {
    const c = cells.get(i);
    if (c.type !== 'code') continue;
    for (let j = 0; j < c.outputs.length; j++) {
      const o = c.outputs.get(j).toJSON();
      if (o.output_type === 'error') out.push(o.ename + ': ' + o.evalue);
    }
  }
  return out;
}"""
KERNEL_READY = """() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.connectionStatus === 'connected' && k.status === 'idle'; }"""


@pytest.fixture(scope="module", params=["root", "nobody"])
def lab(request, tmp_path_factory):
    """`parquet-agent lab` over a copy of the notebooks; yields (url, token, root, user)."""
    pytest.importorskip("jupyterlab", reason="the lab extra: pip install -e '.[lab]'")
    if request.param == "root":
        home = tmp_path_factory.mktemp("lab")
        root = _copy(home)
        with parquet_agent_lab(root, home, _as_root(home)) as (url, token, _):
            yield url, token, root, "root"
        return
    python = _own_environment(request.getfixturevalue("nobody_python"))
    home = request.getfixturevalue("public_tmp") / "lab"
    root = _copy(home)
    env = isolated_env(home) | {"HOME": str(home)}
    subprocess.run(["chown", "-R", "nobody:", str(home)], check=True)
    with parquet_agent_lab(root, home, env, python=python, user="nobody") as (url, token, _):
        yield url, token, root, "nobody"


def _copy(home: Path) -> Path:
    """notebooks/ and configs/ beside a 300-row sample built into data/sample."""
    root = home / "root"
    shutil.copytree(REPO / "notebooks", root / "notebooks")
    shutil.copytree(REPO / "configs", root / "configs")
    sample = root / "data" / "sample"
    for args in (["corpus", "build", "--rows", "300", "--out", str(sample), "--seed", "0"],
                 ["corpus", "index", str(sample)]):
        subprocess.run([sys.executable, "-m", "parquet_agent", *args], check=True, cwd=REPO,
                       capture_output=True)
    return root


def _as_root(home: Path) -> dict[str, str]:
    """The kernel and save hook in a prefix of their own (this environment is not ours)."""
    from parquet_agent.cli.lab import KERNEL_NAME, install_kernel, install_server_config

    kernel = install_kernel(prefix=home / "prefix")
    assert kernel.name == KERNEL_NAME
    install_server_config(prefix=home / "prefix")
    return {**isolated_env(home), "JUPYTER_PATH": str(home / "prefix" / "share" / "jupyter"),
            "JUPYTER_CONFIG_PATH": str(home / "prefix" / "etc" / "jupyter")}


def _own_environment(python: Path) -> Path:
    """User nobody's virtualenv made like one a user installs: JupyterLab's application files
    and extensions (share/jupyter, hard-linked: read only) and its Jupyter config (etc/jupyter,
    copied: `parquet-agent lab` writes it) beside its interpreter, where Lab looks; a kernels
    folder of its own, where `parquet-agent lab` registers the kernel."""
    prefix = python.parents[1]
    for part in ("share/jupyter", "etc/jupyter"):
        shutil.rmtree(prefix / part, ignore_errors=True)
        (prefix / part).parent.mkdir(parents=True, exist_ok=True)
    share = prefix / "share" / "jupyter"
    if subprocess.run(["cp", "-al", f"{sys.prefix}/share/jupyter", str(share)],
                      capture_output=True).returncode != 0:
        shutil.copytree(Path(sys.prefix) / "share" / "jupyter", share)  # another file system
    shutil.rmtree(share / "kernels", ignore_errors=True)
    (share / "kernels").mkdir()
    shutil.copytree(Path(sys.prefix) / "etc" / "jupyter", prefix / "etc" / "jupyter")
    subprocess.run(["chown", "-R", "nobody:", str(share / "kernels"), str(prefix / "etc")],
                   check=True)
    return python


def _open(browser, url: str, token: str, name: str):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    # ?reset: a fresh workspace, so the previous notebook's tab is not restored beside it
    page.goto(f"{url}/lab/tree/notebooks/{name}.ipynb?reset&token={token}")
    # a code cell's editor: a rendered Markdown cell first in the notebook keeps its editor hidden
    page.wait_for_selector(".jp-Notebook .jp-CodeCell .cm-content", timeout=90_000)
    page.wait_for_function(KERNEL_READY, timeout=90_000)
    kernel = page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext"
                           ".session.kernel.name")
    assert kernel == "parquet-agent"  # the notebooks' own kernel, found without asking
    return page


def _run_all(page, timeout_ms: int = 900_000) -> None:
    page.evaluate("() => { const app = window.jupyterapp;"
                  " if (!app.shell.leftCollapsed) app.commands.execute("
                  "'application:toggle-left-area');"
                  " return app.commands.execute('notebook:run-all-cells'); }")
    page.wait_for_timeout(500)
    try:
        page.wait_for_function(ALL_CELLS_RAN, timeout=timeout_ms, polling=1000)
    except Exception:
        page.screenshot(path="/tmp/lab-run-all-timeout.png")  # what the page showed
        raise
    assert page.evaluate(ERRORS) == []


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.timeout(3000)
def test_every_notebook_runs_in_jupyterlab_and_the_explorer_works(lab, browser):
    from playwright.sync_api import expect

    url, token, root, user = lab
    page = _open(browser, url, token, "run_experiment")
    _run_all(page)
    _run_all(page)  # a second run, for compare_runs
    path = root / "notebooks" / "run_experiment.ipynb"
    before = path.stat().st_mtime_ns
    # not awaited: the command's promise may wait on the page; the file on disk is the proof
    page.evaluate("() => { window.jupyterapp.commands.execute('docmanager:save'); }")
    deadline = time.monotonic() + 60
    while path.stat().st_mtime_ns == before:
        assert time.monotonic() < deadline, "the notebook was not saved"
        time.sleep(0.2)
    time.sleep(0.5)
    saved = json.loads(path.read_text())
    assert saved["metadata"]["kernelspec"]["name"] == "parquet-agent"
    assert all(c.get("outputs", []) == [] for c in saved["cells"])  # the pre-save hook
    assert page.errors == []
    page.close()

    page = _open(browser, url, token, "explore_run")
    _run_all(page)
    count = page.locator(".pa-count b")
    expect(count).to_have_text("20", timeout=60_000)  # 10 questions x 2 strategies
    strategy = page.locator(".widget-dropdown").filter(
        has=page.locator("label", has_text="strategy")).locator("select")
    strategy.select_option("sql+stream")
    expect(count).to_have_text("10")
    expect(page.locator("section.pa-sec").first).to_contain_text("sql+stream")
    page.locator("details.pa-call summary").first.click()
    expect(page.locator("details.pa-call[open]").first).to_contain_text("arguments")
    assert page.locator("a[href^='file:']").count() == 0  # Chromium refuses file:// in Lab
    page.mouse.move(0, 0)
    page.evaluate("() => document.querySelector('.widget-select').closest("
                  "'.jp-OutputArea-output').scrollIntoView({block: 'start'})")
    if user == "root":
        IMG.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(IMG / "explorer-lab.png"))
    assert page.errors == []
    page.close()

    page = _open(browser, url, token, "compare_runs")
    _run_all(page)
    expect(page.locator(".js-plotly-plot .main-svg").first).to_be_visible(timeout=60_000)
    assert page.errors == []
    page.close()

    page = _open(browser, url, token, "audit_dataset")  # its defaults: data/sample, runs/
    _run_all(page)
    expect(page.locator(".js-plotly-plot .main-svg").first).to_be_visible(timeout=60_000)
    assert (root / "runs" / "audit-notebook" / "planted-baseline" / "manifest.json").exists()
    assert not (root / "notebooks" / "runs").exists()  # nothing stray beside the notebooks
    assert pwd.getpwuid((root / "runs" / "audit-notebook").stat().st_uid).pw_name == user
    assert page.errors == []
    page.close()
