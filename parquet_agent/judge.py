"""The judge: an independent model scores each answer, beside deterministic checks.

    judge = Judge(model)
    verdict = judge.judge(JudgeInput(...), sink=run.raw, label="Q001__flash__sql/judge")

The judge model receives the question, the candidate answer, the reference answer, the gold
evidence and the full tool evidence the agent received, and must return JSON
`{"correctness": 0-100, "citation_support": 0-100, "rationale": "..."}`. The prompt is versioned
(`JUDGE_PROMPT_VERSION`) and hashed (`judge_prompt_hash()`) into the run manifest; temperature 0
is asked for (adapters record "not supported" where a model takes none). A malformed judgment is
retried; after `max_attempts` it is recorded as unscored (scores None), never as 0.

Deterministic checks are computed beside every judgment (`deterministic_checks`): do the cited
spans occur in text the agent actually received, and does a numeric answer match the reference
within a tolerance. `RubricJudgeModel` is an offline judge built from those checks alone: it
reads the same judge request, so offline runs leave the same audit trail as real ones.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from parquet_agent.errors import ModelCallError
from parquet_agent.models.scripted import offline_complete, to_reply
from parquet_agent.models.protocol import (
    Attempt,
    GenerationSettings,
    Model,
    ModelRequest,
    ModelResult,
    RawSink,
    SystemMessage,
    UserMessage,
)

JUDGE_PROMPT_VERSION = "judge-v1"

JUDGE_SYSTEM = """\
You are an impartial grader of answers to questions about SEC filings. You get the question, a
candidate answer written by an agent, the reference answer, the gold evidence, and every tool
output the agent received. Grade two things from 0 to 100:
- correctness: does the candidate answer say what the reference answer says? Numbers must match
  the reference (allow rounding and unit changes such as millions vs billions). An answer that
  says the corpus cannot answer is correct only if the reference says so too.
- citation_support: are the candidate's claims supported by the tool outputs it cites (citations
  look like [source: <file_stem>, chars <start>-<end>])? Uncited or unsupported claims lower it.
