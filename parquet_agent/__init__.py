"""parquet_agent: agentic search over a whole Parquet corpus, with no vector index.

Run grids of questions x answer models x retrieval strategies over sandboxed DuckDB tools, judge
every answer with an independent model, and audit any case down to the bytes on the wire.

    from parquet_agent import Experiment, RunStore, Tools, CaseExplorer, charts

    tools = Tools.open("data/sample", strategy="sql+stream")
    tools.call("search_headers", query="Northwind")
    report = Auditor().run("data/sample")          # the data-quality auditor (offline baseline)
    run = Experiment.from_toml("configs/demo.toml").run()
    run.summary()

The public names are imported on first use: the sandboxed tool workers import this package,
and they must not pay for the model SDKs, pandas or the widgets.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_PUBLIC = {
    "Agent": "parquet_agent.agent",
    "AgentLimits": "parquet_agent.agent",
    "AuditReport": "parquet_agent.audit.report",
    "Auditor": "parquet_agent.audit.auditor",
    "CaseExplorer": "parquet_agent.explore",
    "CorpusSnapshot": "parquet_agent.corpus.snapshot",
    "Experiment": "parquet_agent.experiment",
    "ExperimentConfig": "parquet_agent.experiment_config",
    "FindingsStore": "parquet_agent.audit.store",
    "Judge": "parquet_agent.judge",
    "ParquetAgentError": "parquet_agent.errors",
    "RunStore": "parquet_agent.store",
    "Tools": "parquet_agent.tools",
    "charts": "parquet_agent.explore.charts",
    "load_questions": "parquet_agent.corpus.questions",
    "sql_frame": "parquet_agent.tools.frame",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'parquet_agent' has no attribute {name!r}")
    loaded = importlib.import_module(module)
    value = loaded if name == "charts" else getattr(loaded, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
