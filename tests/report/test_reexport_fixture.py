"""Re-exporting the oldest checked-in run (run-v1, journal schema 1) gives the bytes the
exporter of commit 1efe253 gave (checked in under fixtures/run-v1-exported-by-1efe253), apart
from the fields later issues added on purpose, named here one by one. Behaviour users rely on:
a case record never gains a key its journal did not record (schema 1 predates
`usage.cache_write_tokens`, so its attempts have no such key, rather than a null)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from parquet_agent.report.case_model import read_case
from parquet_agent.report.exporter import case_json, dumps, export_run

FIXTURE = Path(__file__).parents[1] / "store" / "fixtures" / "run-v1"
OLD_EXPORT = Path(__file__).parent / "fixtures" / "run-v1-exported-by-1efe253"

# Added after 1efe253 on purpose: issue 16's judgments and verdicts, issue 19's per-cell cost.
NEW_JUDGMENT_KEYS = ("judging", "judgments", "verdict")
NEW_VERDICT_KEYS = ("abstained", "abstained_answerable", "abstained_rate", "correct",
                    "correct_rate", "incorrect", "incorrect_rate", "judged_with_verdict")
NEW_CELL_KEYS = (*NEW_VERDICT_KEYS, "cost_usd")


def _with(old: dict, new: dict, keys: tuple[str, ...]) -> dict:
    """`old` plus the values `new` has under `keys` (each must be new: not in `old`)."""
    assert not set(keys) & set(old), "a key named as new was already exported by 1efe253"
    return {**old, **{k: new[k] for k in keys if k in new}}


def _expected_case(old: dict, new: dict) -> bytes:
    if old.get("judgment") is not None:
        old = {**old, "judgment": _with(old["judgment"], new["judgment"], NEW_JUDGMENT_KEYS)}
    # through the model: an old record read back writes exactly its own keys again
    return (case_json(read_case(old).record) + "\n").encode()


def _expected_summary(old: dict, new: dict) -> bytes:
    cells = [_with(o, n, NEW_CELL_KEYS)
             for o, n in zip(old["by_model_strategy"], new["by_model_strategy"], strict=True)]
    return dumps({**_with(old, new, NEW_VERDICT_KEYS), "by_model_strategy": cells})


def test_run_v1_re_exports_as_the_1efe253_exporter_did(tmp_path):
    run_dir = tmp_path / "run-v1"  # the run id is the folder's name
    shutil.copytree(FIXTURE, run_dir)
    export_run(run_dir)
    old_files = sorted(p.relative_to(OLD_EXPORT).as_posix()
                       for p in OLD_EXPORT.rglob("*") if p.is_file())
    assert len(old_files) == 11
    assert sorted(p.name for p in (run_dir / "cases").iterdir()) == sorted(
        p.name for p in (OLD_EXPORT / "cases").iterdir())
    for rel in old_files:
        old_bytes, new_bytes = (OLD_EXPORT / rel).read_bytes(), (run_dir / rel).read_bytes()
        if rel.startswith("cases/"):
            expected = _expected_case(json.loads(old_bytes), json.loads(new_bytes))
        elif rel == "summary.json":
            expected = _expected_summary(json.loads(old_bytes), json.loads(new_bytes))
        else:
            expected = old_bytes
        assert new_bytes == expected, f"{rel} differs from the 1efe253 export"


def test_a_schema_1_attempt_has_no_usage_key_its_journal_did_not_record(tmp_path):
    run_dir = tmp_path / "run-v1"
    shutil.copytree(FIXTURE, run_dir)
    export_run(run_dir)
    record = json.loads((run_dir / "cases" / "Q001__flash__sql.json").read_text())
    usages = [a["usage"] for a in record["attempts"]]
    assert usages and all(set(u) == {"input_tokens", "output_tokens", "cached_tokens",
                                     "reasoning_tokens"} for u in usages), usages
    assert record["tokens"]["cache_write"] == 0  # the figure still counts it: none recorded
