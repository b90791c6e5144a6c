"""Questions, reference answers and gold evidence: the seam between a question set and its users.

The questions file (a contract, DESIGN.md) is JSON lines, one object per question::

    {"question_id": "Q001", "question": "...", "reference_answer": "...",
     "gold_evidence": [{"file_stem": "...", "quote": "...", "start": 10, "end": 42}],
     "kind": "table_fact"}

`kind` is optional. `start`/`end` are character offsets into the filing's `parsed_md`, so
`parsed_md[start:end] == quote`.

The file is split into two sides on purpose:

- `Question(question_id, question)` is all an agent may ever receive. It has no field that could
  carry the reference, so handing an agent a `Question` cannot leak the answer by accident.
- `Reference(question_id, reference_answer, gold_evidence, kind)` with `Evidence(file_stem,
  quote, start, end)` is the judge's side.

`load_questions(path)` returns a `QuestionSet`; malformed lines raise `UsageError` naming the
file, the line number and what is wrong. `write_questions(path, items)` writes the same format
deterministically (fixed key order, UTF-8, one line per question).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from parquet_agent.errors import UsageError

__all__ = [
    "Evidence",
    "Question",
    "QuestionSet",
    "Reference",
    "load_questions",
    "write_questions",
]


@dataclass(frozen=True, slots=True)
class Question:
    """The agent-facing side: an id and the question text, nothing else."""

    question_id: str
    question: str


@dataclass(frozen=True, slots=True)
class Evidence:
    """A quote that supports a reference answer: `parsed_md[start:end] == quote`."""

    file_stem: str
    quote: str
    start: int
    end: int

    def to_json(self) -> dict:
        return {"file_stem": self.file_stem, "quote": self.quote, "start": self.start, "end": self.end}


UNANSWERABLE = "unanswerable"  # the `kind` of a question the corpus cannot answer


@dataclass(frozen=True, slots=True)
class Reference:
    """The judge's side of a question. `gold_evidence` is empty for unanswerable questions
    and for corpus-level counts whose support is the whole corpus."""

    question_id: str
    reference_answer: str
    gold_evidence: tuple[Evidence, ...]
    kind: str | None = None

    @property
    def answerable(self) -> bool:
        """Whether the corpus holds the answer: every question but `kind = "unanswerable"`
        (the judge tells an abstention on an answerable question apart from a right refusal)."""
        return self.kind != UNANSWERABLE


@dataclass(frozen=True)
class QuestionSet:
    """Questions and references read from one file, in file order."""

    questions: tuple[Question, ...]
    references: tuple[Reference, ...]
    path: Path | None = None

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(q.question_id for q in self.questions)

    def question(self, question_id: str) -> Question:
        return self.questions[self._position(question_id)]

    def reference(self, question_id: str) -> Reference:
        return self.references[self._position(question_id)]

    def _position(self, question_id: str) -> int:
        try:
            return self.ids.index(question_id)
        except ValueError:
            where = f" in {self.path}" if self.path else ""
            raise UsageError(
                f"no question {question_id!r}{where}; known ids run {self.ids[0]}..{self.ids[-1]}"
                if self.ids
                else f"no question {question_id!r}{where}: the set is empty"
            ) from None

    def __len__(self) -> int:
        return len(self.questions)

    def __iter__(self) -> Iterator[Question]:
        return iter(self.questions)


_REQUIRED = ("question_id", "question", "reference_answer", "gold_evidence")
_EVIDENCE_FIELDS = ("file_stem", "quote", "start", "end")


def _fail(path: Path, lineno: int, what: str) -> UsageError:
    return UsageError(f"{path}:{lineno}: {what}")


def _parse_evidence(item: object, path: Path, lineno: int, k: int) -> Evidence:
    if not isinstance(item, dict):
        raise _fail(path, lineno, f"gold_evidence[{k}] must be an object with {', '.join(_EVIDENCE_FIELDS)}")
    missing = [f for f in _EVIDENCE_FIELDS if f not in item]
    if missing:
        raise _fail(path, lineno, f"gold_evidence[{k}] lacks {', '.join(missing)}")
    stem, quote, start, end = (item[f] for f in _EVIDENCE_FIELDS)
    if not isinstance(stem, str) or not stem:
        raise _fail(path, lineno, f"gold_evidence[{k}].file_stem must be a non-empty string")
    if not isinstance(quote, str):
        raise _fail(path, lineno, f"gold_evidence[{k}].quote must be a string")
    for name, value in (("start", start), ("end", end)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise _fail(path, lineno, f"gold_evidence[{k}].{name} must be a non-negative integer, got {value!r}")
    if end - start != len(quote):
        raise _fail(
            path, lineno,
            f"gold_evidence[{k}]: end - start = {end - start} but the quote has {len(quote)} characters",
        )
    return Evidence(stem, quote, start, end)


def _parse_line(text: str, path: Path, lineno: int) -> tuple[Question, Reference]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _fail(path, lineno, f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(data, dict):
        raise _fail(path, lineno, "each line must be a JSON object")
    missing = [f for f in _REQUIRED if f not in data]
    if missing:
        raise _fail(path, lineno, f"missing field(s) {', '.join(missing)}")
    qid, question, answer, evidence = (data[f] for f in _REQUIRED)
    for name, value in (("question_id", qid), ("question", question), ("reference_answer", answer)):
        if not isinstance(value, str) or not value.strip():
            raise _fail(path, lineno, f"{name} must be a non-empty string")
    if not isinstance(evidence, list):
        raise _fail(path, lineno, "gold_evidence must be a list (empty when nothing supports the answer)")
    kind = data.get("kind")
    if kind is not None and not isinstance(kind, str):
        raise _fail(path, lineno, "kind must be a string when present")
    gold = tuple(_parse_evidence(item, path, lineno, k) for k, item in enumerate(evidence))
    return Question(qid, question), Reference(qid, answer, gold, kind)


def load_questions(path: str | Path) -> QuestionSet:
    """Read a questions file. Raises UsageError for a missing file, a malformed line (with its
    line number and what is wrong) or a repeated `question_id`. Blank lines are skipped."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"{path}: no such questions file (a corpus build writes questions.jsonl)")
    questions: list[Question] = []
    references: list[Reference] = []
    seen: dict[str, int] = {}
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            q, r = _parse_line(line, path, lineno)
            if q.question_id in seen:
                raise _fail(path, lineno, f"question_id {q.question_id!r} repeats line {seen[q.question_id]}")
            seen[q.question_id] = lineno
            questions.append(q)
            references.append(r)
    return QuestionSet(tuple(questions), tuple(references), path)


def question_record(question: Question, reference: Reference) -> dict:
    """The JSON object of one line, in the contract's key order."""
    if question.question_id != reference.question_id:
        raise ValueError(f"question {question.question_id} paired with reference {reference.question_id}")
    record = {
        "question_id": question.question_id,
        "question": question.question,
        "reference_answer": reference.reference_answer,
        "gold_evidence": [e.to_json() for e in reference.gold_evidence],
    }
    if reference.kind is not None:
        record["kind"] = reference.kind
    return record


def write_questions(path: str | Path, items: Iterable[tuple[Question, Reference]]) -> Path:
    """Write a questions file atomically; the same items give the same bytes."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8", newline="\n") as fh:
            for question, reference in items:
                fh.write(json.dumps(question_record(question, reference), ensure_ascii=False) + "\n")
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)
    return path
