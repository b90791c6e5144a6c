"""`python -m parquet_agent.case_audit RUN_DIR --question Q001 --model M --method sql [--full]`.

The contract command (DESIGN.md); the implementation is `parquet_agent.report.case_audit`.
"""

from parquet_agent.report.case_audit import main, print_case, resolve_case

__all__ = ["main", "print_case", "resolve_case"]

if __name__ == "__main__":
    raise SystemExit(main())
