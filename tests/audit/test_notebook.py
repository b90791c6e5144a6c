"""notebooks/audit_dataset.ipynb: stored clean with one parameters cell, and executed through
papermill (plant, audit clean and planted with the baseline, score, chart, diff)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import papermill as pm

from tests.audit.conftest import write_filings

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "audit_dataset.ipynb"


def test_stored_without_outputs_with_one_parameters_cell():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    for name in ("dataset", "model", "gates", "seed"):
        assert f"\n{name} = " in "\n" + tagged[0].source
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")


def test_the_notebook_plants_audits_scores_and_diffs(tmp_path):
    dataset = write_filings(tmp_path / "clean")
    result = tmp_path / "result.json"
    nb = pm.execute_notebook(
        str(NOTEBOOK), str(tmp_path / "out.ipynb"), kernel_name="python3", cwd=str(tmp_path),
        parameters={"dataset": str(dataset), "rate": 0.05, "seed": 1, "lineage": "filings",
                    "work_dir": str(tmp_path / "work"), "result_path": str(result)},
        start_timeout=60, execution_timeout=400, progress_bar=False, log_output=False)
    data = json.loads(result.read_text())
    overall = data["scores"]["baseline"]["overall"]
    assert overall["precision"] == 1.0 and overall["recall"] >= 0.6
    assert data["diff"]["new"] and not data["diff"]["resolved"]
    mimes = [m for c in nb.cells if c.cell_type == "code" for o in c.outputs for m in o.get("data", {})]
    assert mimes.count("application/vnd.plotly.v1+json") == 2
