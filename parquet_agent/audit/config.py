"""`AuditConfig`: the `[audit]` table of a TOML file (all keys optional).

    [audit]
    lineage = "filings"             # default: the dataset folder's name
    max_steps = 60                  # model steps (each: one action); default: sized to the
                                    #   schema, 60 + 2 per column (the manifest records it)
    max_tool_calls = 80             # data-tool calls that ran; default: 80 + 1 per column
    max_tokens = 400000             # input + output tokens of the auditor model (none: no cap)
    max_cost_usd = 2.0              # none: no cap
    run_policy = "continue"         # run gate FAIL: "continue" (critique into the state) | "accept"
    sample_rows = 5
    [audit.gates]                   # each gate: a fail-fast chain of rules | self | judge
    action = ["rules"]
    finding = ["rules"]
    run = ["rules"]
    [audit.model]                   # the auditor: provider "audit-baseline" (offline default,
    provider = "audit-baseline"     #   variant "blind" | "reference", reference = DIR) or any
    variant = "blind"               #   [[models]] entry (openai, anthropic, google, scripted)
    [audit.judge]                   # optional: the independent model of `judge` evaluators
    [audit.contract]                # optional (or a top-level [contract]): keys, references,
    file = "contract.toml"          #   ranges, allowed values, patterns, freshness
                                    #   (`audit.contracts`), inline and/or from a file
                                    #   (relative to this config's folder)

Unknown keys are a ConfigError naming the table, with the closest allowed key ("did you
mean ...") and the allowed keys.

The fields are typed records, checked when built: `gates` an `AuditGates` (one fail-fast chain
per gate), `model` a `BaselineModel` or a `models.spec.ModelSpec`, `judge` a `ModelSpec` or
None. A TOML table is read by `from_table`; from Python a table (a dict) for `gates`, `model` or
`judge` is read the same way. `to_json` writes each as the table it was read from (the manifest's
`config` and `AuditStarted.config` keep their JSON shape, and `from_table(to_json())` gives the
same config back). Frozen dataclasses rather than pydantic: the `[[models]]` checks (`ModelSpec`)
and the contract (`Contract`) are dataclasses with their own error wording, and the three fields
here are the only ones a model would add.
"""

from __future__ import annotations

import difflib
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from parquet_agent.audit.contracts import Contract
from parquet_agent.audit.gates import EVALUATORS, GATES
from parquet_agent.checks import check_keys, check_type
from parquet_agent.errors import ConfigError
from parquet_agent.models.spec import MODEL_KEYS, ModelSpec, model_spec_from_table

BASELINE = "audit-baseline"
BASELINE_KEYS = ("provider", "variant", "reference", "name")
VARIANTS = ("blind", "reference")
BASE_STEPS = 60
BASE_TOOL_CALLS = 80
# a budget that ran out -> the key that raises it
KNOBS = {"steps": "max_steps", "tool_calls": "max_tool_calls", "tokens": "max_tokens",
         "cost_usd": "max_cost_usd"}


@dataclass(frozen=True)
class AuditGates:
    """`[audit.gates]`: each gate's fail-fast chain of evaluators (`gates.EVALUATORS`)."""

    action: tuple[str, ...] = ("rules",)
    finding: tuple[str, ...] = ("rules",)
    run: tuple[str, ...] = ("rules",)

    def __post_init__(self) -> None:
        for gate in GATES:
            chain = getattr(self, gate)
            if isinstance(chain, str) or not isinstance(chain, (list, tuple)):
                raise ConfigError(f"[audit.gates] {gate}: expected a list of evaluators, got "
                                  f"{chain!r}")
            bad = [e for e in chain if e not in EVALUATORS]
            if bad:
                raise ConfigError(f"[audit.gates] {gate}: unknown evaluator(s) {bad}; use "
                                  f"{list(EVALUATORS)}")
            object.__setattr__(self, gate, tuple(chain))

    @classmethod
    def from_table(cls, table: Any) -> AuditGates:
        """A gate left out keeps its default chain."""
        if isinstance(table, AuditGates):
            return table
        check_type("[audit.gates]", table, Mapping, "a table")
        for gate in table:
            if gate not in GATES:
                near = difflib.get_close_matches(str(gate), GATES, n=1)
                hint = f" (did you mean {near[0]!r}?)" if near else ""
                raise ConfigError(f"[audit.gates] unknown gate {gate!r}{hint}; the gates are "
                                  f"{', '.join(GATES)}")
        return cls(**table)

    def chain(self, gate: str) -> tuple[str, ...]:
        """The chain of one gate by name (`action`, `finding` or `run`)."""
        if gate not in GATES:
            raise KeyError(gate)
        chain: tuple[str, ...] = getattr(self, gate)
        return chain

    def to_json(self) -> dict[str, list[str]]:
        return {gate: list(self.chain(gate)) for gate in GATES}