Reply with JSON only, no prose around it:
{"correctness": <0-100>, "citation_support": <0-100>, "rationale": "<two or three sentences>"}"""

_INPUT_MARKER = "JUDGE_INPUT_JSON"


def judge_prompt_hash() -> str:
    return "sha256:" + hashlib.sha256(
        (JUDGE_PROMPT_VERSION + "\n" + JUDGE_SYSTEM).encode()).hexdigest()


@dataclass(frozen=True)
class JudgeInput:
    question: str
    candidate_answer: str | None
    reference_answer: str
    gold_evidence: tuple[dict[str, Any], ...]  # {file_stem, quote, start, end}
    tool_evidence: tuple[dict[str, Any], ...]  # {call_id, name, arguments, output}: as received
    # the text at each cited span, looked up by the harness: {file_stem, start, end, text|None}
    cited_spans: tuple[dict[str, Any], ...] = ()

    def render(self) -> str:
        data = asdict(self)
        data["candidate_answer"] = self.candidate_answer or "(no answer)"
        return (f"{_INPUT_MARKER}\n```json\n"
                + json.dumps(data, ensure_ascii=False, indent=1) + "\n```")


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


CHARS_PER_TOKEN = 3  # conservative for English prose and JSON: fitting must not overflow
JUDGE_OUTPUT_TOKENS = 1024


def fit_evidence(inp: JudgeInput, max_chars: int) -> tuple[JudgeInput, dict[str, Any] | None]:
    """`inp` with its tool evidence cut so that `inp.render()` fits `max_chars`, and what was cut
    (None when it fits as it is). The longest tool outputs are cut first, to one common length,
    each keeping its head and saying how long it was; nothing else is changed."""
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
    after = len(fitted.render())
    return fitted, {"max_chars": max_chars, "chars_before": before, "chars_after": after,
                    "tool_outputs_cut": cut, "fits": after <= max_chars}


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
    the evidence is then fitted to it (`fit_evidence`), recorded in the verdict's provenance."""

    def __init__(self, model: Model, *, max_attempts: int = 3, context_tokens: int | None = None):
        self.model = model
        self.max_attempts = max_attempts
        self.context_tokens = context_tokens

    def judge(self, inp: JudgeInput, *, sink: RawSink, label: str) -> Verdict:
        checks = deterministic_checks(inp)
        provenance = {"judge": self.model.name, "provider": self.model.provider,
                      "model": self.model.model, "prompt_version": JUDGE_PROMPT_VERSION,
                      "prompt_hash": judge_prompt_hash()}
        if self.context_tokens:
            room = (self.context_tokens - JUDGE_OUTPUT_TOKENS) * CHARS_PER_TOKEN - len(JUDGE_SYSTEM)
            inp, cut = fit_evidence(inp, max(0, room))
            if cut is not None:
                provenance["evidence_cut"] = cut
        request = ModelRequest(
            messages=(SystemMessage(JUDGE_SYSTEM), UserMessage(inp.render())),
            settings=GenerationSettings(temperature=0.0, max_output_tokens=JUDGE_OUTPUT_TOKENS),
            purpose="judge", label=label)
        attempts: list[Attempt] = []
        problem = "no attempt made"
        paths: tuple[str | None, str | None] = (None, None)
        for number in range(1, self.max_attempts + 1):
            numbered = replace(request, label=f"{label}-{number:02d}" if number > 1 else label)
            try:
                result = self.model.complete(numbered, sink)
            except ModelCallError as exc:
                attempts += exc.attempts
                problem = f"judge call failed: {exc}"
                if not exc.retryable:
                    break
                continue
            attempts += result.attempts
            last = result.attempts[-1] if result.attempts else None
            paths = (last.request_path, last.response_path) if last else (None, None)
            parsed, problem = parse_judgment(result.reply.text)
            if parsed is not None:
                return Verdict(parsed["correctness"], parsed["citation_support"],
                               parsed["rationale"], True, None, *paths, tuple(attempts),
                               checks, provenance)
        return Verdict(None, None, None, False, problem, *paths, tuple(attempts), checks,
                       provenance)


def parse_judgment(text: str | None) -> tuple[dict[str, Any] | None, str]:
    """The judge's JSON, validated; or None and what was wrong with it."""
    if not text:
        return None, "empty judgment"
    match = re.search(r"\{.*\}", text, re.DOTALL)
    if not match:
        return None, "no JSON object in the judgment"
    try:
        data = json.loads(match.group(0))
    except ValueError as exc:
        return None, f"judgment is not valid JSON: {exc}"
    out: dict[str, Any] = {}
    for key in ("correctness", "citation_support"):
        value = data.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 100:
            return None, f"judgment field {key!r} must be a number from 0 to 100, got {value!r}"
        out[key] = float(value)
    rationale = data.get("rationale")
    if not isinstance(rationale, str) or not rationale.strip():
        return None, "judgment has no rationale"
    out["rationale"] = rationale.strip()
    return out, ""


# -- deterministic checks -----------------------------------------------------------------------

_CITATION = re.compile(
    r"\[source:\s*(?P<stem>[^,\]\s]+)\s*,\s*chars?\s*(?P<start>\d+)\s*[-–]\s*(?P<end>\d+)\s*\]"
    r"|Source:\s*(?P<stem2>[^\s\[\]]+)\s*\[(?P<start2>\d+),\s*(?P<end2>\d+)\)", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])\$?(?P<num>\d[\d,]*(?:\.\d+)?)\s*(?P<unit>%|percent|thousand|"
                     r"million|billion|bn|mn)?", re.IGNORECASE)
_SCALE = {"thousand": 1e3, "million": 1e6, "mn": 1e6, "billion": 1e9, "bn": 1e9}
NUMERIC_TOLERANCE = 0.01  # relative


def citations(answer: str | None) -> list[tuple[str, int, int]]:
    out = []
    for m in _CITATION.finditer(answer or ""):
        stem = m.group("stem") or m.group("stem2")
        start = int(m.group("start") or m.group("start2"))
        end = int(m.group("end") or m.group("end2"))
        out.append((stem, start, end))
    return out


