"""The engine pieces that need no Ray cluster: the `[engine]` table, resumes across engines, the
driver store's leases (a lost node's late write is refused), the node's corpus check and the
credentials a node gets. The cluster tests are in test_ray_engine.py (marker `ray`)."""

from __future__ import annotations

from dataclasses import replace

import pyarrow.parquet as pq
import pytest

from parquet_agent.corpus.snapshot import CorpusSnapshot
from parquet_agent.engine import EngineConfig, LocalEngine
from parquet_agent.engine.ray_node import corpus_problem
from parquet_agent.engine.ray_store import DriverStore
from parquet_agent.errors import ConfigError
from parquet_agent.experiment.config import ExperimentConfig
from parquet_agent.experiment.run import create_run, experiment_fields
from parquet_agent.explore.runs import RunStore
from parquet_agent.store import CaseStarted, compare_frozen
from parquet_agent.store.manifest import build_manifest
from tests.harness_corpus import make_harness_corpus
from tests.store.store_fixtures import make_config, make_frozen

BASE = {"name": "x", "corpus": ".", "questions": "q.jsonl",
        "models": [{"name": "b", "provider": "baseline"}], "judge": {"provider": "rubric"}}


def test_the_engine_table_is_strict_and_local_configs_keep_their_hash():
    config = ExperimentConfig.from_dict(BASE | {"engine": {
        "kind": "ray", "address": "ray://head:10001", "nodes": 2, "case_workers_per_node": 8,
        "data_workers_per_node": 1, "corpus_by_node": {"node-b": "/data/b"}}})
    assert config.engine.nodes == 2 and config.engine.corpus_for("node-b", "/c") == "/data/b"
    assert config.engine.corpus_for("node-a", "/c") == "/c"
    assert config.to_dict()["engine"]["kind"] == "ray"
    plain = ExperimentConfig.from_dict(BASE)
    local = ExperimentConfig.from_dict(BASE | {"engine": {"kind": "local"}})
    assert "engine" not in local.to_dict() and local.config_hash() == plain.config_hash()
    with pytest.raises(ConfigError, match=r"\[engine\]: unknown key 'node'.*did you mean 'nodes'"):
        ExperimentConfig.from_dict(BASE | {"engine": {"kind": "ray", "node": 2}})
    with pytest.raises(ConfigError, match=r"kind: 'spark' is not one of local, ray"):
        ExperimentConfig.from_dict(BASE | {"engine": {"kind": "spark"}})
    with pytest.raises(ConfigError, match=r"case_workers_per_node: expected an integer >= 1"):
        EngineConfig(kind="ray", case_workers_per_node=0)
    with pytest.raises(ConfigError, match=r"nodes: expected an integer >= 1, got True"):
        EngineConfig(kind="ray", nodes=True)


def test_the_engine_table_names_its_allowed_nodes_and_the_auth_opt_out():
    """Issue 24 item 1: typed, checked, and in the frozen config only when set."""
    config = ExperimentConfig.from_dict(BASE | {"engine": {
        "kind": "ray", "allowed_nodes": ["head", "gpu-a"], "allow_unauthenticated": True}})
    assert config.engine.allowed_nodes == ("head", "gpu-a")
    assert config.engine.allow_unauthenticated is True
    frozen = config.to_dict()["engine"]
    assert frozen["allowed_nodes"] == ["head", "gpu-a"] and frozen["allow_unauthenticated"]
    default = EngineConfig(kind="ray")
    assert default.allowed_nodes is None and default.allow_unauthenticated is False
    assert "allowed_nodes" not in default.to_dict()
    for bad in ("head", [], [""], [3]):
        with pytest.raises(ConfigError, match=r"allowed_nodes: expected a non-empty list"):
            EngineConfig(kind="ray", allowed_nodes=bad)
    with pytest.raises(ConfigError, match=r"allow_unauthenticated: expected true or false"):
        EngineConfig(kind="ray", allow_unauthenticated="yes")


