"""`ModelSpec`: one `[[models]]` entry (or `[judge]`) of the experiment config, and the small
reader preflight uses. The experiment config loader should reuse `model_spec_from_table`.

Contract fields (DESIGN.md): `name, provider, model, api_key_env, base_url, provider_pin,
temperature, reasoning_effort`. Ours, all optional: `max_output_tokens`, `max_attempts`,
`timeout_s`, `fail_on_pin_mismatch`, `tool_call_content` (`""` for llama.cpp-style local
servers), `max_tokens_field`, `script` (provider `scripted`: a JSON file with a list of
replies). Unknown keys are a `ConfigError`, never ignored. The key itself is never part of a
spec: only the name of the variable that holds it.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping

from parquet_agent.errors import ConfigError

PROVIDERS = ("openai", "anthropic", "google", "scripted", "baseline")


@dataclass(frozen=True)
class ModelSpec:
    name: str
    provider: str
    model: str
    api_key_env: str | None = None
    base_url: str | None = None
    provider_pin: tuple[str, ...] | None = None
    temperature: float | None = None
    reasoning_effort: str | None = None
    max_output_tokens: int | None = None
    max_attempts: int = 4
    timeout_s: float = 120.0
    fail_on_pin_mismatch: bool = True
    tool_call_content: str | None = None
    max_tokens_field: str = "max_completion_tokens"
    script: str | None = None


_FIELDS = {f.name for f in fields(ModelSpec)}


def model_spec_from_table(table: Mapping[str, Any], *, where: str, default_name: str | None = None,
                          base_dir: Path | None = None) -> ModelSpec:
    """Build a `ModelSpec` from one TOML table; `where` names it in error messages
    (e.g. `[[models]] #2`). A relative `script` path is resolved against `base_dir`."""
    unknown = sorted(set(table) - _FIELDS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(_FIELDS)}")
    data = dict(table)
    if default_name and "name" not in data:
        data["name"] = default_name
    for key in ("name", "provider"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise ConfigError(f"{where}: `{key}` is required and must be a non-empty string")
    if data["provider"] not in PROVIDERS:
        raise ConfigError(f"{where}: provider {data['provider']!r} is not one of {list(PROVIDERS)}")
    data.setdefault("model", data["provider"])
    if data["provider"] in ("openai", "anthropic", "google") and not data.get("api_key_env"):
        raise ConfigError(f"{where}: provider {data['provider']!r} needs `api_key_env`, the name "
                          "of the environment variable that holds the key")
    pin = data.get("provider_pin")
    if pin is not None:
        if isinstance(pin, str):
            pin = [pin]
        if not isinstance(pin, list) or not all(isinstance(p, str) for p in pin):
            raise ConfigError(f"{where}: provider_pin must be a list of provider names")
        data["provider_pin"] = tuple(pin)
    if data.get("script") and base_dir is not None and not Path(data["script"]).is_absolute():
        data["script"] = str(base_dir / data["script"])
    try:
        return ModelSpec(**data)
    except TypeError as exc:  # pragma: no cover - guarded by the key check above
        raise ConfigError(f"{where}: {exc}") from exc


def load_model_specs(path: Path) -> tuple[tuple[ModelSpec, ...], ModelSpec | None]:
    """Read only `[[models]]` and `[judge]` of an experiment config: (models, judge or None).
    A `provider = "rubric"` judge (offline, built by the judge piece) comes back as a spec with
    that provider, unchecked."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError as exc:
        raise ConfigError(f"config {path} does not exist") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config {path} is not valid TOML: {exc}") from exc
    tables = data.get("models", [])
    if not isinstance(tables, list) or not tables:
        raise ConfigError(f"config {path}: needs at least one [[models]] table")
    models = tuple(
        model_spec_from_table(t, where=f"{path}: [[models]] #{i + 1}", base_dir=path.parent)
        for i, t in enumerate(tables)
    )
    names = [m.name for m in models]
    if len(set(names)) != len(names):
        raise ConfigError(f"config {path}: model names must be unique, got {names}")
    judge = None
    if isinstance(data.get("judge"), dict) and data["judge"].get("provider") == "rubric":
        # The offline rubric judge is built by the judge piece, not here; preflight skips it.
        judge = ModelSpec(name=data["judge"].get("name", "judge"), provider="rubric",
                          model=data["judge"].get("model", "rubric"))
    elif "judge" in data:
        judge = model_spec_from_table(data["judge"], where=f"{path}: [judge]",
                                      default_name="judge", base_dir=path.parent)
    return models, judge
