"""`AuditConfig`: the `[audit]` table of a TOML file (all keys optional).

    [audit]
    lineage = "filings"             # default: the dataset folder's name
    max_steps = 60                  # model steps (each: one action)
    max_tool_calls = 80             # data-tool calls that ran
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

Unknown keys are a ConfigError.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from parquet_agent.audit.gates import EVALUATORS, GATES
from parquet_agent.errors import ConfigError

BASELINE = "audit-baseline"


def _default_gates() -> dict[str, tuple[str, ...]]:
    return {"action": ("rules",), "finding": ("rules",), "run": ("rules",)}


def _default_model() -> dict[str, Any]:
    return {"provider": BASELINE, "variant": "blind"}


@dataclass(frozen=True)
class AuditConfig:
    lineage: str | None = None
    max_steps: int = 60
    max_tool_calls: int = 80
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    run_policy: str = "continue"
    sample_rows: int = 5
    gates: dict[str, tuple[str, ...]] = field(default_factory=_default_gates)
    model: dict[str, Any] = field(default_factory=_default_model)
    judge: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.run_policy not in ("continue", "accept"):
            raise ConfigError(f"[audit] run_policy must be 'continue' or 'accept', not {self.run_policy!r}")
        for gate, chain in self.gates.items():
            if gate not in GATES:
                raise ConfigError(f"[audit.gates] unknown gate {gate!r}; the gates are {', '.join(GATES)}")
            bad = [e for e in chain if e not in EVALUATORS]
            if bad:
                raise ConfigError(f"[audit.gates] {gate}: unknown evaluator(s) {bad}; use {list(EVALUATORS)}")
        if self.max_steps < 1 or self.max_tool_calls < 1:
            raise ConfigError("[audit] max_steps and max_tool_calls must be at least 1")

    @classmethod
    def from_table(cls, table: dict[str, Any]) -> AuditConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(table) - known)
        if unknown:
            raise ConfigError(f"[audit]: unknown key(s) {unknown}; allowed: {sorted(known)}")
        data = dict(table)
        if "gates" in data:
            data["gates"] = {**_default_gates(), **{k: tuple(v) for k, v in data["gates"].items()}}
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
        return cls.from_table(table)

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)} | {
            "gates": {k: list(v) for k, v in self.gates.items()}}
