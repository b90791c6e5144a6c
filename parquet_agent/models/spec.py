"""`ModelSpec`: one `[[models]]` entry (or `[judge]`) of the experiment config, and the one place
a model entry is checked: `model_spec_from_table` (a TOML table; the experiment config and the
preflight reader `load_model_specs` both use it) and `validate_model` (a spec built in Python).

Contract fields (DESIGN.md): `name, provider, model, api_key_env, base_url, provider_pin,
temperature, reasoning_effort`. Ours, all optional: `max_output_tokens`, `max_attempts`,
`timeout_s`, `fail_on_pin_mismatch`, `tool_call_content` (`""` for llama.cpp-style local
servers), `max_tokens_field`, `script` (provider `scripted`: a JSON file with a list of
replies), `price` (`"free"` for a local model, `"list"` for an endpoint that bills the vendor's
list price, or a table of USD per 1M tokens: `input`, `output`, `cached_input`, `cache_write`,
`reasoning`; wins over the bundled price table, which prices only the vendor's own endpoint),
`cache_prompts` (default true: ask for prompt caching where the provider needs it, Anthropic),
`context_tokens` (the model's context window; a judge with one fits its evidence to it),
`structured_output` (default true: a judge asks for its judgment as a JSON schema response
format or a forced tool call; false for a server that rejects them). The `[judge]` only:
`batch` (default false: true sends every judge request of a run through the provider's batch
API at its batch price, after the agents ran; openai, anthropic or google judges) and
`batch_wait_s` (3600: how long `run` waits for the batch before it ends saying so; a resume or
`parquet-agent judge RUN --batch` picks the same batch up). Both are written into the frozen
config only when `batch` is on, so configs without it keep their hash.
Unknown keys are a `ConfigError`, never ignored. The key itself is never part of a
spec: only the name of the variable that holds it.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from parquet_agent.checks import check_keys, check_type, fail, join
from parquet_agent.errors import ConfigError
from parquet_agent.models.prices import declared_price

PROVIDERS = ("openai", "anthropic", "google", "scripted", "baseline")
JUDGE_PROVIDERS = PROVIDERS + ("rubric",)  # rubric: the offline judge (built by the judge piece)
OFFLINE_PROVIDERS = ("scripted", "baseline", "rubric")
BATCH_PROVIDERS = ("openai", "anthropic", "google")  # models.batch has their batch APIs
BATCH_KEYS = ("batch", "batch_wait_s")  # frozen only when batch is on (older hashes hold)
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
_SLUG = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9.+-]|_(?!_))*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# what a pasted secret looks like: a vendor prefix, or long with lowercase letters and digits
_KEYLIKE = re.compile(r"^(sk-|sk_|AIza|xai-|gsk_)|^(?=.*[a-z])(?=.*[0-9]).{24,}$")


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
    price: Any = None  # "free", "list" or {input, output, ...}: see prices.declared_price
    cache_prompts: bool = True
    context_tokens: int | None = None
    structured_output: bool = True
    batch: bool = False  # the judge only: judge by the provider's batch API after the agents
    batch_wait_s: float = 3600.0  # with batch: how long a run waits for its batch


MODEL_KEYS = tuple(f.name for f in fields(ModelSpec))


def model_spec_from_table(table: Any, *, where: str, judge: bool = False,
                          base_dir: Path | None = None) -> ModelSpec:
    """Build and check a `ModelSpec` from one TOML table; `where` names it in error messages
    (e.g. `smoke.toml: [[models]][2]`). The judge's name defaults to `judge` and it may be the
    offline `rubric`; `model` defaults to the provider for offline providers. A relative
    `script` path is resolved against `base_dir`."""
    check_type(where, table, Mapping, "a table")
    check_keys(where, table, MODEL_KEYS)
    data = dict(table)
    if "name" not in data:
        if not judge:
            raise fail(where, "missing required key 'name' (the slug used in case ids)")
        data["name"] = "judge"
    provider = data.get("provider")
    _check_provider(where, provider, judge)
    if "model" not in data:
        if provider not in OFFLINE_PROVIDERS:
            raise fail(join(where, "model"), f"provider {provider!r} needs a model id")
        data["model"] = provider
    if provider not in OFFLINE_PROVIDERS and not data.get("api_key_env"):
        raise fail(where, f"provider {provider!r} needs `api_key_env`, the name of the "
                   "environment variable that holds the key")
    if isinstance(data.get("provider_pin"), str):  # one upstream name
        data["provider_pin"] = (data["provider_pin"],)
    if data.get("script") and base_dir is not None and not Path(data["script"]).is_absolute():
        data["script"] = str(base_dir / data["script"])
    return validate_model(ModelSpec(**data), where, judge=judge)


def validate_model(spec: ModelSpec, where: str, *, judge: bool = False) -> ModelSpec:
    """Check a spec and return it normalised (a new record: provider_pin a tuple, temperature
    a float): the name is a slug, `rubric` only for the judge, a model id for network providers,
    temperature 0-2, a known reasoning effort, an http(s) base_url, and an `api_key_env` that is
    a variable name, not a pasted key. ConfigError naming `where` and the key otherwise."""
    w = where
    check_type(w, spec, ModelSpec, "a ModelSpec (parquet_agent.models.spec)")
    check_type(join(w, "name"), spec.name, str, "a string")
    if not _SLUG.match(spec.name) or spec.name.endswith("_"):
        raise fail(join(w, "name"), f"{spec.name!r} is not a slug: use letters, digits, "
                   "'.', '-', '+' and single '_' (it goes into case ids, joined by '__')")
    _check_provider(w, spec.provider, judge)
    check_type(join(w, "model"), spec.model, str, "a string")
    if spec.provider not in OFFLINE_PROVIDERS and spec.model == spec.provider:
        raise fail(join(w, "model"), f"provider {spec.provider!r} needs a model id")
    if spec.api_key_env is not None:
        check_type(join(w, "api_key_env"), spec.api_key_env, str, "a string")
        if _KEYLIKE.search(spec.api_key_env) or not _ENV_NAME.match(spec.api_key_env):
            raise fail(join(w, "api_key_env"), "must be the NAME of an environment variable "
                       "(e.g. OPENAI_API_KEY), never the key itself")
    if spec.base_url is not None:
        check_type(join(w, "base_url"), spec.base_url, str, "a string")
        if not spec.base_url.startswith(("http://", "https://")):
            raise fail(join(w, "base_url"), f"{spec.base_url!r} must start with http:// or https://")
    if spec.provider_pin is not None:
        check_type(join(w, "provider_pin"), spec.provider_pin, (list, tuple), "a list of strings")
        if not spec.provider_pin:
            raise fail(join(w, "provider_pin"), "is empty: leave it out to allow any provider")
        for item in spec.provider_pin:
            check_type(join(w, "provider_pin"), item, str, "a list of strings")
        spec = replace(spec, provider_pin=tuple(spec.provider_pin))
    if spec.temperature is not None:
        check_type(join(w, "temperature"), spec.temperature, (int, float), "a number")
        if not 0 <= spec.temperature <= 2:
            raise fail(join(w, "temperature"), f"{spec.temperature} is outside 0..2")
        spec = replace(spec, temperature=float(spec.temperature))
    if spec.reasoning_effort is not None and spec.reasoning_effort not in REASONING_EFFORTS:
        raise fail(join(w, "reasoning_effort"),
                   f"{spec.reasoning_effort!r} is not one of {', '.join(REASONING_EFFORTS)}")
    if spec.price is not None:
        try:
            declared_price(spec.price, model=spec.model, where=join(w, "price"))
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
    check_type(join(w, "cache_prompts"), spec.cache_prompts, bool, "true or false")
    check_type(join(w, "structured_output"), spec.structured_output, bool, "true or false")
    _check_batch(w, spec, judge)
    if spec.context_tokens is not None:
        check_type(join(w, "context_tokens"), spec.context_tokens, int, "an integer")
        if spec.context_tokens < 1024:
            raise fail(join(w, "context_tokens"), "must be at least 1024")
    return spec


def _check_batch(where: str, spec: ModelSpec, judge: bool) -> None:
    check_type(join(where, "batch"), spec.batch, bool, "true or false")
    check_type(join(where, "batch_wait_s"), spec.batch_wait_s, (int, float),
               "a number of seconds")
    if spec.batch and not judge:
        raise fail(join(where, "batch"), "batch judging is a [judge] key: answer models are "
                   "called turn by turn; put `batch = true` under [judge]")
    if spec.batch and spec.provider not in BATCH_PROVIDERS:
        raise fail(join(where, "batch"), f"provider {spec.provider!r} has no batch API; batch "
                   f"judging needs a {', '.join(BATCH_PROVIDERS)} judge (leave `batch` out to "
                   "judge one request at a time)")
    if spec.batch_wait_s < 0:
        raise fail(join(where, "batch_wait_s"), f"{spec.batch_wait_s} is negative")


def _check_provider(where: str, provider: Any, judge: bool) -> None:
    providers = JUDGE_PROVIDERS if judge else PROVIDERS
    if provider not in providers:
        extra = " ('rubric' can only be the [judge])" if provider == "rubric" else ""
        raise fail(join(where, "provider"),
                   f"{provider!r} is not one of {', '.join(providers)}{extra}")


def model_to_dict(spec: ModelSpec) -> dict[str, Any]:
    """A model entry as TOML-shaped JSON (tuples as lists); the batch keys only when on."""
    out = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(spec).items()}
    if not spec.batch:  # off: the entry (and the config hash) is what it was before them
        for key in BATCH_KEYS:
            del out[key]
    return out


def load_model_specs(path: Path) -> tuple[tuple[ModelSpec, ...], ModelSpec | None]:
    """Read only `[[models]]` and `[judge]` of an experiment config: (models, judge or None),
    with the same checks as the experiment config. A `provider = "rubric"` judge (offline,
    built by the judge piece) comes back as a spec with that provider."""
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
    if "judge" in data:  # a `rubric` judge comes back as a spec with that provider
        judge = model_spec_from_table(data["judge"], where=f"{path}: [judge]", judge=True,
                                      base_dir=path.parent)
    return models, judge
