"""The agent: a bounded loop of one model over one strategy's tools.

    agent = Agent(model, tools, limits=AgentLimits(max_tool_calls=12, max_rounds=16))
    outcome = agent.run(question, case_id="Q001__flash__sql", sink=run.raw,
                        journal=run.journal(case_id), replay=run.replay(case_id))

Tool outputs go back as ordinary tool-role messages, exactly as `ToolResult.model_text()` gives
them: no reranker, no hidden evidence selection. Each request is the accumulated conversation,
so the final-answer request *is* the conversation, preserved verbatim in the raw store.

Limits per case: a tool-call budget (a call over budget gets a `budget` error value and counts
in `budget_rejected`), model rounds, total tokens and cost. When the tool budget or the rounds
run out without an answer, one last request (tools still listed, `tool_choice="none"`) asks for
the best answer from what was found, and the outcome says so (`forced_final`). Token and cost
caps stop the case at once (`incomplete`): another request would break them.

The agent only ever receives a `Question` (id and text): its input types have no field for the
reference answer or gold evidence.

Resume: with a `CaseReplay`, saved successful turns are reused instead of calling the model,
and saved tool results instead of calling the tools, so the conversation is rebuilt exactly and
no inference call that already succeeded is paid for twice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol

from parquet_agent.corpus.questions import Question
from parquet_agent.errors import ModelCallError, RunError
from parquet_agent.agent.limits import AgentLimits
from parquet_agent.models.protocol import (
    GenerationSettings,
    Message,
    Model,
    ModelRequest,
    RawSink,
    Reply,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolSpec,
    UserMessage,
    total_cost,
)
from parquet_agent.tools.result import ToolResult, error_result
from parquet_agent.transcript import (
    CaseReplay,
    JournalWriter,
    ModelAttempt,
    ModelTurn,
    ToolCallEvent,
    ToolCounts,
    tally,
)

PROMPT_VERSION = "agent-v1"
NO_TOOLS = "none"  # the closed-book strategy

SYSTEM_PROMPT = """\
You answer questions about a corpus of SEC filings stored as Parquet files. You cannot see the
files; you can only call the data tools you are given. Each row of the corpus is one filing:
`parsed_md` holds the whole filing as Markdown (company name, form type, dates and financial
tables live only in there); `file_stem` is the filing's accession number and the id every tool
uses; `accession` is the company's CIK (sometimes zero-padded); `year` and `month` are when it
was filed. Rows can be duplicates (same `md5`).

Work like this: find the company and filing first by metadata and issuer headers, then read only
that filing. Whole-corpus text scans are slow and may time out: narrow by `year`, `month`,
`accession` or `file_stem` first, and prefer `contains(parsed_md, '...')` over `ILIKE`.

