"""The case record as one typed model: what `cases/<id>.json` holds, field for field.

    record = build_case(source, case_id)   # report.case_record: a CaseRecord
    record.judgment.correctness            # attributes, not `.get("...")`
    data = record.to_dict()                # the JSON value `cases/<id>.json` holds
    record = read_case(data, where=path)   # an exported record back (old ones too)

Shape: field names and nesting are exactly those of the dict records written since schema 1
(`report/assets/report.js` and the checked-in exports read them unchanged). A few keys are
written only when they apply (`gate_evaluations`, `integrity`, a judge block's `awaiting`, a raw
file's `base64`, a missing request's `turn`, usage counts an old journal did not record): those
fields have defaults, and `to_dict` leaves out every field the record was not given
(`exclude_unset`). So a built record writes each key `build_case` sets, and an old record read
back writes exactly the keys it had: a missing field reads as its default, never as a new key.

Why pydantic and not frozen dataclasses: the record is read back from files other versions
wrote, and pydantic validates that on the way in (a wrong type is a `CaseRecordError` naming the
file and the field) with defaults for fields an old record lacks; dataclasses would need that
validation written by hand. Models are frozen and forbid unknown fields, so a builder typo fails
loudly. Reading is lenient instead: `read_case` drops fields this version does not know (a record
exported by a newer version, or a field since retired) and lists them in `CaseRead.ignored`,
because the explorer must still show an old or newer record rather than refuse it.

Opaque payloads keep `Any`: a tool's arguments and output (JSON the model sent or the tool
returned), the judge's deterministic checks and provenance, gold evidence spans, the skip-index
figures. They are shown as JSON, never interpreted here.
"""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from parquet_agent.errors import CaseRecordError

Number = int | float  # an int stays an int (0, not 0.0): the JSON keeps its bytes

IGNORED = "ignored"  # validation context key: where `read_case` lists the fields it dropped


class _Record(BaseModel):
    """Frozen, unknown fields refused; `read_case` passes a context that drops them instead."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _drop_unknown(cls, data: Any, info: ValidationInfo) -> Any:
        ignored = info.context.get(IGNORED) if isinstance(info.context, dict) else None
        if ignored is None or not isinstance(data, dict):
            return data
        unknown = data.keys() - cls.model_fields.keys()
        if not unknown:
            return data
        ignored.extend(f"{cls.__name__}.{key}" for key in sorted(unknown))
        return {k: v for k, v in data.items() if k not in unknown}


class RawInline(_Record):
    """One raw file, exactly: its text when UTF-8, else `base64` (then `text` is None)."""

    path: str
    bytes: int
    sha256: str
    kind: str
    text: str | None
    base64: str | None = None  # written only when the bytes are not UTF-8


class ModelIdentity(_Record):
    """The configured model name, and the configured, requested and actual model and provider
    (a reply that names none is `unverified`)."""

    name: str | None
    configured_model: str | None = None
    configured_provider: str | None = None
    requested_model: str | None = None
    requested_provider: str | None = None
    actual_model: str | None = None
    actual_provider: str | None = None


class Failure(_Record):
    """A `case_failed` of an earlier session."""

    at: str
    error_type: str
    message: str
    retryable: bool = False


class JudgmentSummary(_Record):
    """One recorded judgment (the run's own or a re-judging's)."""

    judging: str
    judge: str
    repeat: int = 1
    scored: bool
    verdict: str | None = None
    correctness: Number | None = None
    citation_support: Number | None = None
    unscored_reason: str | None = None
    prompt_version: Any = None  # as the judge's provenance records it
    request_path: str | None = None
    response_path: str | None = None


class JudgeBlock(_Record):
    """The judge section: the primary judgment's scores and exchange, and every judgment."""

    judge: str | None
    scored: bool
    correctness: Number | None
    citation_support: Number | None
    rationale: str | None
    unscored_reason: str | None
    checks: dict[str, Any] = {}
    provenance: dict[str, Any] = {}
    request_path: str | None = None
    response_path: str | None = None
    judgments_recorded: int = 0
    verdict: str | None = None
    judging: str | None = None  # None: an old record that did not say
    judgments: tuple[JudgmentSummary, ...] = ()
    request: RawInline | None = None
    response: RawInline | None = None
    awaiting: bool = False  # written (True) only while the batch judge has not returned


