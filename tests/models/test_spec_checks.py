"""A model entry is checked in one place (models.spec), the same way for the experiment config
and for the preflight reader; unknown keys say which allowed key was probably meant."""

from __future__ import annotations

import dataclasses

import pytest

from parquet_agent.errors import ConfigError
from parquet_agent.experiment.config import ExperimentConfig, Limits, Sample
from parquet_agent.models.spec import ModelSpec, load_model_specs

TABLE = 'name = "a"\nprovider = "openai"\nmodel = "m"\napi_key_env = "K"\n'


def _preflight(tmp_path, extra: str) -> str:
    path = tmp_path / "c.toml"
    path.write_text("[[models]]\n" + TABLE + extra)
    with pytest.raises(ConfigError) as err:
        load_model_specs(path)
    return str(err.value)


@pytest.mark.parametrize("extra, expected", [
    ("temprature = 1\n", "did you mean 'temperature'"),
    ("temperature = 7\n", "outside 0..2"),
    ('reasoning_effort = "huge"\n', "reasoning_effort"),
    ('base_url = "127.0.0.1:8000"\n', "http://"),
    ('provider_pin = []\n', "provider_pin"),
])
def test_the_preflight_reader_checks_a_model_like_the_config(tmp_path, extra, expected):
    assert expected in _preflight(tmp_path, extra)


def test_the_preflight_reader_refuses_a_pasted_key(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("[[models]]\n" + TABLE.replace('"K"', '"sk-proj-abc123def456"'))
    with pytest.raises(ConfigError, match="never the key"):
        load_model_specs(path)


def test_config_records_are_built_normalised_and_stay_frozen(tmp_path):
    judge = ModelSpec(name="judge", provider="rubric", model="rubric")
    config = ExperimentConfig(name="py", corpus="c", questions="q.jsonl", judge=judge,
                              models=[ModelSpec(name="b", provider="baseline", model="baseline",
                                                temperature=1)],
                              strategies=["sql"], sample={"ids": ["Q2", "Q1"]}, base_dir=tmp_path)
    assert config.corpus == (tmp_path / "c").resolve() and config.strategies == ("sql",)
    assert isinstance(config.models, tuple) and config.models[0].temperature == 1.0
    assert config.sample == Sample("ids", ids=("Q2", "Q1"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.name = "other"
    limits = Limits(max_case_cost_usd=2)
    assert limits.to_dict()["max_case_cost_usd"] == 2.0 and limits == Limits(max_case_cost_usd=2.0)
    assert limits.agent_limits().max_tool_calls == Limits().max_tool_calls == 12
