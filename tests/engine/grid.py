"""The grid the engine tests and the Ray benchmark run: the harness questions x two models x
both strategies behind one fake OpenAI server (the official SDK over HTTP on 127.0.0.1).

Each case: turn 1 asks for an SQL count, turn 2 scans the Markdown for the company, turn 3 answers with the
reference figure. Every answer-model request is keyed by (model, system prompt, question, turn),
so a test can count exactly how often each distinct paid call reached the server."""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import Counter
from pathlib import Path

from parquet_agent.models.fakes import FakeReply, FakeToolCall

REVENUE = re.compile(r"What was (.+)'s total revenue")


class GridScript:
    """`script(request)` for `openai_server`; `latency_s` is each answer call's model time."""

    def __init__(self, answers: dict[str, str], latency_s: float = 0.0):
        self.answers, self.latency_s = answers, latency_s
        self.calls: Counter = Counter()
        self._lock = threading.Lock()

    def __call__(self, request):
        body = request.json or {}
        messages = body.get("messages", [])
        user = next((m["content"] for m in messages if m.get("role") == "user"), "")
        if "single word" in str(user):
            return FakeReply(text="OK")
        turn = 1 + sum(1 for m in messages if m.get("role") == "assistant")
        key = hashlib.sha256(json.dumps([body.get("model"), messages[0].get("content"), user,
                                         turn]).encode()).hexdigest()[:16]
        with self._lock:
            self.calls[key] += 1
        if self.latency_s:
            time.sleep(self.latency_s)
        question = REVENUE.search(str(user))
        company = question.group(1) if question else ""
        if turn == 1:
            return FakeReply(tool_calls=(FakeToolCall(
                "sql", {"query": "SELECT count(*) AS n FROM filings"}, id=f"s{turn}"),),
                cost=0.001)
        if turn == 2:
            # the company's first word, else the question's longest word: one scan per question
            words = re.findall(r"[A-Za-z]{4,}", str(user))
            like = company.split()[0] if company else max(words, key=len, default="revenue")
            return FakeReply(tool_calls=(FakeToolCall("sql", {"query": (
                "SELECT file_stem, length(parsed_md) AS chars FROM filings "
                f"WHERE parsed_md LIKE '%{like}%' ORDER BY file_stem")}, id=f"t{turn}"),),
                cost=0.001)
        return FakeReply(text=self.answers.get(company, "I do not know."), cost=0.001)

    def duplicates(self) -> dict[str, int]:
        """Distinct answer calls the server saw more than once, with their counts."""
        return {k: n for k, n in self.calls.items() if n > 1}


def harness_answers(corpus: Path) -> dict[str, str]:
    from parquet_agent.corpus.questions import load_questions

    qs = load_questions(corpus / "questions.jsonl")
    out = {}
    for q in qs.questions:
        company = REVENUE.search(q.question).group(1)
        out[company] = qs.reference(q.question_id).reference_answer.split(" (")[0]
    return out


def write_config(path: Path, corpus: Path, runs: Path, url: str, *, name: str = "grid",
                 sample: str = "", engine: str = "", case_workers: int = 4) -> Path:
    """An experiment over two fake OpenAI-compatible models at `url`, judged by the rubric."""
    models = "".join(f"""
[[models]]
name = "{name}"
provider = "openai"
model = "gpt-{name}"
api_key_env = "FAKE_OPENAI_KEY"
base_url = "{url}/v1"
max_attempts = 2
""" for name in ("fake-a", "fake-b"))
    path.write_text(f"""
name = "{name}"
corpus = "{corpus}"
questions = "{corpus / 'questions.jsonl'}"
{f'sample = "{sample}"' if sample else ""}
strategies = ["sql", "sql+stream"]
runs_dir = "{runs}"
{models}
[judge]
provider = "rubric"

[limits]
case_workers = {case_workers}
{engine}
""")
    return path
