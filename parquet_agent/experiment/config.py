"""The experiment config (a contract of DESIGN.md): load it from TOML or build it from objects.

    config = load_config("configs/smoke.toml")          # or ExperimentConfig.from_toml(...)
    config = ExperimentConfig(name="smoke", corpus="data/sample", questions="...",
                              models=[ModelSpec(name="flash", provider="google", model="...",
                                                api_key_env="GEMINI_API_KEY")],
                              judge=ModelSpec(name="judge", provider="rubric", model="rubric"))
    ids = config.sample.select(all_question_ids)         # deterministic for a seed
    config.config_hash()                                  # "b2:<hex>" over canonical JSON

Every record is a frozen dataclass checked on construction and never changed after it, so a
config built in Python gets the same checks as one read from TOML. Errors are `ConfigError`
naming the key and where it was (`smoke.toml: [[models]][1].temperature: ...`). Unknown keys
are errors, never ignored, with the closest allowed key ("did you mean ...?").

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
  `temperature` (0-2), `reasoning_effort` (`none|minimal|low|medium|high|xhigh|max`). The
  `[judge]` may add `batch = true` (an openai, anthropic or google judge): the agents run first,
  each answer is recorded "awaiting judgment", and at the end every pending judge request goes
  through the provider's batch API at its batch price (`judge.pending`); `batch_wait_s` (3600)
  bounds the wait, after which the run ends saying so and a resume picks the same batch up.
- `[limits]`: `max_tool_calls` (12), `max_rounds` (16), `case_workers` (4), `data_workers` (1),
  `cache` (`on|off`), and optional: `max_judge_attempts` (judge calls before a malformed
  judgment is recorded as unscored, 2), `max_case_tokens` and `max_case_cost_usd` (per-case
  caps, none by default), `skip_index` (true: whole-corpus text queries read only the pages the
  data-skipping index cannot rule out, where it exists; false: every query scans). HTTP attempts
  per model call are the model's own `max_attempts`; `allow_unprotected_sandbox` (false: the tools
  refuse to start where the kernel cannot protect the corpus, i.e. not root and no Landlock; true
  runs anyway and the manifest's sandbox mode and the report say UNPROTECTED).
- `[engine]` (optional): where cases run, `kind = "local"` (default) or `"ray"` with `address`,
  `nodes`, `case_workers_per_node`, `data_workers_per_node`, `corpus`, `corpus_by_node` (see
  `parquet_agent.engine.config`). It does not change results: a resume may use another engine.
- `[gates]` (optional, off by default): `action = ["rules"]` runs the action gate's rules
  (`parquet_agent.tools.action_gate`) on each `sql` call before a worker does: an un-narrowed
  whole-corpus text scan is refused (its critique is the call's tool error), whole long-text
  cells are flagged; every evaluation is a `gate_evaluation` event in the case journal. Written
  into the frozen config only when on, so configs without it keep their hash.

Relative paths resolve against the TOML file's folder (or `base_dir` for objects / dicts; the
current directory when none is given). `to_dict()` is the JSON form frozen into the manifest;
`config_hash()` hashes its canonical JSON (sorted keys, no spaces, UTF-8) with BLAKE2b-256.
Models are `parquet_agent.models.spec.ModelSpec` records (built by the models piece's
`model_spec_from_table`, which also accepts its optional keys: `max_output_tokens`,
`max_attempts`, `timeout_s`, `fail_on_pin_mismatch`, `tool_call_content`, `max_tokens_field`,
`script`), so they go to `models.build_model` as they are. A `rubric` judge is a ModelSpec with
`provider="rubric"`, which `build_model` does not build: the judge piece handles it.

Why frozen dataclasses and not pydantic models (issue 26 item 6 accepts either): every field is
typed (no `Any` in a public field) and checked in `__post_init__` / `__init__`, from TOML and from
Python alike. Moving to pydantic would change what is accepted and what is said, measured with
pydantic 2.14 on `Limits`' fields: its lax mode takes `max_rounds = true` as 1 and `"4"` as 4
(both refused here: a bool is not an int, `checks.check_type`), turns a cost cap of 2 into 2.0 at
construction (kept as given here, written 2.0 by `to_dict`), and says "Extra inputs are not
permitted" for an unknown key, with neither the closest key nor the allowed ones; strict mode
instead refuses the TOML arrays that tuple fields are read from. Matching today's messages would
mean wrapping every pydantic error, for the same checks. `to_dict()` and `config_hash()` are
written by hand either way (keys left out at their defaults, so the checked-in runs' hashes
hold). The case record and the audit report are pydantic because they are read back from files
other versions wrote; a config is read from TOML and frozen into a manifest this code writes.
"""

