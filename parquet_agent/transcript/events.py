"""The journal's event payloads: frozen records, typed all the way down.

An attempt is a `models.protocol.Attempt`, a reply a `Reply`, timings a `tools.result.Timings`;
nothing here is a plain dict that a reader has to take apart by key. Each payload class names
its event kind in `EVENT` (the `event` field of its journal line), so readers test types
(`isinstance(e.payload, ToolCallEvent)`), never strings. Events of one case, in order:

    CaseStarted      case_id, question_id, model, strategy, manifest_hash, session, question,
                     reference_answer, gold_evidence
    ModelAttempt     one per answer-model HTTP attempt, with its `role` (ROLES) and the call
                     ids of the tool results its request carried (`tool_results`)
    ModelTurn        a successful answer turn: number, request/response paths, the `Reply`,
                     attempts used, cost; replayed on resume instead of a new call
    GateEvaluation   with `[gates] action` on: the action gate's verdict on one `sql` call,
                     just before its ToolCallEvent (`tools.action_gate`)
    ToolCallEvent    one per tool response produced (incl. validation errors, budget rejects)
    JudgeAttempt     one per judge HTTP attempt (role `judge`)
    JudgmentPending  with `[judge] batch = true`: the answer awaits its judgment by batch,
                     with what the judge needs that the journal does not hold (the cited
                     spans' corpus text, whether the question is answerable)
    Judgment         scores (None = unscored, never 0), rationale, checks, provenance; the
                     run's judge's also what it was given that the journal holds nowhere else
                     (`cited_spans`, `answerable`: what a re-judging needs); re-judging
                     appends another; the last one counts. A batch judgment is appended after
                     `case_finished`, when the batch returns it
    CaseFailed       an exception stopped the case in this session (it is redone on resume)
    CaseFinished     the last event of a done case: status complete|incomplete|failed, reason

The run journal holds `RunStarted`, `ModelAttempt` (health checks, role `health`),
`JudgeFormat` (how the judge is asked for its judgment), `CorpusDrift`, `CaseSealed` (a case
journal's line count and chain head) and `RunFinished`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from parquet_agent.models.protocol import Attempt, Reply
from parquet_agent.tools.result import GateEvaluation, Timings

CASE_STATUSES = ("complete", "incomplete", "failed")

# What an attempt was for. `final_answer` is the last request of a case whose tool budget or
# rounds ran out (tools still listed, tool_choice "none"); `answer` every other answer turn.
Role = Literal["answer", "final_answer", "judge", "health"]
ROLES: tuple[str, ...] = ("answer", "final_answer", "judge", "health")
ANSWER_ROLES = ("answer", "final_answer")


@dataclass(frozen=True)
class CaseStarted:
    EVENT: ClassVar[str] = "case_started"
    case_id: str
    question_id: str
    model: str  # configured model name (slug)
    strategy: str
    manifest_hash: str | None = None
    session: int = 0  # 0 for the first run, n for the n-th resume
    # what the case is about, for audits of cases the judge never saw (the journal is never
    # sent to an agent; only `question` is what the agent gets)
    question: str | None = None
    reference_answer: str | None = None
    gold_evidence: list[dict[str, Any]] | None = None
    node: str | None = None  # the engine node that ran this session of the case (None: local)


@dataclass(frozen=True)
class ModelAttempt:
    """One HTTP (or offline) attempt of the answer model, or of a health check."""

    EVENT: ClassVar[str] = "model_attempt"
    label: str
    attempt: Attempt
    role: Role = "answer"
    # the call ids of the tool results the request carried, in order (an answer attempt's;
    # None: not recorded: judge and health attempts, journals before issue 26)
    tool_results: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.attempt, Attempt):
            raise TypeError(f"{type(self).__name__}.attempt must be a models.protocol.Attempt, "
                            f"not {type(self.attempt).__name__}")
        if self.role not in ROLES:
            raise ValueError(f"attempt role {self.role!r} is not one of {', '.join(ROLES)}")


@dataclass(frozen=True)
class JudgeAttempt(ModelAttempt):
    EVENT: ClassVar[str] = "judge_attempt"
    role: Role = "judge"


@dataclass(frozen=True)
class ModelTurn:
    """A successful answer turn: enough to replay it unchanged on resume."""

    EVENT: ClassVar[str] = "model_turn"
    turn: int  # 1-based
    label: str
    request_path: str | None
    response_path: str | None
    reply: Reply
    attempt_count: int = 1
    final: bool = False  # the final-answer request (budget exhausted: best answer so far)
    cost_usd: float | None = None  # all attempts of the turn, retries included; None = unknown

    def __post_init__(self) -> None:
        if not isinstance(self.reply, Reply):
            raise TypeError(f"ModelTurn.reply must be a models.protocol.Reply, "
                            f"not {type(self.reply).__name__}")


@dataclass(frozen=True)
class ToolCallEvent:
    """One tool response produced for a model-emitted call, exactly as the model received it."""

    EVENT: ClassVar[str] = "tool_call"
    turn: int
    call_id: str
    name: str
    arguments: dict[str, Any]
    ok: bool
    model_text: str | None  # the exact tool-message content sent back (None when offloaded)
    output: Any = None
    error_kind: str | None = None  # closed set of tools' error kinds; "budget" for rejections
    error_message: str | None = None
    budgeted: bool = True  # admitted under the tool budget
    dispatched: bool = True  # reached the executor (cache lookups included)
    cache_hit: bool = False
    timings: Timings | None = None  # None: not measured (early version-1 journals)
    worker_id: str | None = None
    peak_rss_bytes: int | None = None
    skip_index: dict[str, Any] | None = None  # whole-corpus sql: pruned or scanned, pages read
    # raw path of {"model_text", "output"} when they were large: the store moves them into
    # the raw store (compressed against the case's requests) and puts them back on reading
    offloaded: str | None = None


VERDICTS = ("correct", "incorrect", "abstained")  # a judgment's verdict


def case_id(question_id: str, model_name: str, strategy: str) -> str:
    """`<question_id>__<model-slug>__<strategy>` (the run-directory contract)."""
    return f"{question_id}__{model_name}__{strategy}"


@dataclass(frozen=True)
class Judgment:
    """Scores 0-100, or None when the judgment was unscored (malformed after retries)."""

    EVENT: ClassVar[str] = "judgment"
    judge: str  # judge name
    correctness: float | None
    citation_support: float | None
    rationale: str | None
    scored: bool
    unscored_reason: str | None = None
    request_path: str | None = None
    response_path: str | None = None
    checks: dict[str, Any] = field(default_factory=dict)  # deterministic checks
    provenance: dict[str, Any] = field(default_factory=dict)  # judge model, prompt hash, ...
    verdict: str | None = None  # correct | incorrect | abstained (judge-v2); None: unscored
    # re-judging (a judging journal under judgments/): the case, the judging, the repeat
    case_id: str | None = None
    judging: str | None = None  # None: the run's own judge (the config's)
    repeat: int = 1
    # what the run's judge was given that the journal holds nowhere else, for a re-judging:
    # the corpus text at each cited span (None where it does not exist) and whether the
    # question is answerable (None: not recorded: re-judgings, journals before issue 26)
    cited_spans: list[dict[str, Any]] | None = None
    answerable: bool | None = None


@dataclass(frozen=True)
class JudgmentPending:
    """The answer waits for the run's judge to judge it by batch (`judge.pending`); written
    before `case_finished`. `cited_spans`: the corpus text at each span the answer cites (None
    where it does not exist), looked up while the case's tools were open."""

    EVENT: ClassVar[str] = "judgment_pending"
    label: str  # the judge request's label, `<case-id>/judge`
    cited_spans: list[dict[str, Any]] = field(default_factory=list)
    answerable: bool = True
    how: str = "batch"


