"""Models: one protocol (`protocol.py`), adapters over the official SDKs behind a recording
transport, our own retries, a dated price table, and offline models (scripted, baseline).

    model = build_model(ModelSpec(name="flash", provider="google", model="gemini-2.5-flash",
                                  api_key_env="GEMINI_API_KEY"))
    result = model.complete(ModelRequest(messages=(UserMessage("hi"),)), DirectorySink(run_dir))

Fake provider servers for tests are in `parquet_agent.models.fakes`.
"""

from parquet_agent.models.baseline import BaselineModel
from parquet_agent.models.factory import build_model
from parquet_agent.models.prices import PriceTable
from parquet_agent.models.retry import RetryPolicy
from parquet_agent.models.scripted import ScriptedModel
from parquet_agent.models.sink import DirectorySink
from parquet_agent.models.spec import ModelSpec, load_model_specs, model_spec_from_table
from parquet_agent.models.transport import RecordingTransport

__all__ = [
    "BaselineModel",
    "DirectorySink",
    "ModelSpec",
    "PriceTable",
    "RecordingTransport",
    "RetryPolicy",
    "ScriptedModel",
    "build_model",
    "load_model_specs",
    "model_spec_from_table",
]
