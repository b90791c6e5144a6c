"""Building the auditor and judge models from `[audit.model]` / `[audit.judge]`.

`provider = "audit-baseline"` is the offline rule-pack auditor (`baseline.py`); with
`variant = "reference"` and `reference = DIR` it first profiles the clean snapshot in `DIR`
with the same sandboxed `get_stats`. Any other table is a `[[models]]` entry
(`models.spec.model_spec_from_table` + `models.build_model`): openai, anthropic, google, or
`scripted` (a JSON script file of replies). Each recorder knows both models' keys
(`audit_keys`): the auditor's key, echoed by its model in any spelling, is scrubbed from what
the judge's provider is sent, and the other way round.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from parquet_agent.audit.baseline import BaselineAuditor
from parquet_agent.audit.config import BASELINE
from parquet_agent.audit.dataset import Dataset
from parquet_agent.audit.tools import AuditTools
from parquet_agent.errors import ConfigError
from parquet_agent.models.factory import build_model, known_keys
from parquet_agent.models.protocol import Model
from parquet_agent.models.spec import model_spec_from_table


def audit_keys(*tables: dict[str, Any] | None) -> tuple[str, ...]:
    """Every API key the `[audit.model]` / `[audit.judge]` tables name that is set."""
    specs = [model_spec_from_table({"name": name, **table}, where=f"[audit.{name}]")
             for name, table in zip(("model", "judge"), tables)
             if table and table.get("provider") != BASELINE]
    return known_keys(specs)


def build_auditor_model(table: dict[str, Any], secrets: Sequence[str] = ()) -> Model:
    """`secrets`: the other keys the audit knows, kept out of this model's requests and records."""
    if table.get("provider") == BASELINE:
        unknown = sorted(set(table) - {"provider", "variant", "reference", "name"})
        if unknown:
            raise ConfigError(f"[audit.model]: unknown key(s) {unknown} for the baseline auditor")
        variant = table.get("variant", "blind")
        profiles = None
        if variant == "reference":
            if not table.get("reference"):
                raise ConfigError("[audit.model] variant 'reference' needs reference = DIR, a "
                                  "clean snapshot of the same dataset")
            profiles = reference_profiles(table["reference"])
        try:
            return BaselineAuditor(variant, profiles)
        except ValueError as exc:
            raise ConfigError(f"[audit.model]: {exc}") from exc
    return build_model(model_spec_from_table({"name": "auditor", **table}, where="[audit.model]"),
                       secrets=secrets)


def build_judge_model(table: dict[str, Any], secrets: Sequence[str] = ()) -> Model:
    return build_model(model_spec_from_table({"name": "judge", **table}, where="[audit.judge]"),
                       secrets=secrets)


def reference_profiles(folder: str) -> dict[str, Any]:
    """`get_stats` of every column of the clean snapshot in `folder` (in the sandbox)."""
    dataset = Dataset.open(folder)
    out: dict[str, Any] = {}
    with AuditTools.open(dataset) as tools:
        for column in dataset.column_names:
            result = tools.get_stats(column)
            if result.ok:
                out[column] = result.output
    return out