Answer in plain sentences. Support every fact with a citation to the text you read, in exactly
this form: [source: <file_stem>, chars <start>-<end>], where start and end are character offsets
into that filing's parsed_md as the tools reported them. If the corpus does not contain the
answer, say so plainly and explain what you searched.
{strategy_note}"""

STRATEGY_NOTES = {
    "sql": "Strategy `sql`: describe the corpus, then run read-only SELECT statements; use the "
    "`file_stem` argument of `sql` to query one filing's Markdown cheaply.",
    "sql+stream": "Strategy `sql+stream`: search issuer headers to find filings, read filings by "
    "character ranges or around a pattern, and use SQL for counts and metadata.",
}

CLOSED_BOOK_PROMPT = """\
You answer questions about SEC filings from what you know; you have no tools and no access to
the filings. Answer in plain sentences. If you do not know the answer, say so plainly."""

FINAL_ANSWER_PROMPT = (
    "You have used your tool budget. Do not call any more tools. Give your best answer now, "
    "from what you have found so far, with citations in the required form; if you did not find "
    "the answer, say so."
)
TRUNCATED_PROMPT = (
    "Your answer was cut off at the output limit. Do not call any more tools. Give your final "
    "answer again, briefly, with citations in the required form."
)


def system_prompt(strategy: str) -> str:
    if strategy == NO_TOOLS:
        return CLOSED_BOOK_PROMPT
    return SYSTEM_PROMPT.format(strategy_note=STRATEGY_NOTES.get(strategy, ""))


class ToolExecutor(Protocol):
    """What the agent needs from `parquet_agent.tools.Tools`."""

    strategy: str

    def specs(self) -> tuple[ToolSpec, ...]: ...

    def call_raw(self, name: object, arguments: object) -> ToolResult: ...


class NoTools:
    """The closed-book strategy: no tool is offered, and a call anyway is an error value."""

    strategy = NO_TOOLS

    def specs(self) -> tuple[ToolSpec, ...]:
        return ()

    def call_raw(self, name: object, arguments: object) -> ToolResult:
        return error_result(str(name)[:200], arguments, "unknown_tool",
                            "this is a closed-book case: no tools are available")


@dataclass(frozen=True)
class AgentOutcome:
    status: str  # complete | incomplete | failed
    answer: str | None
    reason: str
    forced_final: bool
    counts: ToolCounts
    messages: tuple[Message, ...]  # the conversation as last sent or received
    evidence: tuple[ToolCallEvent, ...]  # every tool response, in order
    usage: dict[str, int] = field(default_factory=dict)
    cost_usd: float | None = 0.0
    error: str | None = None
    retryable: bool = False  # a failed case that a resume should try again


class Agent:
    """The bounded tool-using loop of one answer model: `run(question)` asks, executes the tool
    calls it gets (within `limits`), and returns an `AgentOutcome`; every turn is journaled when
    a `journal` is given, and a `replay` resumes from saved turns without paying again."""

    def __init__(
        self,
        model: Model,
        tools: ToolExecutor,
        *,
        limits: AgentLimits = AgentLimits(),
        settings: GenerationSettings = GenerationSettings(),
        prompt: str | None = None,
    ):
        self.model = model
        self.tools = tools
        self.limits = limits
        self.settings = settings
        self.prompt = prompt if prompt is not None else system_prompt(tools.strategy)

    def run(
        self,
        question: Question,
        *,
        case_id: str,
        sink: RawSink,
        journal: JournalWriter | None = None,
        replay: CaseReplay | None = None,
    ) -> AgentOutcome:
        """Answer `question` as case `case_id`: raw requests and responses go to `sink`, turns
        and tool calls to `journal`; saved turns in `replay` are reused, not requested again."""
        return _CaseLoop(self, question, case_id, sink, journal, replay).run()


class _CaseLoop:
    """The state of one case while it runs (one thread, one case)."""

    def __init__(self, agent: Agent, question: Question, case_id: str, sink: RawSink,
                 journal: JournalWriter | None, replay: CaseReplay | None):
        self.agent, self.case_id, self.sink, self.journal = agent, case_id, sink, journal
        self.saved_turns = {t.turn: t for t in replay.turns} if replay else {}
        self.saved_tools = dict(replay.tool_results) if replay else {}
        self.messages: list[Message] = [SystemMessage(agent.prompt), UserMessage(question.question)]
        self.specs = tuple(agent.tools.specs())
        self.turns: list[ModelTurn] = []  # successful turns of the conversation (replayed too)
        self.attempt_count = 0  # attempts made in this session (answer model only)
        self.evidence: list[ToolCallEvent] = []
        self.tokens = {"input_tokens": 0, "output_tokens": 0, "cached_tokens": 0,
                       "reasoning_tokens": 0, "cache_write_tokens": 0}
        self.last_input_tokens: int | None = None
        self.cost: float | None = 0.0
        self.turn = 0

    # -- the loop -------------------------------------------------------------------------------

    def run(self) -> AgentOutcome:
        limits = self.agent.limits
        try:
            while self.turn < limits.max_rounds:
                reply = self._model_turn(final=False)
                if reply.block_reason or not reply.tool_calls:
                    return self._answered(reply, forced=False)
                self._run_tools(reply.tool_calls)
                capped = self._cap_reached()
                if capped:
                    return self._outcome("incomplete", None, capped, forced=False)
                if self._budget_used() >= limits.max_tool_calls and all(
                    e.error_kind == "budget" for e in self.evidence[-len(reply.tool_calls):]
                ):
                    break  # the model keeps calling tools with the budget spent
            self.messages.append(UserMessage(FINAL_ANSWER_PROMPT))
            reply = self._model_turn(final=True)
            return self._answered(reply, forced=True)
        except ModelCallError as exc:
            if exc.kind == "context_overflow":  # another request cannot fit either
                return self._outcome("incomplete", None, self._overflow_reason(exc),
                                     forced=False, error=str(exc))
            return self._outcome("failed", None, f"model call failed: {exc}", forced=False,
                                 error=str(exc), retryable=exc.retryable)

    def _overflow_reason(self, exc: ModelCallError) -> str:
        """"context window exceeded at turn N (<how many tokens, as the provider says>)"."""
        said = (exc.attempts[-1].error or "") if exc.attempts else ""
        said = said.split("context window exceeded: ", 1)[-1].strip()
        if not re.search(r"\d", said) and self.last_input_tokens:
            said = f"the previous request had {self.last_input_tokens} input tokens"
        return f"context window exceeded at turn {self.turn} ({said[:300] or 'size not reported'})"

    def _answered(self, reply: Reply, *, forced: bool, retold: bool = False) -> AgentOutcome:
        text = (reply.text or "").strip()
        if reply.block_reason:
            said = f": {reply.block_message}" if reply.block_message else ""
            what = "reply" if reply.finish_reason else "prompt"  # no candidate: the prompt
            return self._outcome("incomplete", None,
                                 f"the provider blocked the {what} ({reply.block_reason}){said}",
                                 forced=forced)
        if reply.truncated:
            if not retold:  # ask once more for a short final answer, recorded as a turn
                self.messages.append(UserMessage(TRUNCATED_PROMPT))
                return self._answered(self._model_turn(final=True), forced=True, retold=True)
            return self._outcome(
                "incomplete", None, f"the answer was cut off at the output limit (finish "
                f"reason {reply.finish_reason}) twice, the second time after being asked for a "
                "short final answer", forced=forced)
        if retold:
            reason = ("the answer was cut off at the output limit; asked once more, the model "
                      "gave a short final answer")
        elif forced:
            reason = ("tool budget or round limit reached: the final request asked for the best "
                      "answer from what was found")
        else:
            reason = "answered"
        if not text:
            return self._outcome("incomplete", None, reason + "; the model gave no answer text",
                                 forced=forced)
        return self._outcome("complete", text, reason, forced=forced)

    def _cap_reached(self) -> str | None:
        limits = self.agent.limits
        used = self.tokens["input_tokens"] + self.tokens["output_tokens"]
        if limits.max_tokens is not None and used >= limits.max_tokens:
            return f"token cap reached ({used} >= {limits.max_tokens} tokens)"
        if (limits.max_cost_usd is not None and self.cost is not None
                and self.cost >= limits.max_cost_usd):
            return f"cost cap reached (${self.cost:.4f} >= ${limits.max_cost_usd:.4f})"
        return None

    # -- one model turn -------------------------------------------------------------------------

    def _model_turn(self, *, final: bool) -> Reply:
        self.turn += 1
        saved = self.saved_turns.get(self.turn)
        if saved is not None:  # resume: the same request was answered before; reuse it
            self._count_reply(saved)
            self.messages.append(saved.reply.message)
            return saved.reply
        settings = self.agent.settings
        if final:
            settings = replace(settings, tool_choice="none")
        label = f"{self.case_id}/turn-{self.turn:02d}"
        request = ModelRequest(tuple(self.messages), self.specs, settings, "answer", label)
        try:
            result = self.agent.model.complete(request, self.sink)
        except ModelCallError as exc:
            self._record_attempts(label, exc.attempts, final, request)
            self._add_cost(total_cost(exc.attempts))
            raise
        ok = result.attempts[-1] if result.attempts else None
        cost = total_cost(result.attempts)
        reply = result.reply
        turn = ModelTurn(
            turn=self.turn, label=label, request_path=ok.request_path if ok else None,
            response_path=ok.response_path if ok else None, reply=reply,
            attempt_count=len(result.attempts), final=final, cost_usd=cost)
        self._record_attempts(label, result.attempts, final, request, turn)  # one write a turn
        self._count_reply(turn)
        self.messages.append(reply.message)
        return reply

    def _record_attempts(self, label: str, attempts: tuple, final: bool, request: ModelRequest,
                         turn: ModelTurn | None = None) -> None:
        """Journal the attempts (and the turn they produced) with one fdatasync; each says which
        tool results its request carried, so the exports need not parse the request for it."""
        self.attempt_count += len(attempts)
        if self.journal is not None:
            role: Literal["final_answer", "answer"] = "final_answer" if final else "answer"
            carried = tuple(m.call_id for m in request.messages if isinstance(m, ToolMessage))
            events = [ModelAttempt(label=label, attempt=a, role=role, tool_results=carried)
                      for a in attempts]
            self.journal.append_many(events + ([turn] if turn is not None else []))

    def _count_reply(self, turn: ModelTurn) -> None:
        """Count a successful turn; its cost covers all its attempts, retries included."""
        self.turns.append(turn)
        usage = turn.reply.usage
        for key in self.tokens:
            self.tokens[key] += getattr(usage, key) or 0
        self.last_input_tokens = usage.input_tokens
        self._add_cost(turn.cost_usd)

    def _add_cost(self, usd: float | None) -> None:
        if usd is None:
            self.cost = None  # unknown stays unknown: never counted as zero
        elif self.cost is not None:
            self.cost += usd

    # -- tools ----------------------------------------------------------------------------------

    def _run_tools(self, calls: tuple[ToolCall, ...]) -> None:
        for call in calls:
            event = self.saved_tools.get((self.turn, call.id)) or self._execute(call)
            self.evidence.append(event)
            if event.model_text is None:  # the store puts offloaded texts back on reading
                raise RunError(f"tool call {call.id} of turn {self.turn}: its model text is "
                               "missing from the journal")
            self.messages.append(ToolMessage(call.id, call.name, event.model_text))

    def _budget_used(self) -> int:
        return sum(bool(e.budgeted) for e in self.evidence)

    def _execute(self, call: ToolCall) -> ToolCallEvent:
        budget = self.agent.limits.max_tool_calls
        if self._budget_used() >= budget:
            result = error_result(
                call.name, call.arguments, "budget",
                f"tool budget of {budget} calls is spent; answer from what you have found")
            budgeted = dispatched = False
        else:
            budgeted = dispatched = True
            if call.arguments_error:  # argument text that does not parse: an error value
                result = error_result(call.name, call.raw_arguments, "validation",
                                      f"{call.arguments_error}; send the arguments as one JSON "
                                      "object")
                dispatched = False
            else:
                arguments: object = call.arguments
                if call.raw_arguments is not None and not call.arguments:
                    arguments = call.raw_arguments  # the tools report unparseable argument text
                result = self.agent.tools.call_raw(call.name, arguments)
        event = ToolCallEvent(
            turn=self.turn, call_id=call.id, name=call.name, arguments=dict(call.arguments),
            ok=result.ok, model_text=result.model_text(), output=result.output,
            error_kind=result.error.kind if result.error else None,
            error_message=result.error.message if result.error else None,
            budgeted=budgeted, dispatched=dispatched, cache_hit=result.cache_hit,
            timings=result.timings, worker_id=result.worker_id,
            peak_rss_bytes=result.peak_rss_bytes, skip_index=result.skip_index)
        if self.journal is not None:
            self.journal.append(event)
        return event

    # -- the outcome ----------------------------------------------------------------------------

    def _outcome(self, status: str, answer: str | None, reason: str, *, forced: bool,
                 error: str | None = None, retryable: bool = False) -> AgentOutcome:
        return AgentOutcome(
            status=status, answer=answer, reason=reason, forced_final=forced,
            counts=tally(self.turns, self.evidence, self.attempt_count),
            messages=tuple(self.messages),
            evidence=tuple(self.evidence), usage=dict(self.tokens), cost_usd=self.cost,
            error=error, retryable=retryable)

