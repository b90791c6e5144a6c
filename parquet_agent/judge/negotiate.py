"""Which way of asking for a structured judgment the judge's server takes, found by asking.

    negotiation = negotiate(judge, sink, label="_health/session-0/judge-format")
    negotiation.mode      # "json_schema" | "json_object" | "tool" | "text" | None (cannot judge)
    negotiation.tried     # every way tried, in order, with what happened
    Judge(model, output_mode=negotiation.mode)

Servers differ: OpenAI takes `response_format: json_schema`; llama.cpp's server
(llama-cpp-python) answers it with HTTP 500 ("Input should be 'text' or 'json_object'") but
takes `json_object` with a schema, which it turns into a grammar, and a forced tool call (also a
grammar). The judge tries each way its adapter can send (`model.structured_modes`: json_schema,
json_object, tool, then text with one repair request), strictest first, on one small probe
judgment, and keeps the first that gives a judgment that parses. A way the server rejects (an
HTTP error that repeats, a 4xx) or whose reply holds no judgment is skipped with the reason. A
judge that answers in none of them cannot judge: `mode` is None and `summary()` says why for
each. A judge that does not answer at all (connection refused, a 429 or 5xx that did not repeat)
stops the negotiation at once: that is an unreachable judge, not a missing feature.

Offline judges (rubric, scripted) take no wire format: nothing is asked, `mode` stays None and
`offline` is true.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from parquet_agent.errors import ModelCallError
from parquet_agent.judge.judgment import JudgeInput
from parquet_agent.models.protocol import STRUCTURED_MODES, Attempt, RawSink
from parquet_agent.transcript import JudgeFormat, ModelAttempt

if TYPE_CHECKING:
    from parquet_agent.judge.core import Judge

# A small judgment with an obvious answer: what every way of asking is tried on.
PROBE_INPUT = JudgeInput(
    question="What was Acme Corp's total revenue in fiscal 2023?",
    candidate_answer="Acme Corp's total revenue in fiscal 2023 was $12.5 million "
                     "[source: acme-10k-2023, chars 120-180].",
    reference_answer="$12.5 million",
    gold_evidence=({"file_stem": "acme-10k-2023", "quote": "Total revenue was $12.5 million.",
                    "start": 120, "end": 180},),
    tool_evidence=({"call_id": "call-1", "name": "read_filing",
                    "arguments": {"file_stem": "acme-10k-2023", "start": 100},
                    "output": {"file_stem": "acme-10k-2023", "start": 100, "end": 200,
                               "text": "In fiscal 2023, total revenue was $12.5 million, up "
                                       "from $11.0 million."}},),
)


@dataclass(frozen=True)
class Negotiation:
    """The way the judge is asked (None: none works, or an offline judge), every way tried
    (`{"mode", "ok", "why"}`), and the attempts the probes made (recorded like any call)."""

    mode: str | None
    tried: tuple[dict[str, Any], ...] = ()
    attempts: tuple[Attempt, ...] = ()
    offline: bool = False
    unreachable: str | None = None  # the judge did not answer at all: why

    @property
    def can_judge(self) -> bool:
        return self.offline or self.mode is not None

    def summary(self) -> str:
        """One line: the way chosen and why the stricter ones were not, or why none works."""
        if self.offline:
            return "offline judge: no structured output to negotiate"
        if self.unreachable:
            return f"the judge did not answer: {self.unreachable}"
        refused = "; ".join(f"{t['mode']}: {t['why']}" for t in self.tried if not t["ok"])
        if self.mode is None:
            return f"the judge cannot judge: no way of asking gave a judgment ({refused})"
        return f"structured output as {self.mode}" + (f" ({refused})" if refused else "")

    def events(self, judge: str) -> list[ModelAttempt | JudgeFormat]:
        """What a run journal records of it: the probes' attempts (role `health`), then the
        way chosen (`JudgeFormat`); nothing for an offline judge."""
        if self.offline:
            return []
        return [*(ModelAttempt(label=a.label, attempt=a, role="health") for a in self.attempts),
                JudgeFormat(judge=judge, mode=self.mode, tried=[dict(t) for t in self.tried],
                            summary=self.summary())]

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "tried": [dict(t) for t in self.tried],
                "offline": self.offline, "unreachable": self.unreachable,
                "summary": self.summary()}


def offered_modes(judge: Judge) -> tuple[str, ...]:
    """The ways the judge's adapter can ask, strictest first (() for an offline judge)."""
    modes = getattr(judge.model, "structured_modes", None)
    if modes is None:
        return ()
    if not getattr(judge.model, "structured_output", True):  # the entry turned it off
        return ("text",)
    return tuple(m for m in STRUCTURED_MODES if m in modes)


def negotiate(judge: Judge, sink: RawSink, label: str) -> Negotiation:
    """Try each way of asking on `PROBE_INPUT` (see the module docstring)."""
    from parquet_agent.judge.core import Judge

    modes = offered_modes(judge)
    if not modes:
        return Negotiation(None, offline=True)
    tried: list[dict[str, Any]] = []
    attempts: list[Attempt] = []
    for mode in modes:
        # one repair request in text mode (the prompt is all that asks for JSON there); a
        # constrained mode either holds the object or does not
        probe = Judge(judge.model, max_attempts=2 if mode == "text" else 1, output_mode=mode)
        verdict = probe.judge(PROBE_INPUT, sink=sink, label=f"{label}/{mode}")
        attempts += verdict.attempts
        if verdict.scored:
            tried.append({"mode": mode, "ok": True, "why": "a judgment that parses"})
            return Negotiation(mode, tuple(tried), tuple(attempts))
        failure = verdict.call_error
        if failure is not None and failure.retryable:  # no answer at all: not the format
            return Negotiation(None, tuple(tried), tuple(attempts),
                               unreachable=_short(str(failure)))
        tried.append({"mode": mode, "ok": False, "why": _short(_why(verdict, failure))})
    return Negotiation(None, tuple(tried), tuple(attempts))


def _why(verdict: Any, failure: ModelCallError | None) -> str:
    if failure is None:
        return verdict.unscored_reason or "no judgment"
    last = failure.attempts[-1] if failure.attempts else None
    said = (last.error or "") if last is not None else str(failure)
    status = f"HTTP {last.http_status}: " if last is not None and last.http_status else ""
    return f"rejected, {status}{said}"


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
