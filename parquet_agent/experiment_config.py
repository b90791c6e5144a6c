"""The experiment config (a contract of DESIGN.md): load it from TOML or build it from objects.

    config = load_config("configs/smoke.toml")          # or ExperimentConfig.from_toml(...)
    config = ExperimentConfig(name="smoke", corpus="data/sample", questions="...",
                              models=[ModelSpec(name="flash", provider="google", model="...",
                                                api_key_env="GEMINI_API_KEY")],
                              judge=ModelSpec(name="judge", provider="rubric", model="rubric"))
    ids = config.sample.select(all_question_ids)         # deterministic for a seed
    config.config_hash()                                  # "b2:<hex>" over canonical JSON

Every record is a frozen dataclass validated on construction, so a config built in Python gets
the same checks as one read from TOML. Errors are `ConfigError` naming the key and where it was
(`smoke.toml: [[models]][1].temperature: ...`). Unknown keys are errors, never ignored.

Keys (the contract's keys, unchanged, plus documented optional ones):

- top level: `name`, `corpus`, `questions`, `sample` (`"all"` | `{n, seed}` | `{ids=[...]}`,
  default `"all"`), `strategies` (subset of `sql`, `sql+stream`, default both; `none` is our
  addition: no tools, closed book), `runs_dir` (default `runs`), `[[models]]` (at least one),
  `[judge]`, `[limits]`, and our optional `scope` (a JSON file `{"schema_version": 1, "scopes":
  {question_id: [file_stem, ...]}}`: each case's tools see only its question's filings).
- a model (`[[models]]` entry or `[judge]`): `name` (a slug; it goes into case ids
  `<question_id>__<name>__<strategy>`, so it may not contain `__`; unique across models; the judge
  defaults to `judge`), `provider` (`openai | anthropic | google | scripted | baseline`; the judge
  may also be `rubric`, the offline judge built from deterministic checks), `model` (required for
  network providers; defaults to the provider name for offline ones), `api_key_env` (the
  variable's name, never the key), `base_url`, `provider_pin` (list of upstream names),
  `temperature` (0-2), `reasoning_effort` (`none|minimal|low|medium|high|xhigh|max`).
- `[limits]`: `max_tool_calls` (12), `max_rounds` (16), `case_workers` (4), `data_workers` (1),
  `cache` (`on|off`), and optional: `max_judge_attempts` (judge calls before a malformed
  judgment is recorded as unscored, 2), `max_case_tokens` and `max_case_cost_usd` (per-case
  caps, none by default). HTTP attempts per model call are the model's own `max_attempts`.

Relative paths resolve against the TOML file's folder (or `base_dir` for objects / dicts; the
current directory when none is given). `to_dict()` is the JSON form frozen into the manifest;
`config_hash()` hashes its canonical JSON (sorted keys, no spaces, UTF-8) with BLAKE2b-256.
Models are `parquet_agent.models.spec.ModelSpec` records (built by the models piece's
`model_spec_from_table`, which also accepts its optional keys: `max_output_tokens`,
`max_attempts`, `timeout_s`, `fail_on_pin_mismatch`, `tool_call_content`, `max_tokens_field`,
`script`), so they go to `models.build_model` as they are. A `rubric` judge is a ModelSpec with
`provider="rubric"`, which `build_model` does not build: the judge piece handles it.
"""

from __future__ import annotations

import difflib
import random
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from parquet_agent.errors import ConfigError
from parquet_agent.files import canonical_json, tagged_hash
from parquet_agent.models.spec import ModelSpec, model_spec_from_table

SCHEMA_VERSION = 1
STRATEGIES = ("sql", "sql+stream", "none")  # "none": no tools (closed book)
DEFAULT_STRATEGIES = ("sql", "sql+stream")
MODEL_PROVIDERS = ("openai", "anthropic", "google", "scripted", "baseline")
JUDGE_PROVIDERS = MODEL_PROVIDERS + ("rubric",)
OFFLINE_PROVIDERS = ("scripted", "baseline", "rubric")
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
_SLUG = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9.+-]|_(?!_))*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# what a pasted secret looks like: a vendor prefix, or long with lowercase letters and digits
_KEYLIKE = re.compile(r"^(sk-|sk_|AIza|xai-|gsk_)|^(?=.*[a-z])(?=.*[0-9]).{24,}$")


# -- checks shared by every record ------------------------------------------------------------


def _fail(where: str, message: str) -> ConfigError:
    return ConfigError(f"{where}: {message}" if where else message)


