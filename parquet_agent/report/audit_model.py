"""The audit's findings and report as typed records: what `findings.json` holds, field for field.

    summary = read_findings(json.loads(path.read_bytes()), where=str(path))   # AuditSummary
    summary.findings[0].evidence.count          # attributes, not `["key"]` / `.get("key")`
    summary.to_json()                           # the JSON value findings.json holds

`Evidence`, `Finding` and `Evaluation` are the audit's own records (`audit.finding` and
`audit.gates` use these very classes): the auditor builds them, the journal stores them as
`to_json()` / `asdict`, and a report reads them back. They are pydantic dataclasses, so the
auditor builds, `replace`s and `asdict`s them as before, and a report validates them on the way
in. `AuditSummary` is the whole findings.json; the audit's `AuditReport` is an `AuditSummary`
with its run folder and every step's full record, so findings.json is exactly its dump.

Shape: names, nesting and order are those findings.json had since schema 1 (the checked-in
export of an older main is reproduced byte for byte). A few keys are written only when they
apply (a re-check's `after` or `reason`, an older re-check without `fingerprint`, `contract`
without a contract): those fields have defaults and `to_json` leaves out what a record was not
given (`exclude_unset`). Reading is lenient: keys this version does not know are ignored (a file
of a newer version still shows); a wrong type is a `UsageError` naming the file and the field.

Why it sits in `report/`: the experiment's report reads findings.json too
(`report.corpus_audit`), and the report sits below the audit package; like the case record
(`report.case_model`), the shape lives with its lowest reader. Opaque payloads keep `Any`: a
step's tool arguments, an evaluation's input, example rows, usage counts.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    TypeAdapter,
    ValidationError,
    computed_field,
    field_serializer,
)
from pydantic.dataclasses import dataclass

from parquet_agent.errors import UsageError

SCHEMA_VERSION = 1
READABLE_VERSIONS = (1,)
_LENIENT = ConfigDict(extra="ignore")
# the keys of a step findings.json keeps (the full record stays in the journal)
STEP_KEYS = ("step", "tool", "arguments", "gate", "ok", "critique", "finding_action",
             "reasoning", "confidence", "usage", "cost_usd")


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The interval, or (0, 1) (nothing known) for counts that are not k of n (a journal
    written before the gate refused such evidence)."""
    if n <= 0 or not 0 <= k <= n:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True, config=_LENIENT)
class Evaluation:
    """One evaluator's verdict at one gate (`audit.gates`)."""

    gate: str
    evaluator: str
    step: int
    verdict: str  # PASS | WARN | FAIL
    critique: str
    input: dict[str, Any]
    raw: tuple[str, ...] = ()  # run-relative raw request/response paths (model evaluators)
    usage: dict[str, Any] | None = None


@dataclass(frozen=True, config=_LENIENT)
class Evidence:
    """The counts the gate computed itself (`audit.evidence`), with the queries it ran."""

    count_sql: str | None
    denominator_sql: str | None
    examples_sql: str | None
    count: int
    denominator: int
    examples: tuple[dict[str, Any], ...] = ()
    source: str = "sql"  # sql | schema

    @property
    def fraction(self) -> float:
        return self.count / self.denominator if self.denominator else 0.0

    def interval(self) -> tuple[float, float]:
        """The 95 % Wilson score interval of the affected fraction."""
        return wilson(self.count, self.denominator)


@dataclass(frozen=True, config=_LENIENT)
class Finding:
    """A proposed finding with its evidence and gate records: committed (`open`), `dismissed`
    or a key `collision`. Its JSON adds the affected `fraction` and its 95 % `interval`."""

    key: str
    lineage: str
    snapshot_id: str
    category: str
    columns: tuple[str, ...]
    title: str
    rationale: str
    severity: str
    derived_severity: str
    severity_reason: str | None
    predicate: str | None
    view: str
    fingerprint: str
    evidence: Evidence
    step: int
    status: str = "open"  # open | dismissed | collision (its key held by another finding)
    dismissed_reason: str | None = None
    evaluations: tuple[Evaluation, ...] = ()

    @computed_field  # type: ignore[prop-decorator]
    @property
    def fraction(self) -> float:
        return self.evidence.fraction

    @computed_field  # type: ignore[prop-decorator]
    @property
    def interval(self) -> tuple[float, float]:
        return self.evidence.interval()

    def to_json(self) -> dict[str, Any]:
        """What the journal stores (Python values: tuples stay tuples)."""
        data = asdict(self)
        data["fraction"] = self.fraction
        data["interval"] = list(self.interval)
        return data

    @classmethod
    def from_json(cls, data: Any) -> Finding:
        """A finding from its JSON (`fraction`, `interval` and unknown keys ignored)."""
        return _FINDING.validate_python(data)


