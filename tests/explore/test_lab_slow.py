"""The explorer in a real JupyterLab in headless Chromium (slow tier: `pytest -m slow`).

Runs `bench/bench_explore_lab.py`'s check against its lab venv (bench/out/labvenv, made by
running that script once: JupyterLab stays out of the project venv). Skipped when Chromium or
the lab venv is missing.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LAB_VENV = REPO / "bench" / "out" / "labvenv"


@pytest.mark.slow
def test_explorer_renders_and_filters_in_jupyterlab(demo_run, browser, tmp_path):
    if not os.path.exists(os.environ.get("CHROMIUM", "/usr/bin/chromium")):
        pytest.skip("Chromium not installed")
    if not (LAB_VENV / "bin" / "jupyter-lab").exists():
        pytest.skip("no lab venv: run `.venv/bin/python bench/bench_explore_lab.py` once")
    spec = importlib.util.spec_from_file_location("bench_explore_lab",
                                                  REPO / "bench" / "bench_explore_lab.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    timings = bench.lab_check(demo_run, tmp_path, LAB_VENV, total=6, narrowed=3, browser=browser)
    assert (tmp_path / "explorer-lab.png").stat().st_size > 10_000
    assert timings["explorer_rendered_s"] < 120