def _check_type(where: str, value: Any, types: type | tuple[type, ...], what: str) -> None:
    # bool is an int subclass: `max_rounds = true` must not pass as 1
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise _fail(where, f"expected {what}, got {value!r}")
    if not isinstance(value, types):
        raise _fail(where, f"expected {what}, got {type(value).__name__} {value!r}")


def _check_keys(where: str, data: Mapping[str, Any], allowed: Sequence[str]) -> None:
    for key in data:
        if key not in allowed:
            near = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise _fail(where, f"unknown key {key!r}{hint}; allowed: {', '.join(allowed)}")


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where and not where.endswith(":") else f"{where} {key}".strip()


# -- records ------------------------------------------------------------------------------------


def validate_model(spec: ModelSpec, where: str, *, judge: bool = False) -> ModelSpec:
    """Check one model entry beyond what `ModelSpec` itself checks; return it (normalised).

    `models.spec.model_spec_from_table` checks keys, provider and api_key_env presence; here:
    the name is a slug, `rubric` only for the judge, temperature 0-2, a known reasoning effort,
    an http(s) base_url, and an `api_key_env` that is a variable name, not a pasted key.
    """
    w = where
    _check_type(w, spec, ModelSpec, "a ModelSpec (parquet_agent.models.spec)")
    _check_type(_join(w, "name"), spec.name, str, "a string")
    if not _SLUG.match(spec.name) or spec.name.endswith("_"):
        raise _fail(_join(w, "name"), f"{spec.name!r} is not a slug: use letters, digits, "
                    "'.', '-', '+' and single '_' (it goes into case ids, joined by '__')")
    providers = JUDGE_PROVIDERS if judge else MODEL_PROVIDERS
    if spec.provider not in providers:
        extra = " ('rubric' can only be the [judge])" if spec.provider == "rubric" else ""
        raise _fail(_join(w, "provider"),
                    f"{spec.provider!r} is not one of {', '.join(providers)}{extra}")
    _check_type(_join(w, "model"), spec.model, str, "a string")
    if spec.provider not in OFFLINE_PROVIDERS and spec.model == spec.provider:
        raise _fail(_join(w, "model"), f"provider {spec.provider!r} needs a model id")
    if spec.api_key_env is not None:
        _check_type(_join(w, "api_key_env"), spec.api_key_env, str, "a string")
        if _KEYLIKE.search(spec.api_key_env) or not _ENV_NAME.match(spec.api_key_env):
            raise _fail(_join(w, "api_key_env"), "must be the NAME of an environment variable "
                        "(e.g. OPENAI_API_KEY), never the key itself")
    if spec.base_url is not None:
        _check_type(_join(w, "base_url"), spec.base_url, str, "a string")
        if not spec.base_url.startswith(("http://", "https://")):
            raise _fail(_join(w, "base_url"), f"{spec.base_url!r} must start with http:// or https://")
    if spec.provider_pin is not None:
        _check_type(_join(w, "provider_pin"), spec.provider_pin, (list, tuple), "a list of strings")
        if not spec.provider_pin:
            raise _fail(_join(w, "provider_pin"), "is empty: leave it out to allow any provider")
        for item in spec.provider_pin:
            _check_type(_join(w, "provider_pin"), item, str, "a list of strings")
        spec = replace(spec, provider_pin=tuple(spec.provider_pin))
    if spec.temperature is not None:
        _check_type(_join(w, "temperature"), spec.temperature, (int, float), "a number")
        if not 0 <= spec.temperature <= 2:
            raise _fail(_join(w, "temperature"), f"{spec.temperature} is outside 0..2")
        spec = replace(spec, temperature=float(spec.temperature))
    if spec.reasoning_effort is not None and spec.reasoning_effort not in REASONING_EFFORTS:
        raise _fail(_join(w, "reasoning_effort"),
                    f"{spec.reasoning_effort!r} is not one of {', '.join(REASONING_EFFORTS)}")
    return spec


