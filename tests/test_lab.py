"""The lab path without a browser (issue 19, finding 1): the `parquet-agent` kernel registered
for this interpreter, the save hook that keeps notebooks/ clean, `parquet-agent lab --strip`.
The browser check is tests/test_lab_notebooks_slow.py (slow tier)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from parquet_agent.cli.lab import (
    HOOK,
    KERNEL_NAME,
    install_kernel,
    install_server_config,
    pre_save_hook,
    strip_outputs,
)
from tests.lab_server import parquet_agent_lab

REPO = Path(__file__).resolve().parents[1]


def _executed() -> dict:
    nb = json.loads((REPO / "notebooks" / "explore_run.ipynb").read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["execution_count"] = 3
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "x"}]
    return nb


def test_the_kernel_is_this_interpreter_under_the_given_prefix(tmp_path):
    folder = install_kernel(prefix=tmp_path)
    assert folder == tmp_path / "share" / "jupyter" / "kernels" / KERNEL_NAME
    spec = json.loads((folder / "kernel.json").read_text())
    assert spec["argv"][0] == sys.executable and spec["display_name"] == "parquet_agent (.venv)"
    for name in ("run_experiment", "explore_run", "compare_runs"):
        nb = json.loads((REPO / "notebooks" / f"{name}.ipynb").read_text())
        assert nb["metadata"]["kernelspec"]["name"] == KERNEL_NAME


def test_the_save_hook_strips_notebooks_under_notebooks_only():
    nb = _executed()
    pre_save_hook({"type": "notebook", "content": nb}, "notebooks/explore_run.ipynb")
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(c["outputs"] == [] and c["execution_count"] is None for c in code)
    mine = _executed()
    pre_save_hook({"type": "notebook", "content": mine}, "scratch/mine.ipynb")
    assert any(c.get("outputs") for c in mine["cells"])  # a user's own notebook keeps them
    assert strip_outputs(mine) and not strip_outputs(mine)


def test_the_server_config_names_the_hook_and_keeps_the_rest(tmp_path):
    path = tmp_path / "etc" / "jupyter" / "jupyter_server_config.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"ServerApp": {"port": 9999}}')
    assert install_server_config(tmp_path) == path
    assert json.loads(path.read_text()) == {"ServerApp": {"port": 9999},
                                            "ContentsManager": {"pre_save_hook": HOOK}}


def test_lab_strip_clears_a_notebook_saved_with_outputs(tmp_path):
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(_executed()))
    proc = subprocess.run([sys.executable, "-m", "parquet_agent", "lab", "--strip", str(path)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"stripped {path}" in proc.stdout
    cells = json.loads(path.read_text())["cells"]
    assert all(c.get("outputs", []) == [] for c in cells)


def test_lab_starts_as_root_and_says_so(tmp_path):
    """JupyterLab refuses root without --allow-root (exit 1); `parquet-agent lab` adds it and
    says so on stderr. The slow tier's notebooks run in the Lab it starts as well."""
    pytest.importorskip("jupyterlab", reason="the lab extra: pip install -e '.[lab]'")
    if os.geteuid() != 0:
        pytest.skip("needs root: the check is what JupyterLab does as root")
    with parquet_agent_lab(tmp_path, tmp_path) as (url, token, log):
        with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=10) as answer:
            assert answer.status == 200
    assert "running as root, so JupyterLab starts with --allow-root" in log.read_text()
