"""What an audit found to hold, written out as a contract that the next audit checks.

    written = write_contract("runs/audit-1", "contract.toml")
    written.entries, written.left_out      # what was written; what was not, and why

From the run's journal: the keys and the references discovery found (`audit.discover`), and per
profiled column a range (numbers: the observed min and max), the allowed values (text whose
distinct values the profile lists completely), a pattern (text whose values share one shape,
e.g. `[A-Z]+[0-9]+`) or a freshness floor (dates and timestamps: `not_before` the latest value,
so data that goes backwards is drift). Every candidate is then checked against the very snapshot
the run audited, in the sandbox, with the contract's own queries (`contracts.Contract.checks`):
only what holds on it with no exception is written, so re-auditing the same data finds nothing
and the next snapshot's violations are drift. The dataset must still be the run's snapshot
(same content hashes), else UsageError.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from parquet_agent.audit.contracts import (KINDS, AllowedCheck, Contract, FreshnessCheck,
                                           KeyCheck, PatternCheck, RangeCheck, ReferenceCheck)
from parquet_agent.audit.dataset import ALIAS, Dataset
from parquet_agent.audit.events import AUDIT_EVENTS
from parquet_agent.audit.evidence import compute
from parquet_agent.audit.finding import Proposal
from parquet_agent.audit.profile import TOP_VALUES, is_numeric, is_text
from parquet_agent.audit.state import AuditState
from parquet_agent.audit.tools import AuditTools
from parquet_agent.errors import UsageError
from parquet_agent.files import atomic_write_bytes
from parquet_agent.store.journal import read_journal

MAX_PATTERN_LENGTH = 60  # values this long are free text, not codes with a shape


@dataclass(frozen=True)
class ContractWritten:
    path: Path
    contract: Contract
    left_out: tuple[str, ...]  # "<entry>: <why>"

    @property
    def entries(self) -> int:
        return len(self.contract)


def write_contract(run_dir: str | Path, out: str | Path) -> ContractWritten:
    """Derive the contract of the audit in `run_dir`, verify it, write it to `out` (TOML)."""
    run_dir = Path(run_dir)
    journal = run_dir / "journal" / "audit.jsonl"
    if not journal.exists():
        raise UsageError(f"{run_dir}: not an audit run folder (no journal/audit.jsonl)")
    state = AuditState.fold(read_journal(journal, family=AUDIT_EVENTS).events)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    dataset = Dataset.open(manifest["dataset_root"], manifest["lineage"],
                           convert_dir=run_dir / "snapshot")
    if dataset.snapshot.snapshot_id != manifest["snapshot"]["snapshot_id"]:
        raise UsageError(f"{manifest['dataset_root']} changed since {run_dir} audited it "
                         f"({manifest['snapshot']['snapshot_id']} -> "
                         f"{dataset.snapshot.snapshot_id}): a contract is written from the data "
                         "its run audited; audit the data again and write from that run")
    candidates = _candidates(state, dataset)
    kept, left_out = _verified(candidates, dataset)
    path = Path(out)
    atomic_write_bytes(path, to_toml(kept, header=[
        f"contract written by `parquet-agent audit contract` from {run_dir.name}",
        f"lineage {manifest['lineage']}, snapshot {dataset.snapshot.snapshot_id}",
        f"{datetime.now(timezone.utc):%Y-%m-%dT%H:%M:%SZ}: what held on every row of that "
        "snapshot; check it with `audit run DATASET --contract FILE`"]).encode())
    return ContractWritten(path, kept, tuple(left_out))


def _candidates(state: AuditState, dataset: Dataset) -> Contract:
    discovery = state.discovery or {}
    local = (lambda ref: ref.split(".", 1)[1] if ref.startswith(ALIAS + ".") else ref)
    keys = [KeyCheck(table=None if view == ALIAS else view, columns=[c])
            for view, columns in (discovery.get("keys") or {}).items() for c in columns]
    keyed = {c if view == ALIAS else f"{view}.{c}"
             for view, columns in (discovery.get("keys") or {}).items() for c in columns}
    references = [ReferenceCheck.model_validate({"from": local(r["from"]), "to": local(r["to"])})
                  for r in discovery.get("references") or [] if r.get("containment") == 1.0]
    entries: dict[str, list] = {"keys": keys, "references": references, "ranges": [],
                                "allowed": [], "patterns": [], "freshness": []}
    for ref, profile in state.profiles.items():
        found = dataset.resolve(ref)
        if found is None or found[1].nested or ref in keyed:
            continue
        kind, entry = _column_entry(ref, found[1].type, profile)
        if entry is not None:
            entries[kind].append(entry)
    return Contract(**entries)


def _column_entry(ref: str, kind: str, profile: dict[str, Any]) -> tuple[str, Any]:
    values = profile.get("values") or {}
    present = profile.get("rows", 0) - profile.get("nulls", 0)
    if present <= 0:
        return "", None
    if kind.upper().startswith(("DATE", "TIMESTAMP")) and values.get("max"):
        return "freshness", FreshnessCheck(column=ref, not_before=str(values["max"]))
    if is_numeric(kind):
        low, high = values.get("min"), values.get("max")
        if not (isinstance(low, (int, float)) and isinstance(high, (int, float))
                and math.isfinite(low) and math.isfinite(high)):
            return "", None
        whole = kind.upper().startswith(("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "U"))
        return "ranges", RangeCheck(column=ref, min=int(low) if whole else low,
                                    max=int(high) if whole else high)
    if not is_text(kind):
        return "", None
    tops = [t["value"] for t in profile.get("top_values") or [] if t["value"] is not None]
    if tops and len(tops) < TOP_VALUES and present >= 2 * len(tops):
        return "allowed", AllowedCheck(column=ref, values=sorted(tops))
    shapes = {_shape(v) for v in [*tops, values.get("min"), values.get("max")] if v}
    if len(shapes) == 1 and all(len(v) < MAX_PATTERN_LENGTH for v in tops):
        return "patterns", PatternCheck(column=ref, regex=shapes.pop())
    return "", None


def _shape(value: str) -> str:
    """A value's shape: runs of digits, capitals, small letters as classes; others literal."""
    out = []
    for run in re.finditer(r"[0-9]+|[A-Z]+|[a-z]+|.", value, re.S):
        text = run.group()
        cls = ("[0-9]" if text[0].isdigit() else "[A-Z]" if text[0] in _UPPER
               else "[a-z]" if text[0] in _LOWER else None)
        out.append(cls + "+" if cls else re.escape(text))
    return "".join(out)


