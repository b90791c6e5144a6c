"""Real filings and FinanceBench data that the repository does not carry (CC-BY-NC, GPL-covered
fixtures, 107 MB): tests that need them read the folder named by PARQUET_AGENT_REALDATA and skip
without it, saying how to get it (docs/real-filings.md, "Tests on real data"). No test looks for
it anywhere else."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ENV = "PARQUET_AGENT_REALDATA"


def realdata(part: str = "") -> Path:
    """`part` of the real-data folder; a path that does not exist when the variable is unset."""
    root = os.environ.get(ENV)
    return Path(root) / part if root else Path("/nonexistent-realdata") / part


def needs_realdata(part: str) -> pytest.MarkDecorator:
    """Skip unless `part` of the real-data folder exists; the reason says how to get it."""
    return pytest.mark.skipif(
        not realdata(part).exists(),
        reason=f"needs {part} of the real-data folder (licensed, not in the repository): "
               f"set {ENV}=DIR, see docs/real-filings.md 'Tests on real data'")
