"""audit: an autonomous data-quality auditor of any Parquet dataset.

    from parquet_agent.audit import Auditor, AuditReport, FindingsStore
    report = Auditor().run("data/sample", run_dir="runs/audit-1")   # offline baseline
    report.findings_df()

Modules (lower first): `dataset` (snapshot + views), `tools` (schema_sample, run_query,
get_stats in the sandboxed workers), `taxonomy`, `finding` (proposals, evidence, keys),
`evidence`, `rules` + `gates` (the three gates), `events` + `state` (journal and its fold),
`prompt`, `baseline` (the rule-pack auditor), `models`, `history` (re-checks), `report`,
`store` (SQLite / PostgreSQL index), `auditor` (the loop), `planter` + `scoring`, `commands`.
"""

from __future__ import annotations

import importlib
from typing import Any

_PUBLIC = {
    "AuditConfig": "parquet_agent.audit.config",
    "AuditReport": "parquet_agent.audit.report",
    "Auditor": "parquet_agent.audit.auditor",
    "Dataset": "parquet_agent.audit.dataset",
    "FindingsStore": "parquet_agent.audit.store",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'parquet_agent.audit' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
