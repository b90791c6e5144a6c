"""Models: one protocol (`protocol.py`), adapters over the official SDKs behind a recording
transport, our own retries, a dated price table, and offline models (scripted, baseline).

    model = build_model(ModelSpec(name="flash", provider="google", model="gemini-2.5-flash",
                                  api_key_env="GEMINI_API_KEY"))
    result = model.complete(ModelRequest(messages=(UserMessage("hi"),)), DirectorySink(run_dir))

Fake provider servers for tests are in `parquet_agent.models.fakes`.

Owns the model protocol and its records, model specs and their checks (`spec`), adapters,
retries, prices and raw recording. May import: the shared layer and `corpus`. Never tools,
the agent, the store or anything above (raw bytes go to a `RawSink` the caller passes in).

The names below are imported on first use (PEP 562), so `import parquet_agent.models.protocol`
(done by tools, store and worker processes) does not pay for httpx2 and the SDKs.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "BaselineModel": "parquet_agent.models.baseline",
    "DirectorySink": "parquet_agent.models.sink",
    "ModelSpec": "parquet_agent.models.spec",
    "PriceTable": "parquet_agent.models.prices",
    "RecordingTransport": "parquet_agent.models.transport",
    "RetryPolicy": "parquet_agent.models.retry",
    "ScriptedModel": "parquet_agent.models.scripted",
    "build_model": "parquet_agent.models.factory",
    "load_model_specs": "parquet_agent.models.spec",
    "model_spec_from_table": "parquet_agent.models.spec",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'parquet_agent.models' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
