"""store piece of parquet_agent."""
