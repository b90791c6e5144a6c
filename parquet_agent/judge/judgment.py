"""What the judge is asked and how its answer is read: the prompt, the input block, the judgment
schema and its parser.

The judge gets the question, the candidate answer, the reference answer, whether the question
is answerable from the corpus, the gold evidence and every tool output the agent received
(`JudgeInput.render()`: one JSON block after the `JUDGE_INPUT_JSON` marker, which the offline
rubric judge and the report read back). It answers with one JSON object (`JUDGMENT_SCHEMA`):

    {"rationale": "...", "verdict": "correct" | "incorrect" | "abstained",
     "correctness": 0-100, "citation_support": 0-100}

`verdict` tells an abstention ("the corpus does not contain...", "I could not find...") on an
answerable question apart from a wrong answer; on a question the corpus cannot answer, saying
so is `correct`. The prompt is versioned (`JUDGE_PROMPT_VERSION`) and hashed
(`judge_prompt_hash()`, over the prompt and the schema) into the run manifest.

`parse_reply(reply)` reads the object from a forced tool call named `record_judgment` (Anthropic
structured output) or else from the reply's text, and validates it: `(judgment, "")` or
`(None, what was wrong)`, the message a repair request quotes.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass
from typing import Any

from parquet_agent.models.protocol import (
    ModelRequest,
    Reply,
    ResponseSchema,
    UserMessage,
)
from parquet_agent.transcript.events import VERDICTS

JUDGE_PROMPT_VERSION = "judge-v2"

JUDGE_SYSTEM = """\
You are an impartial grader of answers to questions about SEC filings. You get the question, a
candidate answer written by an agent, the reference answer, whether the question is answerable
from the corpus, the gold evidence, and every tool output the agent received. Grade:
- verdict: "correct" when the candidate answer says what the reference answer says (numbers must
  match the reference, allowing rounding and unit changes such as millions vs billions);
  "abstained" when the candidate gives no answer and says it could not find one or that the
  corpus does not contain it, while the question is answerable; "incorrect" otherwise. When the
  question is not answerable from the corpus, an answer that says so is "correct" and an answer
  that claims a figure is "incorrect".
- correctness, 0 to 100: how fully the candidate answer says what the reference answer says.
- citation_support, 0 to 100: are the candidate's claims supported by the tool outputs it cites
  (citations look like [source: <file_stem>, chars <start>-<end>])? Uncited or unsupported claims
  lower it.
Reply with one JSON object only, no prose around it:
{"rationale": "<two or three sentences>", "verdict": "correct" | "incorrect" | "abstained",
 "correctness": <0-100>, "citation_support": <0-100>}"""

JUDGMENT_TOOL = "record_judgment"
JUDGMENT_SCHEMA = ResponseSchema(JUDGMENT_TOOL, {
    "type": "object",
    "properties": {
        "rationale": {"type": "string", "description": "two or three sentences"},
        "verdict": {"type": "string", "enum": list(VERDICTS)},
        "correctness": {"type": "number", "description": "0 to 100"},
        "citation_support": {"type": "number", "description": "0 to 100"},
    },
    "required": ["rationale", "verdict", "correctness", "citation_support"],
    "additionalProperties": False,
})

INPUT_MARKER = "JUDGE_INPUT_JSON"


def judge_prompt_hash() -> str:
    """The hash of what defines a judgment: prompt version, system prompt and schema."""
    text = (JUDGE_PROMPT_VERSION + "\n" + JUDGE_SYSTEM + "\n"
            + json.dumps(JUDGMENT_SCHEMA.schema, sort_keys=True))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class JudgeInput:
    question: str
    candidate_answer: str | None
    reference_answer: str
    gold_evidence: tuple[dict[str, Any], ...]  # {file_stem, quote, start, end}
    tool_evidence: tuple[dict[str, Any], ...]  # {call_id, name, arguments, output}: as received
    # the text at each cited span, looked up by the harness: {file_stem, start, end, text|None}
    cited_spans: tuple[dict[str, Any], ...] = ()
    answerable: bool = True  # the corpus holds the answer (Reference.answerable)

    def render(self) -> str:
        data = asdict(self)
        data["candidate_answer"] = self.candidate_answer or "(no answer)"
        return (f"{INPUT_MARKER}\n```json\n"
                + json.dumps(data, ensure_ascii=False, indent=1) + "\n```")


def input_from_request(request: ModelRequest) -> JudgeInput:
    """The `JudgeInput` a judge request was built from (ValueError when it holds none)."""
    for message in request.messages:
        if isinstance(message, UserMessage) and INPUT_MARKER in message.text:
            body = message.text.split("```json", 1)[1].rsplit("```", 1)[0]
            data = json.loads(body)
            return JudgeInput(
                question=data["question"], candidate_answer=data["candidate_answer"],
                reference_answer=data["reference_answer"],
                gold_evidence=tuple(data["gold_evidence"]),
                tool_evidence=tuple(data["tool_evidence"]),
                cited_spans=tuple(data.get("cited_spans", ())),
                answerable=bool(data.get("answerable", True)))
    raise ValueError("the request holds no judge input (no JUDGE_INPUT_JSON block): build it "
                     "with parquet_agent.judge.Judge")


def parse_reply(reply: Reply) -> tuple[dict[str, Any] | None, str]:
    """The judgment in `reply`: a `record_judgment` tool call's arguments, else its text."""
    for call in reply.tool_calls:
        if call.name == JUDGMENT_TOOL:
            if call.arguments_error:
                return None, f"the {JUDGMENT_TOOL} call's arguments: {call.arguments_error}"
            return validate_judgment(call.arguments)
    return parse_judgment(reply.text)


def parse_judgment(text: str | None) -> tuple[dict[str, Any] | None, str]:
    """The judge's JSON object in `text` (prose around it is tolerated), validated."""
    if not text:
        return None, "empty judgment"
    match = re.search(r"\{.*\}", text, re.DOTALL)
    if not match:
        return None, "no JSON object in the judgment"
    try:
        data = json.loads(match.group(0))
    except ValueError as exc:
        return None, f"judgment is not valid JSON: {exc}"
    return validate_judgment(data)


def validate_judgment(data: Any) -> tuple[dict[str, Any] | None, str]:
    if not isinstance(data, dict):
        return None, f"judgment must be a JSON object, got {type(data).__name__}"
    out: dict[str, Any] = {}
    verdict = data.get("verdict")
    if verdict not in VERDICTS:
        return None, f"judgment field 'verdict' must be one of {list(VERDICTS)}, got {verdict!r}"
    out["verdict"] = verdict
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


def repair_request(problem: str) -> str:
    """The user turn that asks a judge to fix a judgment that did not parse."""
    return (f"Your judgment could not be read: {problem}. Reply again with only the JSON object "
            "described above (keys rationale, verdict, correctness, citation_support; verdict "
            f"one of {', '.join(VERDICTS)}; scores are numbers from 0 to 100).")
