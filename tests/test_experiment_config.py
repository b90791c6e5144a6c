"""The experiment config contract: TOML and objects, clear errors, sampling, hashing."""

from __future__ import annotations

import textwrap

import pytest

from parquet_agent.errors import ConfigError
from parquet_agent.experiment.config import (
    ExperimentConfig,
    Limits,
    Sample,
    load_config,
)
from parquet_agent.models.spec import ModelSpec

GOOD = """
name = "smoke"
corpus = "data/sample"
questions = "data/sample/questions.jsonl"
sample = { n = 2, seed = 7 }
strategies = ["sql", "sql+stream"]
runs_dir = "runs"

[[models]]
name = "flash"
provider = "google"
model = "gemini-2.5-flash"
api_key_env = "GEMINI_API_KEY"
temperature = 0.0
reasoning_effort = "low"

[[models]]
name = "luna"
provider = "openai"
model = "openai/gpt-6-luna"
api_key_env = "OPENROUTER_API_KEY"
base_url = "http://127.0.0.1:8000/v1"
provider_pin = ["openai"]

[judge]
provider = "anthropic"
model = "claude-haiku-4-5"
api_key_env = "ANTHROPIC_API_KEY"

[limits]
max_tool_calls = 12
max_rounds = 16
case_workers = 4
data_workers = 1
cache = "on"
"""


def write(tmp_path, text, name="exp.toml"):
    path = tmp_path / "configs" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def errors_for(tmp_path, text) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text))
    return str(info.value)


def test_contract_example_loads_with_paths_relative_to_the_file(tmp_path):
    config = load_config(write(tmp_path, GOOD))
    assert config.corpus == (tmp_path / "configs" / "data" / "sample").resolve()
    assert config.runs_dir == (tmp_path / "configs" / "runs").resolve()
    assert [m.name for m in config.models] == ["flash", "luna"]
    assert config.models[1].provider_pin == ("openai",)
    assert config.judge.name == "judge" and config.judge.temperature is None
    assert config.limits == Limits()
    assert config.sample == Sample("n", n=2, seed=7)
    assert config.case_ids(["Q1"])[:2] == ("Q1__flash__sql", "Q1__flash__sql+stream")


@pytest.mark.parametrize("patch, expected", [
    ('\ncolour = "red"\n', "exp.toml: unknown key 'colour'"),
    ("\n[limits]\nmax_tool_call = 3\n", "did you mean 'max_tool_calls'"),
])
def test_unknown_top_level_and_limit_keys_are_errors(tmp_path, patch, expected):
    text = GOOD.replace("\n[limits]", "\n[limits_old]") if "[limits]" in patch else GOOD
    if "[limits]" in patch:
        text = text.split("[limits_old]")[0]
    message = errors_for(tmp_path, patch + text if "colour" in patch else text + patch)
    assert expected in message


def test_unknown_model_key_names_the_entry(tmp_path):
    message = errors_for(tmp_path, GOOD.replace('provider_pin = ["openai"]', 'provider_pinn = ["x"]'))
    assert "[[models]][1]" in message and "'provider_pinn'" in message


@pytest.mark.parametrize("old, new, expected", [
    ("max_rounds = 16", 'max_rounds = "many"', "[limits].max_rounds: expected an integer"),
    ("max_rounds = 16", "max_rounds = true", "[limits].max_rounds: expected an integer"),
    ("case_workers = 4", "case_workers = 0", "below the minimum 1"),
    ('cache = "on"', 'cache = "maybe"', '"on" or "off"'),
    ("temperature = 0.0", "temperature = 7", "outside 0..2"),
    ('reasoning_effort = "low"', 'reasoning_effort = "huge"', "reasoning_effort"),
    ('provider = "google"', 'provider = "gooogle"', "[[models]][0].provider"),
    ('name = "luna"', 'name = "flash"', "used twice"),
    ('name = "luna"', 'name = "lu__na"', "not a slug"),
    ('api_key_env = "GEMINI_API_KEY"', 'api_key_env = "sk-proj-abc123def456"', "never the key"),
    ('base_url = "http://127.0.0.1:8000/v1"', 'base_url = "127.0.0.1:8000"', "http://"),
    ('strategies = ["sql", "sql+stream"]', 'strategies = ["vector"]', "'vector' is not one of"),
    ("sample = { n = 2, seed = 7 }", "sample = { n = 2 }", "sample.seed"),
    ("sample = { n = 2, seed = 7 }", "sample = { n = 2, seed = 7, ids = ['Q1'] }", "not both"),
    ("sample = { n = 2, seed = 7 }", 'sample = "some"', 'expected "all"'),
    ('name = "smoke"', "", "missing required key 'name'"),
])
def test_wrong_types_and_values_say_what_and_where(tmp_path, old, new, expected):
    assert old in GOOD
    assert expected in errors_for(tmp_path, GOOD.replace(old, new, 1))


