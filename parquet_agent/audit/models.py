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
from parquet_agent.audit.config import AuditorModel, BaselineModel
from parquet_agent.audit.dataset import Dataset
from parquet_agent.audit.tools import AuditTools
from parquet_agent.errors import ConfigError
from parquet_agent.models.factory import build_model, known_keys
from parquet_agent.models.protocol import Model
from parquet_agent.models.spec import ModelSpec


def audit_keys(*models: AuditorModel | None) -> tuple[str, ...]:
    """Every API key the `[audit.model]` / `[audit.judge]` entries name that is set."""
    return known_keys([m for m in models if isinstance(m, ModelSpec)])


def build_auditor_model(model: AuditorModel, secrets: Sequence[str] = ()) -> Model:
    """`secrets`: the other keys the audit knows, kept out of this model's requests and records."""
    if isinstance(model, BaselineModel):
        profiles = (reference_profiles(model.reference)
                    if model.variant == "reference" and model.reference else None)
        try:
            return BaselineAuditor(model.variant, profiles)
        except ValueError as exc:
            raise ConfigError(f"[audit.model]: {exc}") from exc
    return build_model(model, secrets=secrets)


def build_judge_model(spec: ModelSpec, secrets: Sequence[str] = ()) -> Model:
    return build_model(spec, secrets=secrets)


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
