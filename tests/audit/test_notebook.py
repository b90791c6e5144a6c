"""notebooks/audit_dataset.ipynb: stored clean with one parameters cell, and executed through
papermill (plant, audit clean and planted with the baseline and with a configured model, score,
chart, diff). The configured model is an OpenAI auditor and judge reached through the official
SDK at the local fake server (which answers each step as the baseline would, and each judge
question with a verdict), so both branches of the notebook run in one execution."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import nbformat
import papermill as pm
import pytest

from parquet_agent.audit.prompt import unquoted
from parquet_agent.audit import AuditReport
from parquet_agent.audit.baseline import BaselineAuditor
from parquet_agent.models.fakes import FakeReply, FakeToolCall, openai_server
from tests.audit.conftest import write_filings

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "audit_dataset.ipynb"


def test_stored_without_outputs_with_one_parameters_cell():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    for name in ("dataset", "model", "gates", "seed"):
        assert f"\n{name} = " in "\n" + tagged[0].source
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")


def _auditor_and_judge(received):
    """Judge questions get a PASS; auditor steps the baseline's decision."""
    messages = received.json["messages"]
    if messages[0]["content"].startswith("You review one"):
        return FakeReply(text='{"verdict": "PASS", "critique": "a defect of the data"}')
    state = unquoted(messages[-1]["content"])
    reasoning, tool, args = BaselineAuditor().decide(state)
    return FakeReply(text=reasoning, tool_calls=(FakeToolCall(tool, args, id="c1"),))


def _model_config(path: Path, url: str) -> Path:
    common = (f'provider = "openai"\nmodel = "gpt-4o-mini"\napi_key_env = "AUDIT_NB_KEY"\n'
              f'base_url = "{url}/v1"\ntimeout_s = 20.0\n')
    path.write_text(f'[audit]\nmax_steps = 60\n[audit.model]\nname = "gpt"\n{common}'
                    f'[audit.judge]\nname = "judge"\n{common}')
    return path


def test_the_notebook_plants_audits_scores_and_diffs(tmp_path, monkeypatch):
    dataset = write_filings(tmp_path / "clean")
    result = tmp_path / "result.json"
    monkeypatch.setenv("AUDIT_NB_KEY", "sk-notebook-test")  # the kernel inherits it
    with openai_server(_auditor_and_judge) as server:
        model = _model_config(tmp_path / "model.toml", server.url)
        nb = pm.execute_notebook(
            str(NOTEBOOK), str(tmp_path / "out.ipynb"), kernel_name="python3", cwd=str(tmp_path),
            parameters={"dataset": str(dataset), "rate": 0.05, "seed": 1, "lineage": "filings",
                        "work_dir": str(tmp_path / "work"), "result_path": str(result),
                        "model": str(model),
                        "gates": {"action": ["rules"], "finding": ["rules", "judge"],
                                  "run": ["rules"]}},
            start_timeout=60, execution_timeout=600, progress_bar=False, log_output=False)
        calls = server.model_calls()
    data = json.loads(result.read_text())
    for auditor in ("baseline", "model"):
        overall = data["scores"][auditor]["overall"]
        assert overall["precision"] == 1.0 and overall["recall"] >= 0.6, auditor
    assert data["diff"]["new"] and not data["diff"]["resolved"]
    # the model branch really went over HTTP: its steps and its judge are recorded
    run = AuditReport.load(tmp_path / "work" / "planted-model")
    assert run.model.provider == "openai" and run.status == "complete"
    judged = [e for e in run.evaluations if e.evaluator == "judge"]
    assert judged and all(e.gate == "finding" and e.raw for e in judged)
    assert len(calls) == len(run.steps) + len(judged)
    assert data["scores"]["model"]["overall"] == data["scores"]["baseline"]["overall"]
    mimes = [m for c in nb.cells if c.cell_type == "code" for o in c.outputs for m in o.get("data", {})]
    assert mimes.count("application/vnd.plotly.v1+json") == 2
    # the score chart says why a slot is blank (issue 27 item 7): each category with no
    # precision or recall, per auditor, under the chart
    figure = next(o["data"]["application/vnd.plotly.v1+json"] for c in nb.cells
                  if c.cell_type == "code" for o in c.outputs
                  if "application/vnd.plotly.v1+json" in o.get("data", {}))
    note = " ".join(a["text"] for a in figure["layout"].get("annotations", [])
                    if "Blank slots" in a["text"])
    blank = [(auditor, category, values) for auditor, s in data["scores"].items()
             for category, values in s["per_category"].items()
             if values["precision"] is None or not values["recall"]]
    # exactly the blank slots are explained (none, now that every planted category is found at
    # this rate: then the chart carries no note at all)
    assert sorted(re.findall(r"(\w+) / (\w+): ", note)) == sorted((a, c) for a, c, _ in blank)
    for auditor, category, values in blank:
        line = f"{auditor} / {category}: "
        assert line in note
        if values["precision"] is None:
            assert line + "no finding reported, so no precision" in note
        if values["recall"] is None:
            assert "no defect of it planted, so no recall" in note.split(line, 1)[1].split("<br>")[0]
        elif values["recall"] == 0:
            assert "recall 0: its planted defects were not found" in note.split(line, 1)[1]\
                .split("<br>")[0]


def test_the_defaults_from_a_kernel_in_notebooks_and_a_folder_it_did_not_make(tmp_path):
    """issue 27 items 3, 4: run with its defaults by a kernel started in notebooks/ (as
    JupyterLab starts it), the notebook finds data/sample and writes runs/audit-notebook at the
    repo root (it failed on notebooks/data/sample and left a stray notebooks/runs/); given an
    earlier experiment's run folder as work_dir it stops with a message and deletes nothing
    (it removed the folder with shutil.rmtree)."""
    root = tmp_path / "root"
    (root / "notebooks").mkdir(parents=True)
    shutil.copy(NOTEBOOK, root / "notebooks")
    write_filings(root / "data" / "sample")
    result = tmp_path / "result.json"

    def run(**parameters):
        return pm.execute_notebook(
            str(root / "notebooks" / NOTEBOOK.name), str(tmp_path / "out.ipynb"),
            kernel_name="python3", cwd=str(root / "notebooks"), parameters=parameters,
            start_timeout=60, execution_timeout=600, progress_bar=False, log_output=False)

    run(result_path=str(result))
    assert json.loads(result.read_text())["scores"]["baseline"]["overall"]["precision"] == 1.0
    work = root / "runs" / "audit-notebook"
    assert {"planted", "clean", "planted-baseline", "findings.sqlite"} <= {
        p.name for p in work.iterdir()}
    assert [p.name for p in (root / "notebooks").iterdir()] == [NOTEBOOK.name]

    earlier = root / "runs" / "2026-12-01-demo"
    (earlier / "cases").mkdir(parents=True)
    (earlier / "manifest.json").write_text("{}")
    with pytest.raises(pm.PapermillExecutionError) as info:
        run(work_dir="runs/2026-12-01-demo")
    assert info.value.ename == "UsageError"
    assert "is not empty (cases, manifest.json)" in info.value.evalue
    assert "nothing there was changed" in info.value.evalue
    assert sorted(p.name for p in earlier.iterdir()) == ["cases", "manifest.json"]