class Tokens(_Record):
    """Tokens summed over every attempt of the case (`analysis.fold.TOKEN_KINDS`)."""

    input: int = 0
    output: int = 0
    cached: int = 0
    reasoning: int = 0
    cache_write: int = 0


class CaseCost(_Record):
    """USD of the case; `usd` is None as soon as one attempt's cost is unknown."""

    usd: Number | None
    known_usd: Number = 0
    unknown_attempts: int = 0
    answer_usd: Number | None = None
    judge_usd: Number | None = None
    sources: tuple[str, ...] = ()


class Timing(_Record):
    started_at: str | None
    ended_at: str | None
    wall_ms: Number | None  # None until the case finishes
    model_ms: Number = 0
    judge_ms: Number = 0
    tool_ms: Number = 0


class Offset(_Record):
    """A character range a tool output reports (read_filing text or windows)."""

    file_stem: Any
    start: int
    end: int


class ToolCall(_Record):
    """One tool call as the journal recorded it. `model_text` is None when the text sent back
    was the compact JSON of `output` (`model_text_is_output_json`)."""

    turn: int
    call_id: str
    name: str
    arguments: Any  # as the model sent them (untrusted; a dict when they parsed)
    sql: Any = None  # arguments["query"] of an `sql` call
    file_stem: Any = None  # arguments["file_stem"]
    ok: bool
    error_kind: str | None = None
    error_message: str | None = None
    budgeted: bool = True
    dispatched: bool = True
    cache_hit: bool = False
    timings: dict[str, Number] = {}
    worker_id: str | None = None
    peak_rss_bytes: int | None = None
    skip_index: Any = None
    offsets: tuple[Offset, ...] = ()
    output: Any = None
    model_text: str | None = None
    model_text_is_output_json: bool = False
    at: str


class GateRecord(_Record):
    """The action gate's evaluation of one tool call (`tools.GateEvaluation`)."""

    gate: str
    evaluator: str
    tool: str
    arguments: Any
    verdict: str
    critique: str
    narrowed: bool


