"""Deterministic checks beside every judgment: no model, the same figures every time.

`deterministic_checks(inp)`: do the cited spans (`[source: <file_stem>, chars a-b]`) occur in
text the agent actually received, does a numeric answer match the reference within a
tolerance, does the answer (or the reference) decline to answer. The offline rubric judge
(`judge.rubric`) grades from these alone; agreement tables compare LLM judges with them.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from parquet_agent.judge.judgment import JudgeInput

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


_NOT_FOUND = re.compile(
    r"\b(not (?:be )?(?:found|present|contain|available|answer|possible to (?:determine|provide|"
    r"calculate|answer|say))|no (?:such|filing|record|information|explicit|specific|data)|"
    r"cannot (?:be )?(?:found|answer|determine|provide|calculate)|can't (?:provide|determine|"
    r"answer|find)|could not find|couldn't find|(?:does|do) not (?:contain|include|appear|provide|"
    r"mention|specify|have)|(?:doesn't|don't) (?:contain|include|provide|mention|specify|have)|"
    r"is not (?:provided|included|mentioned|specified)|unable to|sorry, but)", re.I)


def says_not_found(text: str | None) -> bool:
    """Whether `text` declines to answer: "the corpus does not contain...", "I could not
    find...". On an answer this is an abstention; on a reference, an unanswerable question."""
    return bool(_NOT_FOUND.search(text or ""))


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
        "answer_says_not_found": says_not_found(inp.candidate_answer),
        "reference_says_not_found": says_not_found(inp.reference_answer),
        "answerable": inp.answerable,
    }
