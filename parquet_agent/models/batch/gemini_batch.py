"""Gemini batch mode over `google-genai`: inlined requests (`models/{model}:batchGenerateContent`,
each with `metadata.key` = the custom id; contents and config exactly as `GeminiModel` builds
them), the job's state (`batches/{id}`), and, once it succeeded, its inlined responses (a
`response` or an `error` each, in request order), parsed by the same adapter."""

from __future__ import annotations

import json

from google.genai import types

from parquet_agent.models.batch.records import BatchItem, BatchState, BatchStatus, ItemResult
from parquet_agent.models.batch.wire import exchange, parsed
from parquet_agent.models.gemini import GeminiModel
from parquet_agent.models.protocol import RawSink

_STATES: dict[str, BatchState] = {"JOB_STATE_SUCCEEDED": "ended", "JOB_STATE_PARTIALLY_SUCCEEDED": "ended",
           "JOB_STATE_FAILED": "failed", "JOB_STATE_CANCELLED": "cancelled",
           "JOB_STATE_EXPIRED": "expired"}


class GeminiBatch:
    def __init__(self, model: GeminiModel):
        self.model = model
        self.provider = model.provider

    def _inlined(self, items: list[BatchItem]) -> list[types.InlinedRequest]:
        out = []
        for item in items:
            contents, config = self.model.request_parts(item.request,
                                                        self.model.sent_settings(item.request))
            out.append(types.InlinedRequest(contents=contents, config=config,
                                            metadata={"key": item.custom_id}))
        return out

    def input_file(self, items: list[BatchItem]) -> bytes:
        requests = [r.model_dump(mode="json", exclude_none=True) for r in self._inlined(items)]
        return json.dumps({"model": self.model.model, "inlined_requests": requests},
                          ensure_ascii=False).encode()

    def submit(self, data: bytes, sink: RawSink, name: str) -> str:
        requests = [types.InlinedRequest.model_validate(r)
                    for r in json.loads(data)["inlined_requests"]]
        with exchange(self.model, sink, f"{name}/create"):
            job = self.model.client.batches.create(model=self.model.model, src=requests)
        return job.name

    def poll(self, batch_id: str, sink: RawSink, name: str) -> BatchStatus:
        with exchange(self.model, sink, name) as ex:
            job = self.model.client.batches.get(name=batch_id)
        state = job.state.value if job.state is not None else "JOB_STATE_UNSPECIFIED"
        return BatchStatus(_STATES.get(state, "running"), state, {}, ex.response_path)

    def fetch(self, batch_id: str, status: BatchStatus, sink: RawSink,
              name: str) -> list[ItemResult]:
        with exchange(self.model, sink, f"{name}/results") as ex:
            job = self.model.client.batches.get(name=batch_id)
        responses = (job.dest.inlined_responses if job.dest is not None else None) or []
        raw = ((json.loads(ex.body or b"{}").get("metadata") or {}).get("output") or {}).get(
            "inlinedResponses", {}).get("inlinedResponses", [])
        out = []
        for i, item in enumerate(responses):
            key = (item.metadata or {}).get("key", str(i))
            if item.error is not None or item.response is None:
                error = item.error
                why = (getattr(error, "message", None) or "no response") if error else "no response"
                code = getattr(error, "code", None) if error else None
                out.append(ItemResult(key, None, f"[error {code}] {why}", code, ex.response_path))
                continue
            body = (raw[i] if i < len(raw) else {}).get("response") or {}
            outcome, problem = parsed(self.model.parse_reply, item.response, body)
            out.append(ItemResult(key, outcome, problem, 200, ex.response_path))
        return out
