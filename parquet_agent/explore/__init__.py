"""explore piece of parquet_agent."""