_UPPER = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")


def _verified(contract: Contract, dataset: Dataset) -> tuple[Contract, list[str]]:
    """The entries whose every check counts 0 rows on `dataset` (in the sandbox)."""
    checks = contract.checks(dataset, datetime.now(timezone.utc))
    broken: dict[str, str] = {}
    with AuditTools.open(dataset) as tools:
        for check in checks:
            entry = check.id.split(".", 1)[0]  # "keys[0].nulls" -> "keys[0]"
            if check.problem is not None:
                broken.setdefault(entry, check.problem)
                continue
            proposal, problem = Proposal.from_arguments(check.arguments)
            evidence, error = compute(proposal, tools) if proposal else (None, problem)
            if evidence is None:
                broken.setdefault(entry, f"not checkable: {error}")
            elif evidence.count:
                broken.setdefault(entry, f"{evidence.count} of {evidence.denominator} rows break it")
    kept = {kind: [e for i, e in enumerate(getattr(contract, kind)) if f"{kind}[{i}]" not in broken]
            for kind in KINDS}
    return Contract(**kept), [f"{entry}: {why}" for entry, why in broken.items()]


def to_toml(contract: Contract, header: tuple[str, ...] | list[str] = ()) -> str:
    """The contract as a `[contract]` TOML file (what `Contract.from_toml` reads)."""
    lines = [f"# {h}" for h in header] + ["", "[contract]"]
    for kind in KINDS:
        for entry in getattr(contract, kind):
            lines += ["", f"[[contract.{kind}]]"]
            data = entry.model_dump(by_alias=True, exclude_none=True)
            lines += [f"{key} = {_toml_value(value)}" for key, value in data.items()]
    return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)  # a TOML basic string