def _manifest(config, frozen):
    return build_manifest("r", "t", "experiment", experiment_fields(config, frozen))


def test_a_run_started_on_ray_resumes_locally_and_back(tmp_path):
    ray_config = replace(make_config(tmp_path), engine=EngineConfig(kind="ray", nodes=2))
    local_config = make_config(tmp_path)
    ray_manifest = _manifest(ray_config, make_frozen() | {"engine": {"kind": "ray"}})
    local_manifest = _manifest(local_config, make_frozen())
    assert compare_frozen(ray_manifest, local_manifest) == []
    assert compare_frozen(local_manifest, ray_manifest) == []
    changed = replace(ray_config, limits=replace(ray_config.limits, max_rounds=3))
    assert compare_frozen(ray_manifest, _manifest(changed, make_frozen())) == [
        "config.limits.max_rounds: 16 -> 3"]


def test_the_driver_store_refuses_a_withdrawn_lease_and_foreign_records(tmp_path):
    run = create_run(RunStore(tmp_path / "runs"), make_config(tmp_path), make_frozen())
    store = DriverStore(run, mailbox=None)  # applied directly: no mailbox, no threads
    case = "Q001__flash__sql"
    first = store.lease(case)
    started = CaseStarted(case_id=case, question_id="Q001", model="flash", strategy="sql",
                          node="node-1")
    ok, events = store.apply(("append", case, first, ([started],)))
    assert ok and events[0].event == "case_started"
    ok, path = store.apply(("raw", case, first, (f"{case}/turn-01.attempt-01.request.json",
                                                 b'{"x": 1}')))
    assert ok and run.read_raw(path) == b'{"x": 1}'
    second = store.lease(case)  # the case went to another node
    ok, error = store.apply(("append", case, first, ([started],)))
    assert not ok and error[0] == "StaleLeaseError" and "lease 1 was withdrawn" in error[1]
    ok, error = store.apply(("raw", case, second, ("Q002__flash__sql/x.json", b"{}")))
    assert not ok and "outside case" in error[1]
    ok, replay = store.apply(("replay", case, second, ()))
    assert ok and replay.started.node == "node-1" and replay.sessions == 1
    assert [e.event for e in run.case_events(case)] == ["case_started"]
    assert store.figures()["count"] == 3
    run.close()


def test_a_node_corpus_check_names_the_node_and_the_differing_file(tmp_path):
    corpus = make_harness_corpus(tmp_path / "corpus")
    frozen = CorpusSnapshot.take(corpus).to_json()
    problem, now = corpus_problem("node-b", str(corpus), frozen)
    assert problem is None and now.snapshot_id == frozen["snapshot_id"]
    pq.write_table(pq.read_table(corpus / "2025-02.parquet"), corpus / "2025-02.parquet",
                   compression="gzip")
    problem, _ = corpus_problem("node-b", str(corpus), frozen)
    assert problem.startswith(f"node node-b: its corpus {corpus} differs")
    assert "2025-02.parquet" in problem and "2025-01.parquet" not in problem
    problem, _ = corpus_problem("node-c", str(tmp_path / "nowhere"), frozen)
    assert problem.startswith("node node-c: cannot read its corpus")


def test_nodes_get_only_the_credentials_the_models_name():
    from parquet_agent.engine.ray_engine import credentials

    config = ExperimentConfig.from_dict(BASE | {"models": [
        {"name": "a", "provider": "openai", "model": "gpt-x", "api_key_env": "A_KEY"},
        {"name": "b", "provider": "baseline"}]})
    env = {"A_KEY": "sk-a", "AWS_SECRET_ACCESS_KEY": "no", "HOME": "/root"}
    assert credentials(config, env) == {"A_KEY": "sk-a"}


def test_the_local_engine_describes_itself_and_has_no_extra_figures():
    engine = LocalEngine(4)
    assert engine.describe() == {"kind": "local", "case_workers": 4}
    assert engine.figures() is None
