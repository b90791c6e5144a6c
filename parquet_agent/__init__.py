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

from parquet_agent.lazy import lazy_names

__version__ = "0.1.0"

_PUBLIC = {
    "Agent": "parquet_agent.agent.loop",
    "AgentLimits": "parquet_agent.agent.loop",
    "AuditReport": "parquet_agent.audit.report",
    "Auditor": "parquet_agent.audit.auditor",
    "CaseExplorer": "parquet_agent.explore",
    "CorpusSnapshot": "parquet_agent.corpus.snapshot",
    "Experiment": "parquet_agent.experiment.runner",
    "ExperimentConfig": "parquet_agent.experiment.config",
    "FindingsStore": "parquet_agent.audit.store",
    "Judge": "parquet_agent.judge",
    "ParquetAgentError": "parquet_agent.errors",
    "RunStore": "parquet_agent.explore.runs",
    "Tools": "parquet_agent.tools",
    "charts": "parquet_agent.explore.charts",
    "load_questions": "parquet_agent.corpus.questions",
    "sql_frame": "parquet_agent.tools.frame",
}

__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = lazy_names(__name__, _PUBLIC)
