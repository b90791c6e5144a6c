"""corpus piece of parquet_agent."""
