"""The judge: an independent model scores each answer, beside deterministic checks.

    judge = Judge(model)
    verdict = judge.judge(JudgeInput(...), sink=run.raw, label="Q001__flash__sql/judge")

The judgment is asked for in structure (`JUDGMENT_SCHEMA`: a JSON schema response format, or a
forced tool call on Anthropic; see `models.protocol.ResponseSchema`) at temperature 0 (adapters
record "not supported" where a model takes none). A judgment that does not parse is not sent
again byte for byte (at temperature 0 the same bytes come back): the next attempt is a repair
request that shows the judge its reply and quotes the parse error. After `max_attempts` calls
(default 2: one repair) it is recorded unscored with the reason (scores None, never 0). A call
that fails (HTTP, network) is retried while retryable, within the same `max_attempts`.

Deterministic checks (`judge.checks`) are computed beside every judgment.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, cast

from parquet_agent.errors import ModelCallError
from parquet_agent.judge.checks import deterministic_checks
from parquet_agent.judge.judgment import (
    JUDGE_PROMPT_VERSION,
    JUDGE_SYSTEM,
    JUDGMENT_SCHEMA,
    JudgeInput,
    judge_prompt_hash,
    parse_reply,
    repair_request,
)
from parquet_agent.models.protocol import (
    Attempt,
    GenerationSettings,
    Message,
    Model,
    ModelRequest,
    RawSink,
    Reply,
    StructuredMode,
    SystemMessage,
    ToolMessage,
    UserMessage,
)


@dataclass(frozen=True)
class Verdict:
    correctness: float | None
    citation_support: float | None
    rationale: str | None
    scored: bool
    unscored_reason: str | None
    request_path: str | None
    response_path: str | None
    attempts: tuple[Attempt, ...]
    checks: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    verdict: str | None = None  # correct | incorrect | abstained; None when unscored
    # the judge could not be asked: the last call's error (unscored; not a journal field)
    call_error: ModelCallError | None = field(default=None, compare=False, repr=False)


CHARS_PER_TOKEN = 3  # conservative for English prose and JSON: fitting must not overflow
JUDGE_OUTPUT_TOKENS = 1024


def fit_evidence(inp: JudgeInput, max_chars: int) -> tuple[JudgeInput, dict[str, Any] | None]:
    """`inp` with its tool evidence cut so that `inp.render()` fits `max_chars`, and what was cut
    (None when it fits as it is). The longest tool outputs are cut first, to one common length,
    each keeping its head and saying how long it was; when even that does not fit, every tool
    output is left out (its call id, name and length kept). Nothing else is changed: `fits` in
    the record is false when the rest alone is too long (the caller must not send it)."""
    before = len(inp.render())
    if before <= max_chars:
        return inp, None
    texts = [json.dumps(item.get("output"), ensure_ascii=False) for item in inp.tool_evidence]
    budget = max(0, sum(len(t) for t in texts) - (before - max_chars))
    cap = _common_cap([len(t) for t in texts], budget)
    evidence, cut = [], []
    for item, text in zip(inp.tool_evidence, texts):
        if len(text) > cap:
            cut.append(item.get("call_id"))
            item = {**item, "output": {"cut_to_fit_the_judge_context": True,
                                       "chars": len(text), "head": text[:cap]}}
        evidence.append(item)
    fitted = replace(inp, tool_evidence=tuple(evidence))
    omitted = False
    if len(fitted.render()) > max_chars and inp.tool_evidence:  # the heads' overhead: drop them
        fitted = replace(inp, tool_evidence=tuple(
            {"call_id": item.get("call_id"), "name": item.get("name"),
             "output_left_out_to_fit_the_judge_context": {"chars": len(text)}}
            for item, text in zip(inp.tool_evidence, texts)))
        cut, omitted = [item.get("call_id") for item in inp.tool_evidence], True
    after = len(fitted.render())
    return fitted, {"max_chars": max_chars, "chars_before": before, "chars_after": after,
                    "tool_outputs_cut": cut, "tool_outputs_left_out": omitted,
                    "fits": after <= max_chars}


def _common_cap(lengths: list[int], budget: int) -> int:
    """The largest cap c with sum(min(length, c)) <= budget."""
    low, high = 0, max(lengths, default=0)
    while low < high:
        mid = (low + high + 1) // 2
        if sum(min(n, mid) for n in lengths) <= budget:
            low = mid
        else:
            high = mid - 1
    return max(0, low - 200)  # room for the cut marker's own keys


class Judge:
    """`context_tokens`: the judge model's context window, when it is small (a local model):
    the evidence is then fitted to it (`fit_evidence`), recorded in the verdict's provenance.
    `output_mode`: how the judgment is asked for (`ResponseSchema.mode`, as `judge.negotiate`
    found the server takes it; recorded in each verdict's provenance); None: the adapter's own
    strict way (`json_schema`)."""

    def __init__(self, model: Model, *, max_attempts: int = 2, context_tokens: int | None = None,
                 output_mode: str | None = None):
        self.model = model
        self.max_attempts = max_attempts
        self.context_tokens = context_tokens
        self.output_mode = output_mode

    def provenance(self) -> dict[str, Any]:
        """Who judges, and with what prompt: recorded with every judgment."""
        return {"judge": self.model.name, "provider": self.model.provider,
                "model": self.model.model, "prompt_version": JUDGE_PROMPT_VERSION,
                "prompt_hash": judge_prompt_hash(), "response_schema": JUDGMENT_SCHEMA.name}

    def request(self, inp: JudgeInput, label: str) -> tuple[ModelRequest, dict[str, Any]]:
        """The first judge request for `inp`, and its provenance (with any evidence cut)."""
        provenance = self.provenance()
        if self.context_tokens:
            room = (self.context_tokens - JUDGE_OUTPUT_TOKENS) * CHARS_PER_TOKEN - len(JUDGE_SYSTEM)
            inp, cut = fit_evidence(inp, max(0, room))
            if cut is not None:
                provenance["evidence_cut"] = cut
        schema = JUDGMENT_SCHEMA
        if self.output_mode is not None:
            schema = replace(schema, mode=cast(StructuredMode, self.output_mode))
            provenance["structured_output"] = self.output_mode
        return ModelRequest(
            messages=(SystemMessage(JUDGE_SYSTEM), UserMessage(inp.render())),
            settings=GenerationSettings(temperature=0.0, max_output_tokens=JUDGE_OUTPUT_TOKENS),
            purpose="judge", label=label, response_schema=schema), provenance

    def does_not_fit(self, checks: dict[str, Any], provenance: dict[str, Any]) -> Verdict | None:
        """The unscored verdict of a request whose evidence cut says it does not fit the
        judge's context (it is never sent: the provider would only refuse it), else None."""
        cut = provenance.get("evidence_cut")
        if cut is None or cut["fits"]:
            return None
        return Verdict(None, None, None, False, (
            f"does not fit: the judge input is {cut['chars_after']:,} characters with every "
            f"tool output left out, and the judge's context ({self.context_tokens} tokens) "
            f"leaves room for {cut['max_chars']:,}; no request was sent (use a judge with a "
            "larger context)"), None, None, (), checks, {**provenance, "repair_requests": 0})

    def judge(self, inp: JudgeInput, *, sink: RawSink, label: str) -> Verdict:
        """Score one answer against the reference and evidence (deterministic checks, then the
        model, with one repair request and up to `max_attempts`); an unusable judgment is
        unscored with its reason, never 0."""
        checks = deterministic_checks(inp)
        request, provenance = self.request(inp, label)
        unsent = self.does_not_fit(checks, provenance)
        if unsent is not None:
            return unsent
        attempts: list[Attempt] = []
        problem = "no attempt made"
        paths: tuple[str | None, str | None] = (None, None)
        repairs = 0
        error: ModelCallError | None = None
        for number in range(1, self.max_attempts + 1):
            numbered = replace(request, label=f"{label}-{number:02d}" if number > 1 else label)
            try:
                result = self.model.complete(numbered, sink)
            except ModelCallError as exc:
                attempts += exc.attempts
                problem, error = f"judge call failed: {exc}", exc
                if not exc.retryable:
                    break
                continue
            error = None
            attempts += result.attempts
            last = result.attempts[-1] if result.attempts else None
            paths = (last.request_path, last.response_path) if last else (None, None)
            parsed, why = parse_reply(result.reply)
            if parsed is not None:
                provenance["repair_requests"] = repairs
                return Verdict(parsed["correctness"], parsed["citation_support"],
                               parsed["rationale"], True, None, *paths, tuple(attempts),
                               checks, provenance, parsed["verdict"])
            problem = (f"malformed judgment: {why}" if not repairs else
                       f"malformed judgment after {repairs} repair request(s): {why}")
            if number < self.max_attempts:
                request = replace(request, messages=request.messages + repair_turn(
                    result.reply, why))
                repairs += 1
        provenance["repair_requests"] = repairs
        return Verdict(None, None, None, False, problem, *paths, tuple(attempts), checks,
                       provenance, call_error=error)


def repair_turn(reply: Reply, problem: str) -> tuple[Message, ...]:
    """What a repair request appends: the judge's own reply, an answer to each tool call it
    made (every provider wants one before the next user turn) and the request quoting `problem`."""
    answers = tuple(ToolMessage(c.id, c.name, json.dumps({"error": problem}))
                    for c in reply.tool_calls)
    return (reply.message, *answers, UserMessage(repair_request(problem)))
