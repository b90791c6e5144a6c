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

Unknown keys are a ConfigError.
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from parquet_agent.audit.contracts import Contract
from parquet_agent.audit.gates import EVALUATORS, GATES
from parquet_agent.errors import ConfigError

BASELINE = "audit-baseline"
BASE_STEPS = 60
BASE_TOOL_CALLS = 80
# a budget that ran out -> the key that raises it
KNOBS = {"steps": "max_steps", "tool_calls": "max_tool_calls", "tokens": "max_tokens",
         "cost_usd": "max_cost_usd"}


def _default_gates() -> dict[str, tuple[str, ...]]:
    return {"action": ("rules",), "finding": ("rules",), "run": ("rules",)}


def _default_model() -> dict[str, Any]:
    return {"provider": BASELINE, "variant": "blind"}


@dataclass(frozen=True)
class AuditConfig:
    lineage: str | None = None
    max_steps: int | None = None  # None: sized to the schema (`sized`)
    max_tool_calls: int | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    run_policy: str = "continue"
    sample_rows: int = 5
    gates: dict[str, tuple[str, ...]] = field(default_factory=_default_gates)
    model: dict[str, Any] = field(default_factory=_default_model)
    judge: dict[str, Any] | None = None
    contract: Contract | None = None

    def __post_init__(self) -> None:
        if self.run_policy not in ("continue", "accept"):
            raise ConfigError(f"[audit] run_policy must be 'continue' or 'accept', not {self.run_policy!r}")
        for gate, chain in self.gates.items():
            if gate not in GATES:
                raise ConfigError(f"[audit.gates] unknown gate {gate!r}; the gates are {', '.join(GATES)}")
            bad = [e for e in chain if e not in EVALUATORS]
            if bad:
                raise ConfigError(f"[audit.gates] {gate}: unknown evaluator(s) {bad}; use {list(EVALUATORS)}")
        # a gate left out keeps its default chain, from TOML and from Python alike
        object.__setattr__(self, "gates", {**_default_gates(), **{
            k: tuple(v) for k, v in self.gates.items()}})
        if any(v is not None and (not isinstance(v, int) or v < 1)
               for v in (self.max_steps, self.max_tool_calls)):
            raise ConfigError("[audit] max_steps and max_tool_calls must be integers of at least 1")

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
    def from_table(cls, table: dict[str, Any], base: Path | None = None) -> AuditConfig:
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
        model = table.get("model")
        if model and model.get("script") and not Path(model["script"]).is_absolute():
            table = {**table, "model": {**model, "script": str(path.parent / model["script"])}}
        config = cls.from_table(table, path.parent)
        if data.get("contract") is not None:  # (to_json writes None for no contract)  # a top-level [contract] beside [audit]
            config = config.with_contract(Contract.from_table(
                data["contract"], f"{path}: [contract]", path.parent))
        return config

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)} | {
            "gates": {k: list(v) for k, v in self.gates.items()},
            "contract": self.contract.to_json() if self.contract is not None else None}
