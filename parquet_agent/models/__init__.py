"""models piece of parquet_agent."""
