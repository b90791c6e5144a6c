"""report piece of parquet_agent."""
