"""The notebook helpers: config overrides, path lookup, run lookup, designed errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from parquet_agent.errors import UsageError
from parquet_agent.explore.notebook import (
    ensure_corpus,
    find_dataset,
    find_path,
    latest_runs,
    notebook_config,
    output_path,
    resolve_run,
)

DEMO = Path(__file__).resolve().parents[2] / "configs" / "demo.toml"


def test_demo_config_defaults_and_overrides(corpus, tmp_path):
    base = notebook_config(DEMO)
    assert base.name == "demo" and base.corpus == DEMO.parent.parent / "data" / "sample"
    assert base.runs_dir == DEMO.parent.parent / "runs"
    assert [m.provider for m in base.models] == ["baseline"] and base.judge.provider == "rubric"
    assert base.strategies == ("sql", "sql+stream")

    c = notebook_config(DEMO, sample_n=2, seed=3, corpus=corpus, runs_dir=tmp_path,
                        strategies=["sql"], models=["baseline"], cache_policy="off")
    assert c.sample.to_json() == {"n": 2, "seed": 3}
    assert c.corpus == corpus and c.questions == corpus / "questions.jsonl"
    assert c.runs_dir == tmp_path and c.strategies == ("sql",) and c.limits.cache == "off"
    assert notebook_config(DEMO, ids=["Q002"]).sample.to_json() == {"ids": ["Q002"]}
    with pytest.raises(UsageError, match="seed=11 needs sample_n"):  # the demo runs "all"
        notebook_config(DEMO, seed=11)
    table = {"name": "other", "provider": "baseline"}
    assert [m.name for m in notebook_config(DEMO, models=[table]).models] == ["other"]


@pytest.mark.parametrize("kwargs, message", [
    ({"models": ["gpt-9"]}, "'gpt-9' is not a model of the config"),
    ({"ids": ["Q001"], "sample_n": 2}, "sample_n .* or ids, not both"),
    ({"cache_policy": "maybe"}, "cache_policy must be 'on' or 'off'"),
])
def test_bad_overrides_are_usage_errors(kwargs, message):
    with pytest.raises(UsageError, match=message):
        notebook_config(DEMO, **kwargs)


def test_find_path_looks_in_cwd_then_its_parent(tmp_path, monkeypatch):
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "x.toml").write_text("")
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")  # a kernel started next to the notebook
    assert find_path("configs/x.toml") == (tmp_path / "configs" / "x.toml").resolve()
    with pytest.raises(UsageError, match="not found"):
        find_path("configs/missing.toml")


def test_output_paths_land_in_the_repo_root_from_a_kernel_in_notebooks(tmp_path, monkeypatch):
    """issue 27 item 3: a kernel JupyterLab starts in notebooks/ writes the defaults under the
    repo root (was a stray notebooks/runs/), papermill from elsewhere under its cwd."""
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")
    assert output_path("runs/audit-notebook") == tmp_path / "runs" / "audit-notebook"
    assert output_path(tmp_path / "x") == tmp_path / "x"
    monkeypatch.chdir(tmp_path)
    assert output_path("runs/a") == tmp_path / "runs" / "a"
    with pytest.raises(UsageError, match="dataset 'data/orders' not found"):
        find_dataset("data/orders")  # only the bundled sample is built when missing
    monkeypatch.chdir(tmp_path / "notebooks")
    built = find_dataset("data/sample")
    assert built == tmp_path / "data" / "sample" and (built / "questions.jsonl").is_file()
    assert find_dataset("data/sample") == built.resolve()  # found, not built again
    assert sorted(p.name for p in (tmp_path / "notebooks").iterdir()) == []


def test_latest_runs_and_resolve_run(demo_run, scripted_run, http_run, runs_dir):
    newest = latest_runs(runs_dir, 3)
    assert set(newest) == {demo_run, scripted_run, http_run}
    assert newest == sorted(newest, key=lambda p: (p / "manifest.json").read_text()
                            .split('"created_at"')[1], reverse=True)
    assert resolve_run(None, runs_dir, newest=1) == newest[1]
    assert resolve_run(demo_run, "ignored") == demo_run
    with pytest.raises(UsageError, match="3 experiment run folder"):
        latest_runs(runs_dir, 4)


def test_ensure_corpus_refuses_a_missing_corpus_that_is_not_the_sample(tmp_path):
    config = notebook_config(DEMO, corpus=tmp_path / "nowhere")
    with pytest.raises(UsageError, match="corpus build --rows 2000"):
        ensure_corpus(config)
