"""parquet_agent: agentic search over a whole Parquet corpus, with no vector index.

Run grids of questions x answer models x retrieval strategies over sandboxed DuckDB tools, judge
every answer with an independent model, and audit any case down to the bytes on the wire.
"""

from parquet_agent.errors import ParquetAgentError

__all__ = ["ParquetAgentError"]
__version__ = "0.1.0"
