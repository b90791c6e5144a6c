"""Anthropic Message Batches over the official SDK: `POST /v1/messages/batches` with every
request's `params` (the exact arguments `AnthropicMessagesModel` would send on its own), its
status, and the results (JSONL: `result.type` succeeded / errored / expired / canceled), each
parsed by the same adapter."""

from __future__ import annotations

import json
from typing import Any

from parquet_agent.models.anthropic_messages import AnthropicMessagesModel
from parquet_agent.models.batch.records import BatchItem, BatchState, BatchStatus, ItemResult
from parquet_agent.models.batch.wire import custom_id, exchange, parsed
from parquet_agent.models.protocol import RawSink


class AnthropicBatch:
    def __init__(self, model: AnthropicMessagesModel):
        self.model = model
        self.provider = model.provider

    def input_file(self, items: list[BatchItem]) -> bytes:
        requests = [{"custom_id": item.custom_id, "params": self.model.request_kwargs(
            item.request, self.model.sent_settings(item.request))} for item in items]
        return json.dumps({"requests": requests}, ensure_ascii=False).encode()

    def submit(self, data: bytes, sink: RawSink, name: str) -> str:
        with exchange(self.model, sink, f"{name}/create"):
            batch = self.model.client.messages.batches.create(
                requests=json.loads(data)["requests"])
        return batch.id

    def poll(self, batch_id: str, sink: RawSink, name: str) -> BatchStatus:
        with exchange(self.model, sink, name) as ex:
            batch = self.model.client.messages.batches.retrieve(batch_id)
        c = batch.request_counts
        detail = (f"{batch.processing_status} ({c.succeeded} succeeded, {c.errored} errored, "
                  f"{c.expired} expired, {c.canceled} canceled, {c.processing} processing)")
        state: BatchState = "running"
        if batch.processing_status == "ended":
            state = "expired" if c.expired else ("cancelled" if c.canceled else "ended")
        return BatchStatus(state, detail, {}, ex.response_path)

    def fetch(self, batch_id: str, status: BatchStatus, sink: RawSink,
              name: str) -> list[ItemResult]:
        with exchange(self.model, sink, f"{name}/results") as ex:
            self.model.client.messages.batches.results(batch_id)
        return [self._item(json.loads(raw), ex.response_path)
                for raw in (ex.body or b"").splitlines() if raw.strip()]

    def _item(self, line: dict[str, Any], path: str | None) -> ItemResult:
        result = line.get("result") or {}
        kind = result.get("type")
        if kind == "succeeded":
            outcome, problem = parsed(self.model.parse_body, result.get("message"))
            return ItemResult(custom_id(line), outcome, problem, 200, path)
        error = ((result.get("error") or {}).get("error") or {})
        why = error.get("message") or kind
        return ItemResult(custom_id(line), None, f"[{error.get('type') or kind}] {why}",
                          None, path)