def _received_spans(tool_evidence: tuple[dict[str, Any], ...]) -> dict[str, list[tuple[int, int]]]:
    """Character ranges of each filing that tool outputs showed the agent (read_filing)."""
    spans: dict[str, list[tuple[int, int]]] = {}

    def add(stem: Any, start: Any, text: Any, end: Any = None) -> None:
        if isinstance(stem, str) and isinstance(start, int):
            stop = end if isinstance(end, int) else start + len(text or "")
            spans.setdefault(stem, []).append((start, stop))

    for item in tool_evidence:
        output = item.get("output")
        if not isinstance(output, dict):
            continue
        stem = output.get("file_stem")
        if "text" in output:
            add(stem, output.get("start"), output.get("text"), output.get("end"))
        for window in output.get("windows") or ():
            if isinstance(window, dict):
                add(stem, window.get("start"), window.get("text"), window.get("end"))
    return spans


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _strings(v)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _strings(v)]
    return []


def _squash(text: str) -> str:
    return " ".join(text.split())


def _received_text(tool_evidence: tuple[dict[str, Any], ...]) -> str:
    """Every string the tools returned to the agent, whitespace-normalised, in one text."""
    return "\n".join(_squash(t) for item in tool_evidence for t in _strings(item.get("output")))


def numbers(text: str | None, *, scaled: bool = True) -> list[float]:
    """Absolute values of the numbers in `text`, times the unit word that follows each
    (`scaled`), or as written. Signs are ignored: a reference "(1,234)" and an answer "-1,234"
    state the same figure."""
    values = []
    for m in _NUMBER.finditer(text or ""):
        value = float(m.group("num").replace(",", ""))
        if scaled:
            value *= _SCALE.get((m.group("unit") or "").lower(), 1.0)
        values.append(value)
    return values


def _figures(text: str | None) -> set[float]:
    """A text's numbers both as written and scaled by their unit words, citations removed
    (a citation's character offsets are not figures)."""
    text = _CITATION.sub(" ", text or "")
    return set(numbers(text)) | set(numbers(text, scaled=False))


def _numeric_match(candidate: str | None, reference: str) -> bool | None:
    """True/False when the reference states a figure; None when it has none to match.

    The reference's first figure (not a year) must appear in the answer within the tolerance,
    as written ("813" for "$813 million") or in other units that the answer names ("$0.81
    billion"); no blind rescaling, so unrelated numbers do not match by accident."""
    ref = [(s, w) for s, w in zip(numbers(_CITATION.sub(" ", reference)),
                                  numbers(_CITATION.sub(" ", reference), scaled=False))
           if not 1900 <= w <= 2100]  # years are not answers
    if not ref:
        return None
    targets = set(ref[0])
    return any(abs(value - target) <= NUMERIC_TOLERANCE * max(target, 1e-9)
               for value in _figures(candidate) for target in targets)


_NOT_FOUND = re.compile(r"\b(not (?:be )?(?:found|present|contain|available|answer)|no (?:such|"
                        r"filing|record|information)|cannot (?:be )?(?:found|answer|determine)|"
                        r"could not find|does not (?:contain|include|appear)|unable to)", re.I)


def deterministic_checks(inp: JudgeInput) -> dict[str, Any]:
    """Checks that need no model: citations against received text, numeric match, refusals."""
    cited = citations(inp.candidate_answer)
    spans = _received_spans(inp.tool_evidence)
    received = _received_text(inp.tool_evidence)
    looked_up = {(c["file_stem"], c["start"], c["end"]): c.get("text") for c in inp.cited_spans}
    results = []
    for stem, start, end in cited:
        in_excerpt = any(s <= start and end <= e for s, e in spans.get(stem, ()))
        text = looked_up.get((stem, start, end))
        in_text = bool(text and text.strip() and _squash(text) in received)
        results.append({"file_stem": stem, "start": start, "end": end,
                        "span_exists": text is not None,
                        "inside_received_excerpt": in_excerpt,
                        "text_in_received_output": in_text,
                        "supported": in_excerpt or in_text})
    gold_stems = {g.get("file_stem") for g in inp.gold_evidence}
    return {
        "citations": results,
        "citation_count": len(cited),
        "citations_covered": sum(r["supported"] for r in results),
        "cites_gold_filing": any(r["file_stem"] in gold_stems for r in results) if cited else False,
        "numeric_match": _numeric_match(inp.candidate_answer, inp.reference_answer),
        "numeric_tolerance": NUMERIC_TOLERANCE,
        "answer_says_not_found": bool(_NOT_FOUND.search(inp.candidate_answer or "")),
        "reference_says_not_found": bool(_NOT_FOUND.search(inp.reference_answer)),
    }