def model_to_dict(spec: ModelSpec) -> dict[str, Any]:
    """A model entry as TOML-shaped JSON (tuples as lists)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(spec).items()}


_MODEL_KEYS = tuple(f.name for f in fields(ModelSpec))


@dataclass(frozen=True)
class Sample:
    """Which questions to run: `kind` is `all`, `n` (random `n` of all, seeded) or `ids`."""

    kind: str = "all"
    n: int | None = None
    seed: int | None = None
    ids: tuple[str, ...] | None = None
    _where: str = field(default="sample", repr=False, compare=False)

    def __post_init__(self) -> None:
        w = self._where
        if self.kind == "all":
            if (self.n, self.seed, self.ids) != (None, None, None):
                raise _fail(w, '"all" takes no n, seed or ids')
        elif self.kind == "n":
            _check_type(_join(w, "n"), self.n, int, "a positive integer")
            _check_type(_join(w, "seed"), self.seed, int, "an integer (needed for a repeatable sample)")
            if self.n < 1:
                raise _fail(_join(w, "n"), f"{self.n} is not a positive integer")
            if self.ids is not None:
                raise _fail(w, "give either {n, seed} or {ids}, not both")
        elif self.kind == "ids":
            _check_type(_join(w, "ids"), self.ids, (list, tuple), "a list of question ids")
            if not self.ids:
                raise _fail(_join(w, "ids"), "is empty")
            for qid in self.ids:
                _check_type(_join(w, "ids"), qid, str, "a list of question id strings")
            dupes = sorted({q for q in self.ids if list(self.ids).count(q) > 1})
            if dupes:
                raise _fail(_join(w, "ids"), f"lists {', '.join(dupes)} more than once")
            if self.n is not None or self.seed is not None:
                raise _fail(w, "give either {n, seed} or {ids}, not both")
            object.__setattr__(self, "ids", tuple(self.ids))
        else:
            raise _fail(w, f"kind {self.kind!r} is not one of all, n, ids")

    @classmethod
    def parse(cls, value: Any, where: str = "sample") -> Sample:
        """From the TOML forms: `"all"`, `{n=20, seed=7}` or `{ids=["Q001"]}`."""
        if value == "all":
            return cls("all", _where=where)
        if not isinstance(value, Mapping):
            raise _fail(where, f'expected "all", {{n, seed}} or {{ids}}, got {value!r}')
        _check_keys(where, value, ("n", "seed", "ids"))
        if "ids" in value:
            return cls("ids", n=value.get("n"), seed=value.get("seed"), ids=value["ids"], _where=where)
        if "n" not in value:
            raise _fail(where, "needs n and seed, or ids")
        return cls("n", n=value["n"], seed=value.get("seed"), _where=where)

    def select(self, all_ids: Sequence[str]) -> tuple[str, ...]:
        """The chosen question ids, in the order of `all_ids` (the questions file order).

        `n`: a seeded random sample of the sorted ids, so it does not depend on file order.
        Raises ConfigError for an unknown id (listing close matches) or n larger than the set.
        """
        if self.kind == "all":
            return tuple(all_ids)
        known = set(all_ids)
        if self.kind == "ids":
            for qid in self.ids or ():
                if qid not in known:
                    near = difflib.get_close_matches(qid, sorted(known), n=3, cutoff=0.5)
                    hint = f"; close matches: {', '.join(near)}" if near else ""
                    raise _fail(_join(self._where, "ids"),
                                f"unknown question id {qid!r} ({len(known)} questions){hint}")
            chosen = set(self.ids or ())
        else:
            if self.n > len(known):
                raise _fail(_join(self._where, "n"),
                            f"asks for {self.n} questions but the questions file has {len(known)}")
            chosen = set(random.Random(self.seed).sample(sorted(known), self.n))
        return tuple(q for q in all_ids if q in chosen)

    def to_json(self) -> Any:
        if self.kind == "all":
            return "all"
        if self.kind == "n":
            return {"n": self.n, "seed": self.seed}
        return {"ids": list(self.ids or ())}


@dataclass(frozen=True)
class Limits:
    """Per-case limits and concurrency. The first five keys are the contract's."""

    max_tool_calls: int = 12
    max_rounds: int = 16
    case_workers: int = 4
    data_workers: int = 1
    cache: str = "on"
    max_judge_attempts: int = 2
    max_case_tokens: int | None = None
    max_case_cost_usd: float | None = None
    _where: str = field(default="[limits]", repr=False, compare=False)

    def __post_init__(self) -> None:
        w = self._where
        minimum = {"max_tool_calls": 0, "max_rounds": 1, "case_workers": 1, "data_workers": 1,
                   "max_judge_attempts": 1}
        for key, low in minimum.items():
            value = getattr(self, key)
            _check_type(_join(w, key), value, int, f"an integer >= {low}")
            if value < low:
                raise _fail(_join(w, key), f"{value} is below the minimum {low}")
        if self.cache not in ("on", "off"):
            raise _fail(_join(w, "cache"), f'{self.cache!r} is not "on" or "off"')
        if self.max_case_tokens is not None:
            _check_type(_join(w, "max_case_tokens"), self.max_case_tokens, int, "a positive integer")
            if self.max_case_tokens < 1:
                raise _fail(_join(w, "max_case_tokens"), "must be positive")
        if self.max_case_cost_usd is not None:
            _check_type(_join(w, "max_case_cost_usd"), self.max_case_cost_usd, (int, float), "a number")
            if self.max_case_cost_usd <= 0:
                raise _fail(_join(w, "max_case_cost_usd"), "must be positive")
            object.__setattr__(self, "max_case_cost_usd", float(self.max_case_cost_usd))

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}