@dataclass(frozen=True)
class BaselineModel:
    """`[audit.model] provider = "audit-baseline"`: the offline rule-pack auditor; `variant`
    "blind", or "reference" with `reference = DIR` (a clean snapshot it profiles first).
    `name` is accepted and kept, as before; the auditor reports its own name."""

    variant: str = "blind"
    reference: str | None = None
    name: str | None = None
    provider: str = BASELINE

    def __post_init__(self) -> None:
        if self.provider != BASELINE:
            raise ConfigError(f"[audit.model] provider: a BaselineModel is {BASELINE!r}, not "
                              f"{self.provider!r} (other providers are a ModelSpec)")
        if self.variant not in VARIANTS:
            raise ConfigError(f"[audit.model] variant: {self.variant!r} is not one of "
                              f"{', '.join(VARIANTS)}")
        if self.reference is not None:
            check_type("[audit.model] reference", self.reference, str, "a folder path")
        if self.variant == "reference" and not self.reference:
            raise ConfigError("[audit.model] variant 'reference' needs reference = DIR, a "
                              "clean snapshot of the same dataset")

    @classmethod
    def from_table(cls, table: Mapping[str, Any]) -> BaselineModel:
        check_keys("[audit.model]", table, BASELINE_KEYS)
        return cls(**table)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"provider": self.provider, "variant": self.variant}
        return out | {k: v for k, v in (("reference", self.reference), ("name", self.name))
                      if v is not None}


AuditorModel = BaselineModel | ModelSpec
_DEFAULT_SPEC = {f.name: f.default for f in fields(ModelSpec)}


def read_model(table: Any, role: str, base: Path | None = None) -> AuditorModel:
    """`[audit.<role>]` (role "model" or "judge") as a typed model entry: the baseline auditor
    (the model only) or a `[[models]]` entry named after its role unless it names itself."""
    if isinstance(table, (BaselineModel, ModelSpec)):
        if role == "judge" and isinstance(table, BaselineModel):
            raise ConfigError(f"[audit.judge]: {BASELINE!r} audits, it does not judge; use a "
                              "[[models]] entry (openai, anthropic, google, scripted)")
        return table
    where = f"[audit.{role}]"
    check_type(where, table, Mapping, "a table")
    if role == "model" and table.get("provider") == BASELINE:
        return BaselineModel.from_table(table)
    if table.get("provider") == BASELINE:
        raise ConfigError(f"{where}: {BASELINE!r} audits, it does not judge; use a [[models]] "
                          "entry (openai, anthropic, google, scripted)")
    default_name = "auditor" if role == "model" else "judge"
    return model_spec_from_table({"name": default_name, **table}, where=where, base_dir=base)


def model_json(model: AuditorModel, role: str) -> dict[str, Any]:
    """The table a model entry was read from: a spec's keys that differ from their defaults
    (its name unless it is the role's, its model id unless it is the offline provider's)."""
    if isinstance(model, BaselineModel):
        return model.to_json()
    default_name = "auditor" if role == "model" else "judge"
    out: dict[str, Any] = {}
    for key in MODEL_KEYS:
        value = getattr(model, key)
        if (key == "name" and value == default_name) or (
                key == "model" and value == model.provider) or (
                key not in ("provider", "name", "model") and value == _DEFAULT_SPEC[key]):
            continue
        out[key] = list(value) if isinstance(value, tuple) else value
    return out


