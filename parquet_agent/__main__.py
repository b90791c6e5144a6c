"""`python -m parquet_agent ...` is the same as the `parquet-agent` command."""

from parquet_agent.cli import main

raise SystemExit(main())
