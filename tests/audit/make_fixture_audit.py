"""Writes tests/audit/fixtures/audit-<name>: an audit run folder as the code on PYTHONPATH
writes it (checked in: journal/audit.jsonl and the findings.json that code exported, both
gzipped, and manifest.json), so later versions are tested to read old audit journals the same way.

    PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=/work/main python tests/audit/make_fixture_audit.py NAME

It audits a filings folder with planted defects twice (same lineage, one store) with the
deterministic baseline auditor and keeps the second run: every audit event kind, the previous
run's findings re-checked, gate evaluations, committed findings.
"""

from __future__ import annotations

import gzip
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2]))

from parquet_agent.audit import Auditor, FindingsStore  # noqa: E402
from parquet_agent.audit.planter import plant  # noqa: E402

from tests.audit.conftest import write_filings  # noqa: E402

KEPT = ("journal/audit.jsonl", "manifest.json", "findings.json")
GZIPPED = ("journal/audit.jsonl", "findings.json")  # stored as .gz: a tenth of the bytes


def main(name: str) -> None:
    out = Path(__file__).parent / "fixtures" / f"audit-{name}"
    if out.exists():
        raise SystemExit(f"{out} exists: fixtures are never rewritten")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        clean = write_filings(root / "clean")
        plant(clean, root / "dirty", seed=3, rate=0.05)
        store = FindingsStore.open(root / "findings.sqlite")
        Auditor(store=store).run(root / "dirty", run_dir=root / "a0", lineage="filings")
        Auditor(store=store).run(root / "dirty", run_dir=root / "a1", lineage="filings")
        store.close()
        for rel in KEPT:
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            if rel in GZIPPED:
                data = gzip.compress((root / "a1" / rel).read_bytes(), 9, mtime=0)
                (out / f"{rel}.gz").write_bytes(data)
            else:
                shutil.copyfile(root / "a1" / rel, out / rel)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1])