@dataclass(frozen=True)
class CaseFailed:
    EVENT: ClassVar[str] = "case_failed"
    error_type: str
    message: str
    retryable: bool = False


@dataclass(frozen=True)
class CaseFinished:
    EVENT: ClassVar[str] = "case_finished"
    status: str  # complete | incomplete | failed
    reason: str | None = None
    answer: str | None = None
    tool_counts: dict[str, int] = field(default_factory=dict)  # DESIGN.md tool-count fields
    wall_ms: float | None = None

    def __post_init__(self) -> None:
        if self.status not in CASE_STATUSES:
            raise ValueError(f"case status {self.status!r} is not complete|incomplete|failed")


@dataclass(frozen=True)
class RunStarted:
    EVENT: ClassVar[str] = "run_started"
    session: int
    pid: int
    resume: bool = False
    # where this session's cases run: {"kind": "local"} or the Ray engine's address and nodes
    # (name, node id, corpus path, sandbox mode) and the nodes it refused, with why
    engine: dict[str, Any] | None = None
    # the config changes a resume allowed because they cannot change results (in words), and
    # whether it reran the cases that had failed
    allowed_changes: list[str] = field(default_factory=list)
    retry_failed: bool = False


@dataclass(frozen=True)
class JudgeFormat:
    """How this session asks its judge for a structured judgment, as the judge's server was
    found to take it (`judge.negotiate`): `mode` (None: it cannot judge), every way tried."""

    EVENT: ClassVar[str] = "judge_format"
    judge: str
    mode: str | None
    tried: list[dict[str, Any]] = field(default_factory=list)
    summary: str = ""


@dataclass(frozen=True)
class CorpusDrift:
    EVENT: ClassVar[str] = "corpus_drift"
    excluded_new_files: list[str]


@dataclass(frozen=True)
class RunFinished:
    EVENT: ClassVar[str] = "run_finished"
    session: int
    wall_ms: float
    peak_rss_bytes: int | None = None  # whole process tree
    status: str = "finished"  # finished | interrupted | error
    # a non-local engine's figures: per-node cases and throughput, the write round trip to the
    # driver's store (None for the local engine)
    engine: dict[str, Any] | None = None


@dataclass(frozen=True)
class CaseSealed:
    """A case journal was sealed: its line count and the chain of its last line."""

    EVENT: ClassVar[str] = "case_sealed"
    case_id: str
    lines: int
    head: str


PAYLOAD_TYPES: tuple[type, ...] = (
    CaseStarted, ModelAttempt, JudgeAttempt, ModelTurn, ToolCallEvent, Judgment, CaseFailed,
    CaseFinished, RunStarted, CorpusDrift, RunFinished, CaseSealed, GateEvaluation,
    JudgmentPending, JudgeFormat)
ATTEMPT_TYPES = (ModelAttempt,)  # JudgeAttempt is a ModelAttempt: one HTTP attempt each


@dataclass(frozen=True)
class UnknownEvent:
    """A line of an event kind this version does not know (a newer writer): kept, not typed."""

    EVENT: ClassVar[str] = "unknown"
    event: str
    data: dict[str, Any]