# -- the offline rubric judge -------------------------------------------------------------------


class RubricJudgeModel:
    """An offline judge model: scores from the deterministic checks, through the protocol.

    It reads the judge request's JSON block, so it grades exactly what a real judge would see,
    and writes its request and reply into the sink like any offline model.
    """

    provider = "baseline"

    def __init__(self, name: str = "rubric", model: str = "rubric-judge-1"):
        self.name = name
        self.model = model

    def complete(self, request: ModelRequest, sink: RawSink) -> ModelResult:
        return offline_complete(
            request, sink, lambda: to_reply(self.grade(request), self.model, self.provider),
            model=self.model, provider=self.provider,
            source=f"{self.provider} model {self.name!r} (no network)")

    def grade(self, request: ModelRequest) -> str:
        if request.purpose == "health":
            return "OK"
        inp = _input_from_request(request)
        checks = deterministic_checks(inp)
        correctness, why = _rubric_correctness(inp, checks)
        if checks["citation_count"]:
            support = 100.0 * checks["citations_covered"] / checks["citation_count"]
            cite_why = (f"{checks['citations_covered']} of {checks['citation_count']} cited "
                        "spans are text the agent actually received")
        else:
            support, cite_why = 0.0, "the answer cites nothing"
        return json.dumps({"correctness": round(correctness), "citation_support": round(support),
                           "rationale": f"Rubric (no model): {why}; {cite_why}."})


def _input_from_request(request: ModelRequest) -> JudgeInput:
    for message in request.messages:
        if isinstance(message, UserMessage) and _INPUT_MARKER in message.text:
            body = message.text.split("```json", 1)[1].rsplit("```", 1)[0]
            data = json.loads(body)
            return JudgeInput(
                question=data["question"], candidate_answer=data["candidate_answer"],
                reference_answer=data["reference_answer"],
                gold_evidence=tuple(data["gold_evidence"]),
                tool_evidence=tuple(data["tool_evidence"]),
                cited_spans=tuple(data.get("cited_spans", ())))
    raise ValueError("the rubric judge needs a request built by Judge (no JUDGE_INPUT_JSON)")


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9][a-z0-9.\-]*", text.lower()) if len(w) > 2}


def _rubric_correctness(inp: JudgeInput, checks: dict[str, Any]) -> tuple[float, str]:
    answer = inp.candidate_answer or ""
    if not answer or answer == "(no answer)":
        return 0.0, "no answer"
    if checks["reference_says_not_found"]:
        ok = checks["answer_says_not_found"]
        return (100.0 if ok else 0.0), ("the corpus cannot answer this and the answer "
                                        + ("says so" if ok else "claims an answer"))
    if checks["answer_says_not_found"]:
        return 0.0, "the answer says nothing was found but the reference has an answer"
    if checks["numeric_match"] is not None:
        ok = checks["numeric_match"]
        return (100.0 if ok else 0.0), ("a number in the answer matches the reference within "
                                        f"{NUMERIC_TOLERANCE:.0%}" if ok else
                                        "no number in the answer matches the reference")
    ref = _content_words(inp.reference_answer)
    overlap = len(ref & _content_words(answer)) / max(len(ref), 1)
    return 100.0 * overlap, f"{overlap:.0%} of the reference's content words are in the answer"
