"""`BaselineModel`: a deterministic, non-LLM policy behind the one model protocol.

It is a floor that real models must beat and what the offline demo runs. Each `complete` call
re-reads the whole conversation (the question in the first user message; tool results in
`ToolMessage`s, paired with the calls that asked for them) and decides one next step:

1. find the company: `search_headers(query=<name>)` for each name variant in the question
   (or a CIK); with only `sql`, a query over the first 3,000 characters of `parsed_md` (where the
   issuer header is) or over `accession` for a CIK, returning `file_stem`, `year`, `month`;
2. rank the filings found (form type and fiscal year from the question) and read the best one or
   two near the question's key terms: `read_filing(file_stem, pattern=<term>)`, or with only
   `sql` a `file_stem`-scoped `instr`/`substr` excerpt;
3. answer with the best-matching sentence, line or table cell, citing `file_stem` and the exact
   `[start, end)` character offsets into `parsed_md`; or say that it found nothing.

Bounded: at most `max_tool_calls` calls, `max_reads` reads per filing, `max_filings` filings.
The final answer ends with a line `Source: <file_stem> [<start>, <end>)`. The same raw files
as the scripted model are written to the sink; cost 0. How tool outputs are read is in
`baseline_reading.py` (one place, defensive).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from parquet_agent.models.baseline_reading import (
    Candidate,
    Passage,
    QuestionTerms,
    header_candidates,
    is_error,
    parse_output,
    read_passages,
    read_question,
    sql_candidates,
)
from parquet_agent.models.protocol import (
    AssistantMessage,
    ModelRequest,
    ModelResult,
    RawSink,
    Reply,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from parquet_agent.models.scripted import offline_complete

_SENTENCE = re.compile(r"[^\n]*?(?:[.;:](?=\s)|\n|$)")


@dataclass(frozen=True)
class Answer:
    text: str
    file_stem: str | None
    start: int | None
    end: int | None


class BaselineModel:
    provider = "baseline"

    def __init__(self, name: str = "baseline", model: str = "baseline-1", *,
                 max_tool_calls: int = 10, max_reads: int = 3, max_filings: int = 2):
        self.name = name
        self.model = model
        self.max_tool_calls = max_tool_calls
        self.max_reads = max_reads
        self.max_filings = max_filings

    def complete(self, request: ModelRequest, sink: RawSink) -> ModelResult:
        return offline_complete(
            request, sink, lambda: self.decide(request), model=self.model,
            provider=self.provider,
            source=f"baseline policy {self.model} (deterministic, no network)")

    # -- the policy ---------------------------------------------------------------------

    def decide(self, request: ModelRequest) -> Reply:
        question = next((m.text for m in request.messages if isinstance(m, UserMessage)), "")
        terms = read_question(question)
        tools = {t.name for t in request.tools}
        history = _history(request)
        done = {_key(c.name, c.arguments) for c, _ in history}
        turn = sum(1 for m in request.messages if isinstance(m, AssistantMessage))

        def call(name: str, **arguments: Any) -> Reply | None:
            if name not in tools or _key(name, arguments) in done:
                return None
            return _tool_reply(ToolCall(id=f"baseline-{turn + 1}", name=name, arguments=arguments),
                               self.model)

        candidates: list[Candidate] = []
        passages: list[Passage] = []
        for c, data in history:
            if is_error(data):
                continue
            if c.name == "search_headers":
                candidates += header_candidates(data)
            elif c.name == "sql" and not c.arguments.get("file_stem"):
                candidates += sql_candidates(data)
            elif c.name in ("read_filing", "sql"):
                passages += read_passages(data, str(c.arguments.get("file_stem", "")))

        best = best_answer(passages, terms)
        if best is not None and best[0] >= _good_enough(terms):
            return _final(best[1], self.model)
        if (len(history) >= self.max_tool_calls or not tools
                or request.settings.tool_choice == "none"):  # the agent asks for the answer now
            return _final(best[1] if best else _nothing(terms), self.model)

        if not candidates:
            for reply in self._find(terms, call):
                if reply is not None:
                    return reply
            return _final(best[1] if best else _nothing(terms), self.model)

        for cand in rank(_unique(candidates), terms)[: self.max_filings]:
            for reply in self._read(cand, terms, call, "read_filing" in tools):
                if reply is not None:
                    return reply
        return _final(best[1] if best else _nothing(terms), self.model)

    def _find(self, terms: QuestionTerms, call):
        if terms.cik:
            yield call("search_headers", query=terms.cik)
            yield call("sql", query="SELECT file_stem, year, month FROM filings WHERE "
                       f"ltrim(accession, '0') = '{terms.cik.lstrip('0')}' LIMIT 20")
        for name in terms.companies[:3]:
            yield call("search_headers", query=name)
        for name in terms.companies[:2]:
            yield call("sql", query=(
                "SELECT file_stem, year, month, substr(parsed_md, 1, 400) AS head FROM filings "
                f"WHERE contains(lower(substr(parsed_md, 1, 3000)), '{_sql_text(name.lower())}') "
                "LIMIT 20"))

    def _read(self, cand: Candidate, terms: QuestionTerms, call, can_read: bool):
        phrases = terms.phrases[: self.max_reads]
        if can_read:
            if not phrases:
                yield call("read_filing", file_stem=cand.file_stem, start=0, max_chars=4000)
            for p in phrases:
                yield call("read_filing", file_stem=cand.file_stem, pattern=p, max_chars=3000)
            return
        for p in phrases:
            needle = f"instr(lower(parsed_md), '{_sql_text(p.lower())}')"
            yield call("sql", file_stem=cand.file_stem, query=(
                f"SELECT {needle} AS pos, greatest({needle} - 600, 1) AS start1, "
                f"substr(parsed_md, greatest({needle} - 600, 1), 1600) AS excerpt FROM filing"))


def rank(cands: list[Candidate], terms: QuestionTerms) -> list[Candidate]:
    """Filings most likely to hold the answer first (stable for ties)."""

    def score(c: Candidate) -> int:
        s = 0
        blob = f"{c.period} {c.filing_date} {c.head}"
        # With several years ("FY2015 to FY2016") the latest filing holds them all.
        latest = max(terms.years) if terms.years else None
        for y in terms.years:
            if c.period.startswith(y):
                s += 3 if y == latest else 1
            elif y in blob:
                s += 1
        if terms.form_type and (c.form_type.upper() == terms.form_type
                                or terms.form_type in c.head.upper()):
            s += 2
        for name in terms.companies[:1]:
            if c.company.lower() == name.lower():
                s += 2
            elif c.company.lower().startswith(name.lower()):
                s += 1
        return s

    return sorted(cands, key=lambda c: -score(c))


def best_answer(passages: list[Passage], terms: QuestionTerms) -> tuple[float, Answer] | None:
    """The best-scoring segment (sentence, line or table cell) over all passages."""
    best: tuple[float, int, Answer] | None = None
    order = 0
    for p in passages:
        segments = _segments(p.text)
        for i, (s, e) in enumerate(segments):
            seg = p.text[s:e]
            score = _score(seg, terms)
            if score <= 0:
                continue
            if terms.numeric and not _has_figure(seg):
                # Label on one line, figure on the next (PDF text): extend to the first figure.
                for s2, e2 in segments[i + 1 : i + 4]:
                    if _has_figure(p.text[s2:e2]):
                        e = e2
                        score += 0.5
                        break
            cell = _table_cell(p.text, s, e, terms)
            if cell is not None:  # the header names the question's year: that counts as the year
                s, e = cell
                score += 1.0
            order += 1
            text = " ".join(p.text[s:e].split())
            ans = Answer(text, p.file_stem, p.start + s, p.start + e)
            if best is None or score > best[0]:
                best = (score, order, ans)
    return None if best is None else (best[0], best[2])


def _score(seg: str, terms: QuestionTerms) -> float:
    low = seg.lower()
    score = float(sum(1 for st in terms.stems if st in low))
    if score == 0:
        return 0.0
    # A whole multi-word phrase ("capital expenditure") is stronger evidence than its words.
    score += sum(0.5 for p in terms.phrases if " " in p and p in low)
    if terms.phrases and terms.phrases[0] in low:  # the question's most specific term
        score += 1
    if any(y in seg for y in terms.years):
        score += 1
    if terms.numeric and _has_figure(seg):
        score += 1
    return score


def _has_figure(seg: str) -> bool:
    """A number that is not a year or a day of the month: 1,577 / 12.5 / (370) / 4211."""
    for m in re.finditer(r"\d[\d,.]*\d|\d", seg):
        n = m.group(0).rstrip(".,")
        if re.fullmatch(r"(19|20)\d{2}", n):
            continue
        if "," in n or "." in n or len(n) >= 3:
            return True
    return False


def _good_enough(terms: QuestionTerms) -> float:
    need = min(len(terms.stems), 2) + (1 if terms.years else 0) + (1 if terms.numeric else 0)
    return max(1.0, float(need))


def _segments(text: str) -> list[tuple[int, int]]:
    """Sentence/line spans in `text`, whitespace trimmed, at most ~400 chars each."""
    spans = []
    for m in _SENTENCE.finditer(text):
        s, e = m.start(), m.end()
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e - s >= 2:
            while e - s > 400:
                spans.append((s, s + 400))
                s += 400
            spans.append((s, e))
    return spans


def _table_cell(text: str, s: int, e: int, terms: QuestionTerms) -> tuple[int, int] | None:
    """In a Markdown table row, the cell under the header column that names the question's year."""
    line = text[s:e]
    if line.count("|") < 2 or not terms.years:
        return None
    before = text[:s].splitlines()
    header = next((h for h in reversed(before) if h.count("|") >= 2 and
                   any(y in h for y in terms.years)), None)
    if header is None:
        return None
    heads = header.strip().strip("|").split("|")
    col = next((i for i, h in enumerate(heads) if terms.years[0] in h), None)
    if col is None:
        return None
    offset = s + (len(line) - len(line.lstrip()))
    body = line.strip()
    if body.startswith("|"):
        body, offset = body[1:], offset + 1
    pos = 0
    for i, cell in enumerate(body.split("|")):
        if i == col:
            lead = len(cell) - len(cell.lstrip())
            if not cell.strip():
                return None
            cs = offset + pos + lead
            return cs, cs + len(cell.strip())
        pos += len(cell) + 1
    return None