_LIMIT_KEYS = tuple(f.name for f in fields(Limits) if not f.name.startswith("_"))
_TOP_KEYS = ("name", "corpus", "questions", "sample", "strategies", "runs_dir", "models",
             "judge", "limits", "scope")


@dataclass(frozen=True)
class ExperimentConfig:
    """A whole experiment. Paths are absolute once constructed (resolved against `base_dir`)."""

    name: str
    corpus: Path
    questions: Path
    models: tuple[ModelSpec, ...]
    judge: ModelSpec
    strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    sample: Sample = field(default_factory=Sample)
    runs_dir: Path = Path("runs")
    limits: Limits = field(default_factory=Limits)
    scope: Path | None = None  # JSON: {"scopes": {question_id: [file_stem, ...]}}
    base_dir: Path | None = field(default=None, compare=False)
    source: str = field(default="config", compare=False, repr=False)

    def __post_init__(self) -> None:
        s = f"{self.source}:"
        _check_type(f"{s} name", self.name, str, "a string")
        if not self.name.strip():
            raise _fail(f"{s} name", "is empty")
        base = Path(self.base_dir) if self.base_dir is not None else Path.cwd()
        for key in ("corpus", "questions", "runs_dir", "scope"):
            value = getattr(self, key)
            if value is None and key == "scope":
                continue
            _check_type(f"{s} {key}", value, (str, Path), "a path string")
            object.__setattr__(self, key, (base / Path(value)).resolve())
        if isinstance(self.sample, (str, Mapping)):
            object.__setattr__(self, "sample", Sample.parse(self.sample, f"{s} sample"))
        _check_type(f"{s} sample", self.sample, Sample, "a Sample")
        _check_type(f"{s} strategies", self.strategies, (list, tuple), "a list of strategy names")
        if not self.strategies:
            raise _fail(f"{s} strategies", f"is empty; choose from {', '.join(STRATEGIES)}")
        for strategy in self.strategies:
            if strategy not in STRATEGIES:
                raise _fail(f"{s} strategies", f"{strategy!r} is not one of {', '.join(STRATEGIES)}")
        if len(set(self.strategies)) != len(self.strategies):
            raise _fail(f"{s} strategies", "lists a strategy twice")
        object.__setattr__(self, "strategies", tuple(self.strategies))
        _check_type(f"{s} [[models]]", self.models, (list, tuple), "a list of models")
        if not self.models:
            raise _fail(f"{s} [[models]]", "needs at least one model")
        seen: set[str] = set()
        models = []
        for i, model in enumerate(self.models):
            model = validate_model(model, f"{s} [[models]][{i}]")
            if model.script and not Path(model.script).is_absolute():
                model = replace(model, script=str((base / model.script).resolve()))
            if model.name in seen:
                raise _fail(f"{s} [[models]][{i}].name", f"{model.name!r} is used twice; names "
                            "must be unique (they go into case ids)")
            seen.add(model.name)
            models.append(model)
        object.__setattr__(self, "models", tuple(models))
        object.__setattr__(self, "judge", validate_model(self.judge, f"{s} [judge]", judge=True))
        _check_type(f"{s} [limits]", self.limits, Limits, "a Limits")

    # -- loading --------------------------------------------------------------------------------

    @classmethod
    def from_toml(cls, path: str | Path) -> ExperimentConfig:
        """Read a TOML file; relative paths resolve against its folder."""
        path = Path(path)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"{path}: no such config file") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path.name}: not valid TOML ({exc})") from exc
        return cls.from_dict(data, base_dir=path.resolve().parent, source=path.name)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, base_dir: str | Path | None = None,
                  source: str = "config") -> ExperimentConfig:
        """Build from the TOML-shaped mapping (also what `to_dict()` returns)."""
        s = f"{source}:"
        _check_keys(source, data, _TOP_KEYS)
        for key in ("name", "corpus", "questions", "models", "judge"):
            if key not in data:
                raise _fail(source, f"missing required key {key!r}")
        models_data = data["models"]
        _check_type(f"{s} [[models]]", models_data, list, "an array of tables ([[models]])")
        base = Path(base_dir) if base_dir else None
        models = tuple(_model(m, f"{s} [[models]][{i}]", judge=False, base_dir=base)
                       for i, m in enumerate(models_data))
        judge = _model(data["judge"], f"{s} [judge]", judge=True, base_dir=base)
        limits_data = data.get("limits", {})
        _check_type(f"{s} [limits]", limits_data, Mapping, "a table")
        _check_keys(f"{s} [limits]", limits_data, _LIMIT_KEYS)
        limits = Limits(**limits_data, _where=f"{s} [limits]")
        kwargs: dict[str, Any] = {}
        if "strategies" in data:
            kwargs["strategies"] = data["strategies"]
        if "runs_dir" in data:
            kwargs["runs_dir"] = data["runs_dir"]
        if "scope" in data:
            kwargs["scope"] = data["scope"]
        return cls(name=data["name"], corpus=data["corpus"], questions=data["questions"],
                   models=models, judge=judge, sample=Sample.parse(data.get("sample", "all"),
                                                                   f"{s} sample"),
                   limits=limits, base_dir=Path(base_dir) if base_dir else None, source=source,
                   **kwargs)

    # -- output ---------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The JSON form frozen into the manifest (absolute paths; loads back with from_dict)."""
        optional = {"scope": str(self.scope)} if self.scope is not None else {}
        return optional | {
            "name": self.name,
            "corpus": str(self.corpus),
            "questions": str(self.questions),
            "sample": self.sample.to_json(),
            "strategies": list(self.strategies),
            "runs_dir": str(self.runs_dir),
            "models": [model_to_dict(m) for m in self.models],
            "judge": model_to_dict(self.judge),
            "limits": self.limits.to_dict(),
        }

    def config_hash(self) -> str:
        """`b2:<hex>` over the canonical JSON of `to_dict()`."""
        return tagged_hash(canonical_json(self.to_dict()))

    def model(self, name: str) -> ModelSpec:
        """The configured model called `name` (ConfigError listing the names otherwise)."""
        for m in self.models:
            if m.name == name:
                return m
        raise ConfigError(f"no model named {name!r}; configured: {', '.join(m.name for m in self.models)}")

    def case_ids(self, question_ids: Sequence[str]) -> tuple[str, ...]:
        """Every case id of the grid: question-major, then model, then strategy."""
        return tuple(case_id(q, m.name, s) for q in question_ids for m in self.models
                     for s in self.strategies)