from __future__ import annotations

import difflib
import math
import random
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from parquet_agent.checks import check_keys, check_type, fail, join
from parquet_agent.engine.config import ENGINE_KEYS, EngineConfig
from parquet_agent.errors import ConfigError
from parquet_agent.files import canonical_json, tagged_hash
from parquet_agent.agent.limits import AgentLimits
from parquet_agent.models.spec import ModelSpec, model_spec_from_table, model_to_dict, validate_model
from parquet_agent.transcript.events import case_id

SCHEMA_VERSION = 1
# What an experiment's action gate can chain (`tools.action_gate.ActionGate` runs the rules;
# the self and judge evaluators are the auditor's). Not imported from the tools: reading a
# config (the exporter does) must not load DuckDB.
ACTION_EVALUATORS = ("rules",)
STRATEGIES = ("sql", "sql+stream", "none")  # "none": no tools (closed book)
DEFAULT_STRATEGIES = ("sql", "sql+stream")


# -- records ------------------------------------------------------------------------------------


def _init_fields(record: Any, **values: Any) -> None:
    """Give a frozen record its checked, normalised field values, each set exactly once: what a
    frozen dataclass's generated `__init__` does. `ExperimentConfig.__init__` normalises its
    arguments first (paths, sample, models), so no field ever holds a raw value or changes."""
    for name, value in values.items():
        object.__setattr__(record, name, value)


@dataclass(frozen=True)
class Sample:
    """Which questions to run: `kind` is `all`, `n` (random `n` of all, seeded) or `ids` (a tuple;
    `parse` takes the TOML array)."""

    kind: str = "all"
    n: int | None = None
    seed: int | None = None
    ids: tuple[str, ...] | None = None
    _where: str = field(default="sample", repr=False, compare=False)

    def __post_init__(self) -> None:
        w = self._where
        if self.kind == "all":
            if (self.n, self.seed, self.ids) != (None, None, None):
                raise fail(w, '"all" takes no n, seed or ids')
        elif self.kind == "n":
            check_type(join(w, "n"), self.n, int, "a positive integer")
            check_type(join(w, "seed"), self.seed, int, "an integer (needed for a repeatable sample)")
            if self.n is None or self.n < 1:  # None never passes check_type: for the checker
                raise fail(join(w, "n"), f"{self.n} is not a positive integer")
            if self.ids is not None:
                raise fail(w, "give either {n, seed} or {ids}, not both")
        elif self.kind == "ids":
            check_type(join(w, "ids"), self.ids, (list, tuple), "a list of question ids")
            object.__setattr__(self, "ids", tuple(self.ids or ()))  # Sample("ids", ids=[...])
            if not self.ids:
                raise fail(join(w, "ids"), "is empty")
            for qid in self.ids:
                check_type(join(w, "ids"), qid, str, "a list of question id strings")
            dupes = sorted({q for q in self.ids if list(self.ids).count(q) > 1})
            if dupes:
                raise fail(join(w, "ids"), f"lists {', '.join(dupes)} more than once")
            if self.n is not None or self.seed is not None:
                raise fail(w, "give either {n, seed} or {ids}, not both")
        else:
            raise fail(w, f"kind {self.kind!r} is not one of all, n, ids")

    @classmethod
    def parse(cls, value: Any, where: str = "sample") -> Sample:
        """From the TOML forms: `"all"`, `{n=20, seed=7}` or `{ids=["Q001"]}`."""
        if value == "all":
            return cls("all", _where=where)
        if not isinstance(value, Mapping):
            raise fail(where, f'expected "all", {{n, seed}} or {{ids}}, got {value!r}')
        check_keys(where, value, ("n", "seed", "ids"))
        if "ids" in value:
            ids = value["ids"]
            check_type(join(where, "ids"), ids, (list, tuple), "a list of question ids")
            return cls("ids", n=value.get("n"), seed=value.get("seed"), ids=tuple(ids),
                       _where=where)
        if "n" not in value:
            raise fail(where, "needs n and seed, or ids")
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
                    raise fail(join(self._where, "ids"),
                               f"unknown question id {qid!r} ({len(known)} questions){hint}")
            chosen = set(self.ids or ())
        else:
            assert self.n is not None, "kind 'n' has an int n (checked in __post_init__)"
            if self.n > len(known):
                raise fail(join(self._where, "n"),
                           f"asks for {self.n} questions but the questions file has {len(known)}")
            chosen = set(random.Random(self.seed).sample(sorted(known), self.n))
        return tuple(q for q in all_ids if q in chosen)

    def to_json(self) -> str | dict[str, int | list[str] | None]:
        if self.kind == "all":
            return "all"
        if self.kind == "n":
            return {"n": self.n, "seed": self.seed}
        return {"ids": list(self.ids or ())}


