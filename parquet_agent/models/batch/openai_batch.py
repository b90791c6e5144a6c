"""OpenAI Batch over the official SDK: the input file (`/v1/files`, purpose `batch`), the batch
(`/v1/batches`, endpoint `/v1/chat/completions`, window 24h), its status, and the output and
error files (JSONL, one `custom_id` per line). Each line's body is the exact request
`OpenAIChatModel` would send on its own; each result is parsed by the same adapter."""

from __future__ import annotations

import json
from typing import Any, Final

from parquet_agent.models.batch.records import BatchItem, BatchState, BatchStatus, ItemResult
from parquet_agent.models.batch.wire import custom_id, exchange, parsed
from parquet_agent.models.openai_chat import OpenAIChatModel
from parquet_agent.models.protocol import RawSink

ENDPOINT: Final = "/v1/chat/completions"
_STATES: dict[str, BatchState] = {"completed": "ended", "expired": "expired", "cancelled": "cancelled",
           "failed": "failed"}


class OpenAIBatch:
    def __init__(self, model: OpenAIChatModel):
        self.model = model
        self.provider = model.provider

    def input_file(self, items: list[BatchItem]) -> bytes:
        lines = []
        for item in items:
            kwargs = self.model.request_kwargs(item.request, self.model.sent_settings(item.request))
            body = {k: v for k, v in kwargs.items() if k != "extra_body"}
            body.update(kwargs.get("extra_body") or {})
            lines.append(json.dumps({"custom_id": item.custom_id, "method": "POST",
                                     "url": ENDPOINT, "body": body}, ensure_ascii=False))
        return ("\n".join(lines) + "\n").encode()

    def submit(self, data: bytes, sink: RawSink, name: str) -> str:
        client = self.model.client
        with exchange(self.model, sink, f"{name}/upload"):
            uploaded = client.files.create(file=("batch.jsonl", data, "application/jsonl"),
                                           purpose="batch")
        with exchange(self.model, sink, f"{name}/create"):
            batch = client.batches.create(input_file_id=uploaded.id, endpoint=ENDPOINT,
                                          completion_window="24h")
        return batch.id

    def poll(self, batch_id: str, sink: RawSink, name: str) -> BatchStatus:
        with exchange(self.model, sink, name) as ex:
            batch = self.model.client.batches.retrieve(batch_id)
        counts = batch.request_counts
        detail = f"{batch.status}" + (f" ({counts.completed} completed, {counts.failed} failed "
                                       f"of {counts.total})" if counts else "")
        return BatchStatus(_STATES.get(batch.status, "running"), detail,
                           {"output_file_id": batch.output_file_id,
                            "error_file_id": batch.error_file_id}, ex.response_path)

    def fetch(self, batch_id: str, status: BatchStatus, sink: RawSink,
              name: str) -> list[ItemResult]:
        out: list[ItemResult] = []
        for which in ("output", "error"):
            file_id = status.handle.get(f"{which}_file_id")
            if not file_id:
                continue
            with exchange(self.model, sink, f"{name}/{which}-file") as ex:
                self.model.client.files.content(file_id).read()
            for raw in (ex.body or b"").splitlines():
                if raw.strip():
                    out.append(self._item(json.loads(raw), ex.response_path))
        return out

    def _item(self, line: dict[str, Any], path: str | None) -> ItemResult:
        response = line.get("response") or {}
        body, code = response.get("body"), response.get("status_code")
        error = line.get("error")
        if error or code != 200 or not isinstance(body, dict):
            why = (error or {}).get("message") or (error or {}).get("code") or (
                ((body or {}).get("error") or {}).get("message") if isinstance(body, dict)
                else None) or f"HTTP {code}"
            kind = (error or {}).get("code") or f"http_{code}"
            return ItemResult(custom_id(line), None, f"[{kind}] {why}", code, path)
        outcome, problem = parsed(self.model.parse_body, body)
        return ItemResult(custom_id(line), outcome, problem, code, path)
