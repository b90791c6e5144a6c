"""The notebooks: stored clean, and executed through papermill with the project's own kernel.

Every execution passes `kernel_name="python3"` (the venv's own ipykernel; nothing installed),
`cwd=tmp_path` and an `execution_timeout`, and points the notebook at the small harness corpus
so the tier stays quick. Results are read back from files the notebooks write and from their
outputs. A failing notebook leaves its executed copy in tmp_path for inspection.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import papermill as pm
import pytest

from tests.harness_corpus import make_harness_corpus

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
PARAMETERS = {
    "run_experiment": {"config_path", "sample_n", "seed", "ids", "models", "strategies",
                       "cache_policy", "corpus", "runs_dir", "run_dir", "resume", "show_charts",
                       "result_path"},
    "explore_run": {"run_dir", "runs_dir", "case_id", "result_path"},
    "compare_runs": {"new_run", "old_run", "runs_dir", "threshold", "seed", "html_out"},
    "audit_dataset": {"dataset", "model", "gates", "seed", "rate", "lineage", "work_dir",
                      "result_path"},
}
PLOTLY = "application/vnd.plotly.v1+json"
WIDGET = "application/vnd.jupyter.widget-view+json"


def _execute(name: str, tmp_path: Path, **parameters) -> nbformat.NotebookNode:
    return pm.execute_notebook(
        str(NOTEBOOKS / f"{name}.ipynb"), str(tmp_path / f"{name}.out.ipynb"),
        parameters=parameters, kernel_name="python3", cwd=str(tmp_path), start_timeout=60,
        execution_timeout=240, progress_bar=False, log_output=False)


def _mimes(nb: nbformat.NotebookNode) -> list[str]:
    return [mime for cell in nb.cells if cell.cell_type == "code"
            for out in cell.outputs for mime in out.get("data", {})]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return make_harness_corpus(tmp_path_factory.mktemp("nb-corpus") / "corpus")


@pytest.mark.parametrize("name", sorted(PARAMETERS))
def test_notebook_is_stored_without_outputs_with_one_parameters_cell(name):
    path = NOTEBOOKS / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "parquet-agent"  # `parquet-agent lab` registers it
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.outputs == [] and c.execution_count is None for c in code), (
        f"{path.name} was saved with outputs; clear them with "
        f"`.venv/bin/parquet-agent lab --strip notebooks/{path.name}` (JupyterLab started "
        "from the repo root or by `parquet-agent lab` saves notebooks/ without outputs)")
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    assert set(pm.inspect_notebook(str(path))) == PARAMETERS[name]


def test_run_explore_and_compare_notebooks(corpus, tmp_path):
    runs = tmp_path / "runs"
    # 1. the offline demo config on two sampled questions, both strategies
    nb = _execute("run_experiment", tmp_path, config_path=str(REPO / "configs/demo.toml"),
                  sample_n=2, seed=3, corpus=str(corpus), runs_dir=str(runs),
                  result_path=str(tmp_path / "run1.json"))
    assert nb.metadata.papermill.exception is None
    first = json.loads((tmp_path / "run1.json").read_text())
    assert first["cases"] == 4 and len(first["summary"]) == 2
    assert first["charts"] == ["cache_savings", "cost_breakdown", "cost_vs_correctness",
                               "latency", "scores", "tool_effort"]
    run1 = Path(first["run_dir"])
    manifest = json.loads((run1 / "manifest.json").read_text())
    assert manifest["config"]["sample"] == {"n": 2, "seed": 3}
    assert (run1 / "report.html").is_file()
    mimes = _mimes(nb)
    assert mimes.count(PLOTLY) == 6 and WIDGET in mimes  # the charts and the progress bar

    # 2. the same questions, sql only, a scripted model under the same name that never knows
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["OK"] + ["I do not know"] * 4))
    nb = _execute("run_experiment", tmp_path, config_path=str(REPO / "configs/demo.toml"),
                  sample_n=None, ids=manifest["question_ids"], strategies=["sql"],
                  models=[{"name": "baseline", "provider": "scripted", "script": str(script)}],
                  corpus=str(corpus), runs_dir=str(runs), show_charts=False,
                  result_path=str(tmp_path / "run2.json"))
    second = json.loads((tmp_path / "run2.json").read_text())
    assert second["cases"] == 2 and second["charts"] == []

    # 3. explore the first run, one case opened
    case = f"{manifest['question_ids'][0]}__baseline__sql+stream"
    nb = _execute("explore_run", tmp_path, run_dir=str(run1), case_id=case,
                  result_path=str(tmp_path / "explore.json"))
    shown = json.loads((tmp_path / "explore.json").read_text())
    assert shown == {"schema_version": 1, "run_id": run1.name, "cases": 4, "selected": case,
                     "charts": first["charts"], "sections": 6}
    assert WIDGET in _mimes(nb) and _mimes(nb).count(PLOTLY) == 6
    # the widget state the kernel produced, saved in the notebook: the chosen case, rendered
    state = nb.metadata.widgets["application/vnd.jupyter.widget-state+json"]["state"]
    (select,) = [m["state"] for m in state.values() if m["model_name"] == "SelectModel"]
    assert select["_options_labels"][select["index"]].startswith(case)
    htmls = [str(m["state"].get("value", "")) for m in state.values()
             if m["model_name"] == "HTMLModel"]
    assert any('data-section="6"' in h and case in h for h in htmls)

    # 4. compare with the defaults: the newest run (2) against the one before (1)
    nb = _execute("compare_runs", tmp_path, runs_dir=str(runs), html_out=str(tmp_path / "c.html"))
    page = (tmp_path / "c.html").read_text()
    assert f"Comparison: {second['run_id']} (new) vs {first['run_id']} (old)" in page
    assert "regressed (2)" in page and "dropped (2)" in page
    assert page.count('class="plotly-graph-div"') == 2
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                      for o in c.outputs)
    assert "warning: model 'baseline' is configured differently" in printed


def test_papermill_command_from_the_repo_root(corpus, tmp_path):
    """The issue's command form (`-p sample_n N -p seed S`, run from the repo root, the
    notebook's default config path), pointed at the small corpus and a temporary runs folder."""
    out = tmp_path / "out.ipynb"
    result = tmp_path / "result.json"
    cmd = [sys.executable, "-m", "papermill", "notebooks/run_experiment.ipynb", str(out),
           "-k", "python3", "-p", "sample_n", "1", "-p", "seed", "3", "-p", "corpus", str(corpus),
           "-p", "runs_dir", str(tmp_path / "runs"), "-p", "show_charts", "False",
           "-p", "result_path", str(result), "--execution-timeout", "240", "--no-progress-bar"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(result.read_text())
    assert data["cases"] == 2  # one question x both strategies of configs/demo.toml
    manifest = json.loads((Path(data["run_dir"]) / "manifest.json").read_text())
    assert manifest["config"]["sample"] == {"n": 1, "seed": 3}
    assert manifest["config"]["name"] == "demo"


def test_a_failing_notebook_reports_a_designed_error(tmp_path):
    with pytest.raises(pm.PapermillExecutionError) as info:
        _execute("explore_run", tmp_path, runs_dir=str(tmp_path))  # no runs in it
    assert info.value.ename == "UsageError"
    assert "0 experiment run folder(s), 1 needed" in info.value.evalue
