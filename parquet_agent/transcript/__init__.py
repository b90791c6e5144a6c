"""The transcript: what a case did, as typed journal events, and the one codec that reads them.

Owns the event records (`events`), the line codec with its versioned reader (`codec`), the
journal protocol the agent writes through, the resume view and the tool tally (`replay`).
May import: the shared I/O helpers, corpus, models and tools records. Never the agent, judge,
config, store or anything above (the store implements `JournalWriter`; the agent only knows
the protocol).
"""

from parquet_agent.transcript.codec import (
    CASE_EVENTS,
    SCHEMA_VERSION,
    Event,
    EventFamily,
    attempt_from_dict,
    decode_line,
    decode_payload,
    encode,
    encode_line,
    plain,
    reply_from_dict,
    upgrade,
)
from parquet_agent.transcript.events import (
    ANSWER_ROLES,
    ATTEMPT_TYPES,
    CASE_STATUSES,
    PAYLOAD_TYPES,
    ROLES,
    CaseFailed,
    CaseFinished,
    CaseSealed,
    CaseStarted,
    CorpusDrift,
    GateEvaluation,
    JudgeAttempt,
    JudgeFormat,
    Judgment,
    JudgmentPending,
    ModelAttempt,
    ModelTurn,
    Role,
    RunFinished,
    RunStarted,
    ToolCallEvent,
    UnknownEvent,
)
from parquet_agent.transcript.replay import (
    TOOL_COUNT_FIELDS,
    CaseReplay,
    JournalWriter,
    ToolCounts,
    tally,
)

__all__ = [
    "ANSWER_ROLES", "ATTEMPT_TYPES", "CASE_EVENTS", "CASE_STATUSES", "PAYLOAD_TYPES", "ROLES",
    "SCHEMA_VERSION",
    "TOOL_COUNT_FIELDS", "CaseFailed", "CaseFinished", "CaseReplay", "CaseSealed", "CaseStarted",
    "CorpusDrift", "Event", "EventFamily", "GateEvaluation", "JournalWriter", "JudgeAttempt",
    "JudgeFormat", "Judgment", "JudgmentPending", "ModelAttempt",
    "ModelTurn", "Role", "RunFinished", "RunStarted", "ToolCallEvent", "ToolCounts",
    "UnknownEvent", "attempt_from_dict", "decode_line", "decode_payload", "encode",
    "encode_line", "plain", "reply_from_dict", "tally", "upgrade",
]
