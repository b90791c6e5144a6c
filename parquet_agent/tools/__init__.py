"""tools piece of parquet_agent."""