def _history(request: ModelRequest) -> list[tuple[ToolCall, Any]]:
    results = {m.call_id: m.content for m in request.messages if isinstance(m, ToolMessage)}
    out = []
    for m in request.messages:
        if isinstance(m, AssistantMessage):
            for c in m.tool_calls:
                if c.id in results:
                    out.append((c, parse_output(results[c.id])))
    return out


def _unique(cands: list[Candidate]) -> list[Candidate]:
    seen, out = set(), []
    for c in cands:
        if c.file_stem not in seen:
            seen.add(c.file_stem)
            out.append(c)
    return out


def _key(name: str, arguments: dict) -> str:
    return name + json.dumps(arguments, sort_keys=True)


def _sql_text(value: str) -> str:
    return value.replace("'", "''")


def _nothing(terms: QuestionTerms) -> Answer:
    looked = ", ".join(terms.companies[:2]) or "no company name"
    return Answer(f"I could not find the answer in the corpus (looked for: {looked}).",
                  None, None, None)


def _tool_reply(call: ToolCall, model: str) -> Reply:
    return Reply(text=None, tool_calls=(call,), finish_reason="tool_calls", response_id=None,
                 model=model, provider="baseline", usage=Usage(0, 0, 0, 0),
                 message=AssistantMessage(text=None, tool_calls=(call,)))


def _final(answer: Answer, model: str) -> Reply:
    text = answer.text
    if answer.file_stem is not None:
        text = f"{text}\n\nSource: {answer.file_stem} [{answer.start}, {answer.end})"
    return Reply(text=text, tool_calls=(), finish_reason="stop", response_id=None, model=model,
                 provider="baseline", usage=Usage(0, 0, 0, 0),
                 message=AssistantMessage(text=text))