_FINDING = TypeAdapter(Finding)


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class Counted(_Record):
    count: int | None = None
    denominator: int | None = None

    @property
    def share(self) -> float | None:
        if self.count is None or not self.denominator:
            return None
        return self.count / self.denominator


class Recheck(_Record):
    """An open finding of the previous run re-counted on this snapshot (`audit.history`)."""

    key: str
    category: str | None = None
    columns: tuple[str, ...] = ()
    title: str
    fingerprint: str | None = None  # older journals did not keep it
    before: Counted | None = None
    interval: tuple[float, float] | None = None
    after: Counted | None = None  # written when the queries ran again
    status: str  # resolved | regressed | unchanged | not_rechecked
    reason: str | None = None  # written for not_rechecked: why the queries no longer run


class ContractStatus(_Record):
    """One check of the user's contract: violated (a finding) | holds | dismissed | not_checked."""

    check: str
    description: str
    status: str
    reason: str | None = None
    key: str | None = None
    count: int | None = None


class StepSummary(_Record):
    """One step as findings.json keeps it (`STEP_KEYS`)."""

    step: int
    tool: str | None = None
    arguments: Any = None
    gate: str | None = None
    ok: bool | None = None
    critique: str | None = None
    finding_action: str | None = None
    reasoning: str | None = None
    confidence: float | None = None
    usage: dict[str, Any] | None = None
    cost_usd: float | None = None


class Coverage(_Record):
    profiled: tuple[str, ...] = ()
    tried: tuple[str, ...] = ()
    skipped: dict[str, Any] = {}
    run_gate: str | None = None
    reverified: dict[str, Any] = {}


class Diff(_Record):
    """Finding keys by their status against the previous run of the lineage."""

    new: tuple[str, ...] = ()
    resolved: tuple[str, ...] = ()
    regressed: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    not_rechecked: tuple[str, ...] = ()

    def by_status(self) -> dict[str, tuple[str, ...]]:
        return {name: getattr(self, name) for name in type(self).model_fields}


class ModelInfo(_Record):
    """The auditor model as the run's manifest names it."""

    name: str | None = None
    provider: str | None = None
    model: str | None = None


class AuditSummary(_Record):
    """findings.json: one audit run's status, findings, gate evaluations, coverage and diff."""

    schema_version: int = SCHEMA_VERSION
    run_id: str
    lineage: str
    snapshot_id: str
    status: str  # complete | incomplete | failed | running
    reason: str
    model: ModelInfo = ModelInfo()
    tokens: int = 0
    cost_usd: float | None = 0.0
    findings: tuple[Finding, ...] = ()
    dismissed: tuple[Finding, ...] = ()
    collisions: tuple[Finding, ...] = ()  # proposed findings whose key another finding holds
    contract: tuple[ContractStatus, ...] = ()  # written only when the audit had a contract
    evaluations: tuple[Evaluation, ...] = ()
    coverage: Coverage = Coverage()
    diff: Diff = Diff()
    previous_run: str | None = None
    rechecks: tuple[Recheck, ...] = ()
    verdicts: dict[str, dict[str, int]] = {}  # gate -> verdict -> evaluations that gave it
    steps: tuple[StepSummary, ...] = ()

    @field_serializer("steps")
    def _steps(self, steps: tuple[StepSummary, ...]) -> list[dict[str, Any]]:
        """The summary keys of each step (an `AuditReport` holds the full step records)."""
        return [{k: getattr(s, k) for k in STEP_KEYS} for s in steps]

    def to_json(self) -> dict[str, Any]:
        """The JSON value findings.json holds: the fields the summary was given."""
        return self.model_dump(mode="json", exclude_unset=True)


class StepRecord(StepSummary):
    """One step in full: the model's reply and the action's outcome (`state.apply` merges the
    journal's `step_model` and `step_done`)."""

    output: Any = None
    error: dict[str, Any] | None = None
    finding: dict[str, Any] | None = None
    conclude: dict[str, Any] | None = None
    timings_ms: float | None = None
    raw: tuple[str, ...] | None = None  # the model's raw files (None: no model step, e.g.
    #   a resume that refused a journaled step)


def read_findings(data: Any, *, where: str = "findings.json") -> AuditSummary:
    """Validate a findings.json value (schema 1). UsageError naming `where` and each bad field
    when it is not one; keys this version does not know are ignored."""
    if not isinstance(data, dict) or data.get("schema_version") not in READABLE_VERSIONS:
        version = data.get("schema_version") if isinstance(data, dict) else None
        raise UsageError(f"{where}: schema_version {version!r} is not one this reader knows "
                         f"({READABLE_VERSIONS}); upgrade parquet_agent")
    try:
        return AuditSummary.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                             for e in exc.errors()[:5])
        raise UsageError(f"{where}: not a valid findings.json: {problems}. Rebuild it with "
                         "`parquet-agent export AUDIT_DIR`") from None