@dataclass(frozen=True)
class AuditConfig:
    lineage: str | None = None
    max_steps: int | None = None  # None: sized to the schema (`sized`)
    max_tool_calls: int | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    run_policy: str = "continue"
    sample_rows: int = 5
    gates: AuditGates = field(default_factory=AuditGates)
    model: AuditorModel = field(default_factory=BaselineModel)
    judge: ModelSpec | None = None
    contract: Contract | None = None

    def __post_init__(self) -> None:
        if self.run_policy not in ("continue", "accept"):
            raise ConfigError(f"[audit] run_policy must be 'continue' or 'accept', not {self.run_policy!r}")
        # a table from Python is read as from_table reads it (a gate left out keeps its chain)
        object.__setattr__(self, "gates", AuditGates.from_table(self.gates))
        object.__setattr__(self, "model", read_model(self.model, "model"))
        if self.judge is not None:
            judge = read_model(self.judge, "judge")
            assert isinstance(judge, ModelSpec)  # (read_model refuses the baseline as judge)
            object.__setattr__(self, "judge", judge)
        if any(v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1)
               for v in (self.max_steps, self.max_tool_calls)):
            raise ConfigError("[audit] max_steps and max_tool_calls must be integers of at least 1")
        self._check_scalars()

    def _check_scalars(self) -> None:
        """The other scalar keys, each its type (a bool is not a number; nan is not a cap)."""
        if self.lineage is not None:
            check_type("[audit] lineage", self.lineage, str, "a string")
        for key in ("max_tokens", "sample_rows"):
            value = getattr(self, key)
            if key == "max_tokens" and value is None:
                continue
            check_type(f"[audit] {key}", value, int, "an integer of at least 1")
            if value < 1:
                raise ConfigError(f"[audit] {key}: {value} is below the minimum 1")
        if self.max_cost_usd is not None:
            check_type("[audit] max_cost_usd", self.max_cost_usd, (int, float), "a number")
            if not math.isfinite(self.max_cost_usd) or self.max_cost_usd <= 0:
                raise ConfigError(f"[audit] max_cost_usd: {self.max_cost_usd} is not a positive "
                                  "number of USD (leave the key out for no cap)")

    def sized(self, columns: int) -> AuditConfig:
        """This config with the budgets it leaves open sized to a schema of `columns` columns:
        a step to profile each, one more per column for its findings, and the base budget
        for the rest (300 columns: 660 steps, 380 tool calls)."""
        return replace(self, max_steps=self.max_steps or BASE_STEPS + 2 * columns,
                       max_tool_calls=self.max_tool_calls or BASE_TOOL_CALLS + columns)

    def with_contract(self, contract: Contract) -> AuditConfig:
        """This config checking `contract` too (`audit run --contract FILE`)."""
        return replace(self, contract=contract if self.contract is None
                       else self.contract.merged(contract))

    @classmethod
    def from_table(cls, table: Mapping[str, Any], base: Path | None = None) -> AuditConfig:
        """The `[audit]` table (or a `to_json()` read back); `base` resolves relative paths
        (a contract `file`, a scripted model's `script`)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(table) - known)
        if unknown:
            near = {k: difflib.get_close_matches(k, sorted(known), n=1) for k in unknown}
            hints = "; ".join(f"did you mean {v[0]!r} for {k!r}?" for k, v in near.items() if v)
            raise ConfigError(f"[audit]: unknown key(s) {unknown}"
                              + (f" ({hints})" if hints else "") + f"; allowed: {sorted(known)}")
        data = dict(table)
        if data.get("contract") is not None:  # (to_json writes None for no contract)
            data["contract"] = Contract.from_table(data["contract"], "[audit.contract]", base)
        if "gates" in data:
            data["gates"] = AuditGates.from_table(data["gates"])
        if "model" in data:
            data["model"] = read_model(data["model"], "model", base)
        if data.get("judge") is not None:
            data["judge"] = read_model(data["judge"], "judge", base)
        return cls(**data)

    @classmethod
    def from_toml(cls, path: str | Path) -> AuditConfig:
        path = Path(path)
        try:
            data = tomllib.loads(path.read_text())
        except FileNotFoundError as exc:
            raise ConfigError(f"audit config {path} does not exist") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"audit config {path} is not valid TOML: {exc}") from exc
        table = data.get("audit", {})
        check_type(f"{path}: [audit]", table, Mapping, "a table")
        config = cls.from_table(table, path.parent)
        if data.get("contract") is not None:  # a top-level [contract] beside [audit]
            config = config.with_contract(Contract.from_table(
                data["contract"], f"{path}: [contract]", path.parent))
        return config

    def to_json(self) -> dict[str, Any]:
        """The config as its TOML tables (the manifest's `config`; `from_table` reads it)."""
        return {f.name: getattr(self, f.name) for f in fields(self)} | {
            "gates": self.gates.to_json(), "model": model_json(self.model, "model"),
            "judge": model_json(self.judge, "judge") if self.judge is not None else None,
            "contract": self.contract.to_json() if self.contract is not None else None}