def test_rubric_is_only_a_judge(tmp_path):
    config = load_config(write(tmp_path, GOOD.replace('provider = "anthropic"', 'provider = "rubric"')))
    assert config.judge.provider == "rubric"
    message = errors_for(tmp_path, GOOD.replace('provider = "google"', 'provider = "rubric"'))
    assert "[[models]][0].provider" in message and "only be the [judge]" in message


def test_invalid_toml_and_missing_file(tmp_path):
    assert "not valid TOML" in errors_for(tmp_path, "name = ")
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "nope.toml")


def test_python_objects_get_the_same_checks(tmp_path):
    judge = ModelSpec(name="judge", provider="rubric", model="rubric")
    config = ExperimentConfig(name="py", corpus="c", questions="c/q.jsonl",
                              models=[ModelSpec(name="b", provider="baseline", model="baseline")], judge=judge,
                              sample={"ids": ["Q1", "Q2"]}, base_dir=tmp_path)
    assert config.corpus == (tmp_path / "c").resolve() and config.models[0].model == "baseline"
    assert config.sample.select(["Q2", "Q1", "Q3"]) == ("Q2", "Q1")
    with pytest.raises(ConfigError, match=r"\[\[models\]\]\[0\].temperature"):
        ExperimentConfig(name="py", corpus="c", questions="q", judge=judge, models=[
            ModelSpec(name="x", provider="openai", model="m", temperature=3)])
    with pytest.raises(ConfigError, match="max_tool_calls"):
        Limits(max_tool_calls=-1)
    with pytest.raises(ConfigError, match="at least one model"):
        ExperimentConfig(name="py", corpus="c", questions="q", models=[], judge=judge)


def test_sample_n_is_deterministic_for_a_seed(tmp_path):
    ids = [f"Q{i:03d}" for i in range(100)]
    a = Sample("n", n=20, seed=7).select(ids)
    assert a == Sample("n", n=20, seed=7).select(list(reversed(ids)))[::-1]
    assert len(a) == 20 and a == tuple(sorted(a))  # file order kept
    assert a != Sample("n", n=20, seed=8).select(ids)
    with pytest.raises(ConfigError, match="asks for 101 questions"):
        Sample("n", n=101, seed=1).select(ids)
    assert Sample().select(ids) == tuple(ids)


def test_unknown_sample_id_lists_close_matches():
    with pytest.raises(ConfigError) as info:
        Sample("ids", ids=("Q001", "Q0O2")).select(["Q001", "Q002", "Q003"])
    assert "unknown question id 'Q0O2'" in str(info.value) and "Q002" in str(info.value)
    with pytest.raises(ConfigError, match="more than once"):
        Sample("ids", ids=("Q1", "Q1"))


def test_config_hash_is_canonical_and_sensitive(tmp_path):
    config = load_config(write(tmp_path, GOOD))
    again = ExperimentConfig.from_dict(config.to_dict(), source="copy")
    assert again == config and again.config_hash() == config.config_hash()
    assert config.config_hash().startswith("b2:")
    changed = load_config(write(tmp_path, GOOD.replace("max_tool_calls = 12", "max_tool_calls = 8"),
                                "other.toml"))
    assert changed.config_hash() != config.config_hash()


JUDGE = 'api_key_env = "ANTHROPIC_API_KEY"\n'


@pytest.mark.parametrize("where, patch, expected", [
    ("judge", "batch = 1\n", "[judge].batch: expected true or false"),
    ("judge", "batch = true\nbatch_wait_s = -1\n", "[judge].batch_wait_s: -1 is negative"),
    ("judge", 'batch = true\nbatch_wait_s = "1h"\n', "[judge].batch_wait_s: expected a number"),
    ("judge", "batch_wiat_s = 5\n", "did you mean 'batch_wait_s'"),
    ("model", "batch = true\n", "[[models]][0].batch: batch judging is a [judge] key"),
    ("rubric", "batch = true\n", "provider 'rubric' has no batch API"),
])
def test_judge_batch_is_checked_with_a_clear_error(tmp_path, where, patch, expected):
    text = GOOD
    if where == "model":
        text = text.replace('reasoning_effort = "low"\n', 'reasoning_effort = "low"\n' + patch)
    elif where == "rubric":
        text = text.replace('provider = "anthropic"\nmodel = "claude-haiku-4-5"\n' + JUDGE,
                            'provider = "rubric"\n' + patch)
    else:
        text = text.replace(JUDGE, JUDGE + patch)
    assert expected in errors_for(tmp_path, text)