class AttemptUsage(_Record):
    """Token counts of one attempt; a count an old journal did not record is left out."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    cache_write_tokens: int | None = None


class AttemptCost(_Record):
    usd: Number | None
    source: str
    price_table: str | None = None
    computed_usd: Number | None = None
    note: str | None = None


class AttemptRecord(_Record):
    """One API attempt (`models.Attempt`) with its event and whether its raw files are stored."""

    label: str
    number: int
    purpose: str
    requested_model: str | None = None
    requested_provider: str | None = None
    actual_model: str | None = None
    actual_provider: str | None = None
    temperature: Number | str | None = None
    reasoning_effort: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    queue_ms: Number | None = None
    duration_ms: Number | None = None
    http_status: int | None = None
    outcome: str
    error: str | None = None
    response_id: str | None = None
    finish_reason: str | None = None
    usage: AttemptUsage = AttemptUsage()
    cost: AttemptCost | None = None
    request_path: str | None = None
    response_path: str | None = None
    notes: tuple[str, ...] = ()
    event: str
    request_in_store: bool
    response_in_store: bool


class MissingRequest(_Record):
    """A raw request the journal or the attempt numbering says exists but the store lacks."""

    label: str | None
    attempt: int | None
    purpose: str | None
    expected_path: str | None
    turn: int | None = None  # written only for a gap in a turn's attempt numbers
    why: str


class Incomplete(_Record):
    """For an unfinished case: the latest request written, what is missing, what was unsent."""

    latest_request_path: str | None
    missing_raw_requests: tuple[MissingRequest, ...] = ()
    unsent_tool_outputs: tuple[str, ...] = ()


class Links(_Record):
    case: str
    journal: str | None = None


class CaseIntegrity(_Record):
    """Written only on a damaged or edited case: what `Run.verify()` named for it."""

    ok: bool
    problems: tuple[str, ...] = ()


class CaseRecord(_Record):
    """The audit record of one case (schema_version 1; see `report.case_record`)."""

    schema_version: int
    case_id: str
    run_id: str
    question_id: str | None = None
    question: str | None = None
    question_source: str | None = None
    reference_answer: str | None = None
    gold_evidence: Any = None  # the question's evidence spans, as the question set gives them
    reference_source: str | None = None
    model: ModelIdentity
    strategy: str | None = None
    status: str  # complete | incomplete | failed
    status_reason: str | None = None
    finished: bool = False
    sessions: int = 0
    failures: tuple[Failure, ...] = ()
    final_answer: str | None = None
    forced_final: bool = False
    judgment: JudgeBlock | None = None
    tool_counts: dict[str, int | None] = {}  # contract names (TOOL_COUNT_FIELDS order)
    tool_counts_source: str | None = None
    model_rounds: int = 0
    api_attempts: int = 0
    tokens: Tokens = Tokens()
    cost: CaseCost = CaseCost(usd=None)
    timing: Timing = Timing(started_at=None, ended_at=None, wall_ms=None)
    tool_calls: tuple[ToolCall, ...] = ()
    gate_evaluations: tuple[GateRecord, ...] = ()  # written only with `[gates] action` on
    final_request: RawInline | None = None
    final_response: RawInline | None = None
    latest_request: RawInline | None = None
    tool_outputs_not_in_latest_request: tuple[str, ...] = ()
    attempts: tuple[AttemptRecord, ...] = ()
    incomplete: Incomplete | None = None
    raw_files: tuple[str, ...] = ()
    links: Links
    integrity: CaseIntegrity | None = None  # written only on a damaged or edited case

    def to_dict(self) -> dict[str, Any]:
        """The JSON value of the record (what `cases/<id>.json` holds): the fields it was
        given, lists for tuples."""
        return self.model_dump(mode="json", exclude_unset=True)

    def to_plain(self) -> dict[str, Any]:
        """As `to_dict`, without converting values (tuples stay; a NaN stays for the exporter's
        `allow_nan=False` to refuse): the fast form `json.dumps` writes."""
        return self.model_dump(exclude_unset=True)


class CaseRead(BaseModel):
    """A record read back, and the fields of it this version does not know (dropped)."""

    model_config = ConfigDict(frozen=True)

    record: CaseRecord
    ignored: tuple[str, ...] = ()


def read_case(data: Any, *, where: str = "case record") -> CaseRead:
    """Validate a case record read from JSON (any version since schema 1). Unknown fields are
    dropped and listed; a wrong type or a missing required field is a CaseRecordError naming
    `where` and each field's path."""
    ignored: list[str] = []
    try:
        record = CaseRecord.model_validate(data, context={IGNORED: ignored})
    except ValidationError as exc:
        raise CaseRecordError(f"{where}: not a valid case record: {_problems(exc)}. Rebuild "
                              "it with `parquet-agent export RUN_DIR`") from None
    return CaseRead(record=record, ignored=tuple(ignored))


_UNION_TAGS = frozenset({"int", "float", "str"})  # pydantic's names of a union's members


def _problems(exc: ValidationError, shown: int = 5) -> str:
    """Each bad field once, by its path (`judgment.correctness`, `attempts.0.number`): a value
    that fits no member of `int | float` is one problem, not one per member (the last says
    what was expected)."""
    by_path: dict[str, str] = {}
    for e in exc.errors():
        path = ".".join(str(p) for p in e["loc"] if p not in _UNION_TAGS) or "(record)"
        got = "" if e["type"] == "missing" else f" (got {_short(e.get('input'))})"
        by_path[path] = f"{path}: {e['msg']}{got}"
    problems = list(by_path.values())
    more = f" (and {len(problems) - shown} more)" if len(problems) > shown else ""
    return "; ".join(problems[:shown]) + more


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