@dataclass(frozen=True)
class Limits:
    """Per-case limits and concurrency. The first five keys are the contract's; the agent's
    defaults (`max_tool_calls`, `max_rounds`) live in `AgentLimits`."""

    max_tool_calls: int = AgentLimits.max_tool_calls
    max_rounds: int = AgentLimits.max_rounds
    case_workers: int = 4
    data_workers: int = 1
    cache: str = "on"
    max_judge_attempts: int = 2
    max_case_tokens: int | None = None
    max_case_cost_usd: float | None = None  # an int is kept as given; `to_dict` writes a float
    skip_index: bool = True  # false: whole-corpus queries scan even where the skipping index exists
    allow_unprotected_sandbox: bool = False
    _where: str = field(default="[limits]", repr=False, compare=False)

    def __post_init__(self) -> None:
        w = self._where
        minimum = {"max_tool_calls": 0, "max_rounds": 1, "case_workers": 1, "data_workers": 1,
                   "max_judge_attempts": 1}
        for key, low in minimum.items():
            value = getattr(self, key)
            check_type(join(w, key), value, int, f"an integer >= {low}")
            if value < low:
                raise fail(join(w, key), f"{value} is below the minimum {low}")
        if self.cache not in ("on", "off"):
            raise fail(join(w, "cache"), f'{self.cache!r} is not "on" or "off"')
        check_type(join(w, "skip_index"), self.skip_index, bool, "true or false")
        check_type(join(w, "allow_unprotected_sandbox"), self.allow_unprotected_sandbox, bool,
                   "true or false")
        if self.max_case_tokens is not None:
            check_type(join(w, "max_case_tokens"), self.max_case_tokens, int, "a positive integer")
            if self.max_case_tokens < 1:
                raise fail(join(w, "max_case_tokens"), "must be positive")
        if self.max_case_cost_usd is not None:
            check_type(join(w, "max_case_cost_usd"), self.max_case_cost_usd, (int, float), "a number")
            # TOML's nan and inf are floats: a NaN cap never trips and is not JSON in the manifest
            if not math.isfinite(self.max_case_cost_usd) or self.max_case_cost_usd <= 0:
                raise fail(join(w, "max_case_cost_usd"), f"{self.max_case_cost_usd} is not a "
                           "positive number of USD (leave the key out for no cap)")

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (one form per value: a cost cap of 2 is written 2.0, as TOML's 2.0)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}
        if out["max_case_cost_usd"] is not None:
            out["max_case_cost_usd"] = float(out["max_case_cost_usd"])
        if self.skip_index:  # the default is left out: configs frozen before it keep their hash
            del out["skip_index"]
        if not self.allow_unprotected_sandbox:  # absent unless accepted: older hashes stay valid
            del out["allow_unprotected_sandbox"]
        return out

    def agent_limits(self) -> AgentLimits:
        """The part of these limits that one case's agent enforces."""
        return AgentLimits(self.max_tool_calls, self.max_rounds, self.max_case_tokens,
                           self.max_case_cost_usd)


@dataclass(frozen=True)
class Gates:
    """Evaluation gates around each case's tool calls (`[gates]`, optional, off by default).

    `action`: the evaluators run on each `sql` call before a worker runs it; `["rules"]` (the
    only one an experiment has: `tools.action_gate`) refuses un-narrowed whole-corpus text
    scans (FAIL: the critique is the call's tool error) and flags whole long-text cells
    (WARN). Every evaluation is a `gate_evaluation` event in the case journal."""

    action: tuple[str, ...] = ()
    _where: str = field(default="[gates]", repr=False, compare=False)

    def __post_init__(self) -> None:
        w = join(self._where, "action")
        check_type(w, self.action, (list, tuple), "a list of evaluator names")
        object.__setattr__(self, "action", tuple(self.action))  # Gates(["rules"]) from Python
        for name in self.action:
            if name not in ACTION_EVALUATORS:
                raise fail(w, f"{name!r} is not an evaluator an experiment can run; use "
                           f"{', '.join(map(repr, ACTION_EVALUATORS))} (the self and judge "
                           "evaluators are the data-quality auditor's)")
        if len(set(self.action)) != len(self.action):
            raise fail(w, "lists an evaluator twice")

    @classmethod
    def parse(cls, value: Any, where: str = "[gates]") -> Gates:
        check_type(where, value, Mapping, "a table")
        check_keys(where, value, ("action",))
        action = value.get("action", [])
        check_type(join(where, "action"), action, (list, tuple), "a list of evaluator names")
        return cls(tuple(action), _where=where)

    def to_dict(self) -> dict[str, Any]:
        return {"action": list(self.action)}


_LIMIT_KEYS = tuple(f.name for f in fields(Limits) if not f.name.startswith("_"))
_TOP_KEYS = ("name", "corpus", "questions", "sample", "strategies", "runs_dir", "models",
             "judge", "limits", "scope", "engine", "gates")


@dataclass(frozen=True, init=False)
class ExperimentConfig:
    """A whole experiment. Paths are absolute once constructed (resolved against `base_dir`)."""

    name: str
    corpus: Path
    questions: Path
    models: tuple[ModelSpec, ...]
    judge: ModelSpec
    strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    sample: Sample = Sample()
    runs_dir: Path = Path("runs")
    limits: Limits = Limits()
    scope: Path | None = None  # JSON: {"scopes": {question_id: [file_stem, ...]}}
    engine: EngineConfig = EngineConfig()  # where cases run (does not change results)
    gates: Gates = Gates()  # evaluation gates around tool calls (off by default)
    base_dir: Path | None = field(default=None, compare=False)
    source: str = field(default="config", compare=False, repr=False)

    def __init__(self, name: str, corpus: str | Path, questions: str | Path,
                 models: Sequence[ModelSpec], judge: ModelSpec,
                 strategies: Sequence[str] = DEFAULT_STRATEGIES,
                 sample: Sample | str | Mapping[str, Any] = Sample(),
                 runs_dir: str | Path = Path("runs"), limits: Limits = Limits(),
                 scope: str | Path | None = None, engine: EngineConfig = EngineConfig(),
                 gates: Gates = Gates(), base_dir: str | Path | None = None, source: str = "config") -> None:
        check_type("config source", source, str, "a string naming where the config came from")
        s = f"{source}:"
        if base_dir is not None:
            check_type(f"{s} base_dir", base_dir, (str, Path), "a folder path")
        check_type(f"{s} name", name, str, "a string")
        if not name.strip():
            raise fail(f"{s} name", "is empty")
        base = Path(base_dir) if base_dir is not None else Path.cwd()
        paths = {key: _absolute(f"{s} {key}", value, base) for key, value in (
            ("corpus", corpus), ("questions", questions), ("runs_dir", runs_dir))}
        if scope is not None:
            scope = _absolute(f"{s} scope", scope, base)
        if isinstance(sample, (str, Mapping)):
            sample = Sample.parse(sample, f"{s} sample")
        check_type(f"{s} sample", sample, Sample, "a Sample")
        strategies = _checked_strategies(s, strategies)
        models = _checked_models(s, models, base)
        judge = validate_model(judge, f"{s} [judge]", judge=True)
        check_type(f"{s} [limits]", limits, Limits, "a Limits")
        check_type(f"{s} [engine]", engine, EngineConfig, "an EngineConfig")
        check_type(f"{s} [gates]", gates, Gates, "a Gates")
        _init_fields(self, name=name, **paths, models=models, judge=judge,
                     strategies=strategies, sample=sample, limits=limits, scope=scope,
                     engine=engine, gates=gates, base_dir=base_dir, source=source)

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
        check_keys(source, data, _TOP_KEYS)
        for key in ("name", "corpus", "questions", "models", "judge"):
            if key not in data:
                raise fail(source, f"missing required key {key!r}")
        models_data = data["models"]
        check_type(f"{s} [[models]]", models_data, list, "an array of tables ([[models]])")
        base = Path(base_dir) if base_dir else None
        models = tuple(model_spec_from_table(m, where=f"{s} [[models]][{i}]", base_dir=base)
                       for i, m in enumerate(models_data))
        judge = model_spec_from_table(data["judge"], where=f"{s} [judge]", judge=True,
                                      base_dir=base)
        limits_data = data.get("limits", {})
        check_type(f"{s} [limits]", limits_data, Mapping, "a table")
        check_keys(f"{s} [limits]", limits_data, _LIMIT_KEYS)
        limits = Limits(**limits_data, _where=f"{s} [limits]")
        kwargs: dict[str, Any] = {}
        if "strategies" in data:
            kwargs["strategies"] = data["strategies"]
        if "runs_dir" in data:
            kwargs["runs_dir"] = data["runs_dir"]
        if "scope" in data:
            kwargs["scope"] = data["scope"]
        if "engine" in data:
            check_type(f"{s} [engine]", data["engine"], Mapping, "a table")
            check_keys(f"{s} [engine]", data["engine"], ENGINE_KEYS)
            kwargs["engine"] = EngineConfig.parse(data["engine"], f"{s} [engine]")
        if "gates" in data:
            kwargs["gates"] = Gates.parse(data["gates"], f"{s} [gates]")
        return cls(name=data["name"], corpus=data["corpus"], questions=data["questions"],
                   models=models, judge=judge, sample=Sample.parse(data.get("sample", "all"),
                                                                   f"{s} sample"),
                   limits=limits, base_dir=Path(base_dir) if base_dir else None, source=source,
                   **kwargs)

    # -- output ---------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The JSON form frozen into the manifest (absolute paths; loads back with from_dict)."""
        optional: dict[str, Any] = {"scope": str(self.scope)} if self.scope is not None else {}
        if self.engine.kind != "local":  # a local run's config (and hash) stays as it was
            optional["engine"] = self.engine.to_dict()
        if self.gates.action:  # off: the config (and its hash) is what it was before gates
            optional["gates"] = self.gates.to_dict()
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


def _absolute(where: str, value: Any, base: Path) -> Path:
    check_type(where, value, (str, Path), "a path string")
    return (base / Path(value)).resolve()


def _checked_strategies(s: str, strategies: Any) -> tuple[str, ...]:
    check_type(f"{s} strategies", strategies, (list, tuple), "a list of strategy names")
    if not strategies:
        raise fail(f"{s} strategies", f"is empty; choose from {', '.join(STRATEGIES)}")
    for strategy in strategies:
        if strategy not in STRATEGIES:
            raise fail(f"{s} strategies", f"{strategy!r} is not one of {', '.join(STRATEGIES)}")
    if len(set(strategies)) != len(strategies):
        raise fail(f"{s} strategies", "lists a strategy twice")
    return tuple(strategies)


def _checked_models(s: str, models: Any, base: Path) -> tuple[ModelSpec, ...]:
    """Each model checked (`models.spec.validate_model`), its script path absolute, names unique."""
    check_type(f"{s} [[models]]", models, (list, tuple), "a list of models")
    if not models:
        raise fail(f"{s} [[models]]", "needs at least one model")
    seen: set[str] = set()
    checked = []
    for i, model in enumerate(models):
        model = validate_model(model, f"{s} [[models]][{i}]")
        if model.script and not Path(model.script).is_absolute():
            model = replace(model, script=str((base / model.script).resolve()))
        if model.name in seen:
            raise fail(f"{s} [[models]][{i}].name", f"{model.name!r} is used twice; names "
                       "must be unique (they go into case ids)")
        seen.add(model.name)
        checked.append(model)
    return tuple(checked)


def load_config(path: str | Path) -> ExperimentConfig:
    """Same as `ExperimentConfig.from_toml(path)`."""
    return ExperimentConfig.from_toml(path)


__all__ = ["ExperimentConfig", "Gates", "Limits", "ModelSpec", "Sample", "validate_model", "model_to_dict", "STRATEGIES", "case_id",
           "load_config"]