def test_judge_batch_is_frozen_only_when_on_and_its_wait_may_change_on_resume(tmp_path):
    from parquet_agent.store.manifest import compare_frozen

    plain = load_config(write(tmp_path, GOOD))
    batch = load_config(write(tmp_path, GOOD.replace(JUDGE, JUDGE + "batch = true\n"), "b.toml"))
    assert plain.judge.batch is False and batch.judge.batch is True
    assert batch.judge.batch_wait_s == 3600
    assert "batch" not in plain.to_dict()["judge"]  # configs without it keep their hash
    assert batch.to_dict()["judge"]["batch"] is True
    assert ExperimentConfig.from_dict(batch.to_dict()).judge == batch.judge  # round trip
    shorter = load_config(write(tmp_path, GOOD.replace(
        JUDGE, JUDGE + "batch = true\nbatch_wait_s = 60\n"), "s.toml"))
    allowed: list[str] = []
    assert compare_frozen({"config": batch.to_dict()}, {"config": shorter.to_dict()},
                          allowed) == []
    assert allowed == ["config.judge.batch_wait_s: 3600.0 -> 60"]
    refused = compare_frozen({"config": plain.to_dict()}, {"config": batch.to_dict()})
    assert refused and all("config.judge.batch" in r for r in refused)


@pytest.mark.parametrize("cap", ["nan", "inf", "-inf"])
def test_a_cost_cap_that_is_not_a_finite_number_is_refused(tmp_path, cap):
    """TOML's nan and inf are floats: a NaN cap never tripped and froze `NaN` (not JSON) into
    the manifest (issue 26 item 6: every field checked on construction)."""
    text = GOOD.replace("[limits]", f"[limits]\nmax_case_cost_usd = {cap}", 1)
    assert "[limits].max_case_cost_usd" in errors_for(tmp_path, text)
    assert "leave the key out for no cap" in errors_for(tmp_path, text)


def test_records_from_python_take_lists_and_say_what_a_wrong_type_is(tmp_path):
    from parquet_agent.experiment.config import Gates

    assert Gates(["rules"]).action == ("rules",)  # (was refused: "expected a list, got list")
    assert Sample("ids", ids=["Q1"]).ids == ("Q1",)
    judge = ModelSpec(name="judge", provider="rubric", model="rubric")
    model = ModelSpec(name="b", provider="baseline", model="baseline")
    with pytest.raises(ConfigError, match="base_dir: expected a folder path"):
        ExperimentConfig(name="py", corpus="c", questions="q", models=[model], judge=judge,
                         base_dir=3)  # type: ignore[arg-type]  (was a TypeError)


@pytest.mark.parametrize("run", ["run-v1", "run-v2", "run-v3"])
def test_the_checked_in_runs_configs_read_back_with_every_frozen_value(run):
    """Each frozen key reads back to its value; what `to_dict` adds are model keys added since
    (at their defaults: `cache_prompts`, `structured_output`, `context_tokens`, `price`), and the
    config read back is stable under its own hash."""
    import json
    from pathlib import Path

    manifest = json.loads((Path(__file__).parent / "store" / "fixtures" / run
                           / "manifest.json").read_text())
    frozen = manifest["config"]
    config = ExperimentConfig.from_dict(frozen, source="manifest.json")
    now = config.to_dict()
    later = {"cache_prompts": True, "structured_output": True, "context_tokens": None,
             "price": None}
    for key, value in frozen.items():
        if key in ("models", "judge"):
            entries = now[key] if key == "models" else [now[key]]
            olds = value if key == "models" else [value]
            for old, new in zip(olds, entries, strict=True):
                assert {k: v for k, v in new.items() if k in old} == old
                assert {k: v for k, v in new.items() if k not in old}.items() <= later.items()
        else:
            assert now[key] == value, key
    again = ExperimentConfig.from_dict(now, source="manifest.json")
    assert again == config and again.config_hash() == config.config_hash()
