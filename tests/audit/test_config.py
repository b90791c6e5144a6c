"""The audit config's typed fields (issue 26 item 6): `gates` an AuditGates, `model` a
BaselineModel or a ModelSpec, `judge` a ModelSpec; the same error quality as before (unknown key,
did you mean, allowed keys), and `to_json` keeps the manifest's JSON shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from parquet_agent.audit.config import AuditConfig, AuditGates, BaselineModel
from parquet_agent.errors import ConfigError
from parquet_agent.models.spec import ModelSpec

FIXTURES = Path(__file__).parent / "fixtures"
OPENAI = {"provider": "openai", "model": "gpt-4o-mini", "api_key_env": "AUDIT_KEY",
          "base_url": "http://127.0.0.1:9/v1", "timeout_s": 20.0}


def test_the_model_and_judge_are_typed_entries_written_back_as_their_tables():
    config = AuditConfig.from_table({"model": OPENAI, "judge": {**OPENAI, "name": "referee"},
                                     "gates": {"finding": ["rules", "judge"]}})
    assert isinstance(config.model, ModelSpec) and config.model.name == "auditor"
    assert isinstance(config.judge, ModelSpec) and config.judge.name == "referee"
    assert config.gates == AuditGates(finding=("rules", "judge"))
    data = config.to_json()
    assert data["model"] == OPENAI and data["judge"] == {**OPENAI, "name": "referee"}
    assert data["gates"] == {"action": ["rules"], "finding": ["rules", "judge"], "run": ["rules"]}
    assert AuditConfig.from_table(json.loads(json.dumps(data))) == config


def test_the_default_is_the_blind_baseline_as_before():
    config = AuditConfig()
    assert config.model == BaselineModel() and config.judge is None
    assert config.to_json()["model"] == {"provider": "audit-baseline", "variant": "blind"}


@pytest.mark.parametrize("fixture", ["audit-main-cb07f7a", "audit-main-ce4e1e3"])
def test_an_older_audit_manifests_config_reads_back_to_the_same_json(fixture):
    frozen = json.loads((FIXTURES / fixture / "manifest.json").read_text())["config"]
    # (the older one predates contracts: to_json adds `contract: null`, as today's main does)
    assert AuditConfig.from_table(frozen).to_json() == {"contract": None, **frozen}


def test_a_table_from_python_is_read_as_from_table_reads_it():
    config = AuditConfig(gates={"finding": ("rules", "judge")},  # type: ignore[arg-type]
                         model={"provider": "audit-baseline", "variant": "blind"})  # type: ignore[arg-type]
    assert config.gates.action == ("rules",) and config.gates.finding == ("rules", "judge")
    assert isinstance(config.model, BaselineModel)


@pytest.mark.parametrize("table, expected", [
    ({"max_step": 3}, ["unknown key(s) ['max_step']", "did you mean 'max_steps'",
                       "allowed: ['contract', 'gates', 'judge'"]),
    ({"model": {"provider": "audit-baseline", "varient": "blind"}},
     ["[audit.model]: unknown key 'varient'", "did you mean 'variant'",
      "allowed: provider, variant, reference, name"]),
    ({"model": {**OPENAI, "temprature": 0}},
     ["[audit.model]: unknown key 'temprature'", "did you mean 'temperature'", "allowed: name"]),
    ({"judge": {**OPENAI, "api_key_envv": "X"}}, ["[audit.judge]: unknown key 'api_key_envv'",
                                                 "did you mean 'api_key_env'"]),
    ({"gates": {"findings": ["rules"]}}, ["unknown gate 'findings'", "did you mean 'finding'",
                                          "the gates are action, finding, run"]),
    ({"gates": {"run": ["rules", "jugde"]}}, ["[audit.gates] run: unknown evaluator(s) ['jugde']"]),
    ({"gates": {"run": "rules"}}, ["[audit.gates] run: expected a list of evaluators"]),
    ({"model": {"provider": "audit-baseline", "variant": "reference"}},
     ["variant 'reference' needs reference = DIR"]),
    ({"model": {"provider": "audit-baseline", "variant": "sighted"}},
     ["[audit.model] variant: 'sighted' is not one of blind, reference"]),
    ({"judge": {"provider": "audit-baseline"}}, ["[audit.judge]", "it does not judge"]),
    ({"model": {"provider": "openai", "model": "gpt-4o"}}, ["[audit.model]", "needs `api_key_env`"]),
    # the scalar keys are checked when built too (they were taken as given before)
    ({"max_cost_usd": float("nan")}, ["[audit] max_cost_usd: nan is not a positive number"]),
    ({"max_cost_usd": "2"}, ["[audit] max_cost_usd: expected a number"]),
    ({"max_tokens": True}, ["[audit] max_tokens: expected an integer"]),
    ({"sample_rows": 0}, ["[audit] sample_rows: 0 is below the minimum 1"]),
    ({"lineage": 7}, ["[audit] lineage: expected a string"]),
])
def test_a_bad_table_is_a_config_error_naming_the_key(table, expected):
    with pytest.raises(ConfigError) as caught:
        AuditConfig.from_table(table)
    for part in expected:
        assert part in str(caught.value)


def test_a_scripted_models_script_is_relative_to_the_config_file(tmp_path):
    path = tmp_path / "audit.toml"
    path.write_text('[audit.model]\nprovider = "scripted"\nscript = "replies.json"\n'
                    '[audit.judge]\nprovider = "scripted"\nscript = "judge.json"\n')
    config = AuditConfig.from_toml(path)
    assert isinstance(config.model, ModelSpec) and config.judge is not None
    assert config.model.script == str(tmp_path / "replies.json")
    assert config.judge.script == str(tmp_path / "judge.json")
    assert config.to_json()["model"] == {"provider": "scripted",
                                         "script": str(tmp_path / "replies.json")}
