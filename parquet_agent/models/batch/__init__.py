"""Batch APIs: many requests of one model sent at the provider's batch price.

`batch_api(model)` gives the batch client of an HTTP adapter (OpenAI Batch, Anthropic Message
Batches, Gemini batch mode); `run_batch(api, requests, sink, ledger)` sends, polls, fetches and
maps results back (see `runner`). `FileLedger(path)` remembers batches across a resume.
"""

from __future__ import annotations

from typing import Any

from parquet_agent.errors import ConfigError
from parquet_agent.models.batch.records import (
    BatchItem,
    BatchLedger,
    BatchStatus,
    FileLedger,
    ItemResult,
)
from parquet_agent.models.batch.runner import BatchOutcome, Polling, batch_groups, run_batch


def batch_api(model: Any):
    """The batch client for `model`; ConfigError for a model without a batch API."""
    provider = getattr(model, "provider", None)
    if provider == "openai" and hasattr(model, "request_kwargs"):
        from parquet_agent.models.batch.openai_batch import OpenAIBatch

        return OpenAIBatch(model)
    if provider == "anthropic" and hasattr(model, "request_kwargs"):
        from parquet_agent.models.batch.anthropic_batch import AnthropicBatch

        return AnthropicBatch(model)
    if provider == "google" and hasattr(model, "request_parts"):
        from parquet_agent.models.batch.gemini_batch import GeminiBatch

        return GeminiBatch(model)
    raise ConfigError(f"model {getattr(model, 'name', model)!r} ({provider}) has no batch API: "
                      "batch judging needs an openai, anthropic or google model; judge one "
                      "request at a time instead (no --batch)")


__all__ = ["BatchItem", "BatchLedger", "BatchOutcome", "BatchStatus", "FileLedger",
           "ItemResult", "Polling", "batch_api", "batch_groups", "run_batch"]