def case_id(question_id: str, model_name: str, strategy: str) -> str:
    """`<question_id>__<model-slug>__<strategy>` (contract)."""
    return f"{question_id}__{model_name}__{strategy}"


def _model(data: Any, where: str, *, judge: bool, base_dir: Path | None) -> ModelSpec:
    _check_type(where, data, Mapping, "a table")
    _check_keys(where, data, _MODEL_KEYS)
    if "name" not in data and not judge:
        raise _fail(where, "missing required key 'name' (the slug used in case ids)")
    if judge and data.get("provider") == "rubric":
        # the offline rubric judge is not a model the models piece builds
        return ModelSpec(**({"name": "judge", "model": "rubric"} | dict(data)))
    providers = JUDGE_PROVIDERS if judge else MODEL_PROVIDERS
    if data.get("provider") not in providers:
        extra = " ('rubric' can only be the [judge])" if data.get("provider") == "rubric" else ""
        raise _fail(_join(where, "provider"),
                    f"{data.get('provider')!r} is not one of {', '.join(providers)}{extra}")
    if "model" not in data and data.get("provider") not in OFFLINE_PROVIDERS:
        raise _fail(_join(where, "model"), f"provider {data.get('provider')!r} needs a model id")
    return model_spec_from_table(data, where=where, default_name="judge" if judge else None,
                                 base_dir=base_dir)


def load_config(path: str | Path) -> ExperimentConfig:
    """Same as `ExperimentConfig.from_toml(path)`."""
    return ExperimentConfig.from_toml(path)


__all__ = ["ExperimentConfig", "Limits", "ModelSpec", "Sample", "validate_model", "model_to_dict", "STRATEGIES", "case_id",
           "load_config"]
