"""Builders of real records and realistic wire bodies for the store tests (no fakes of our code)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from parquet_agent.experiment.config import ExperimentConfig, Limits
from parquet_agent.models.spec import ModelSpec
from parquet_agent.models.protocol import (
    AssistantMessage,
    Attempt,
    Cost,
    Reply,
    ToolCall,
    Usage,
)
from parquet_agent.store import freeze

SNAPSHOT = {
    "schema_version": 1, "snapshot_id": "xxh3_128:abc", "taken_at": "2026-11-30T07:00:00Z",
    "rows": 20, "bytes": 2000,
    "files": [
        {"name": "2025-01.parquet", "size": 1000, "mtime_ns": 1, "content_hash": "xxh3_128:01",
         "rows": 10, "row_groups": 1, "schema": [["accession", "string"]]},
        {"name": "2025-02.parquet", "size": 1000, "mtime_ns": 2, "content_hash": "xxh3_128:02",
         "rows": 10, "row_groups": 1, "schema": [["accession", "string"]]},
    ],
}


def make_config(tmp_path: Path, **limits) -> ExperimentConfig:
    return ExperimentConfig(
        name="smoke test", corpus="data/sample", questions="data/sample/questions.jsonl",
        models=(ModelSpec(name="flash", provider="scripted", model="scripted"),
                ModelSpec(name="base", provider="baseline", model="baseline")),
        judge=ModelSpec(name="judge", provider="rubric", model="rubric"),
        strategies=("sql", "sql+stream"), runs_dir="runs", limits=Limits(**limits),
        base_dir=tmp_path)


def make_frozen(question_ids=("Q001", "Q002"), snapshot=SNAPSHOT, prompts=None, code="b2:code"):
    return freeze(question_ids=list(question_ids), corpus_snapshot=snapshot,
                  prompt_hashes=prompts or {"agent": "b2:a", "judge": "b2:j"},
                  sandbox_mode="process", code=code, packages={"duckdb": "2.0.1"})


def make_attempt(label="case/turn-01", number=1, purpose="answer", outcome="ok", usd=0.001,
                 source="price_table", tokens=(100, 20)) -> Attempt:
    return Attempt(
        label=label, number=number, purpose=purpose, requested_model="m", requested_provider="openai",
        actual_model="m-2026" if outcome == "ok" else None,
        actual_provider="openai" if outcome == "ok" else None, temperature=0.0,
        reasoning_effort=None, started_at="2026-11-30T07:00:00.000000Z",
        ended_at="2026-11-30T07:00:00.100000Z", queue_ms=1.0, duration_ms=100.0,
        http_status=200 if outcome == "ok" else 500, outcome=outcome,
        error=None if outcome == "ok" else "server error", response_id="resp-1",
        finish_reason="stop", usage=Usage(input_tokens=tokens[0], output_tokens=tokens[1]),
        cost=Cost(usd=usd, source=source if usd is not None else "unknown"),
        request_path=f"raw/{label}/attempt-{number}.request.json",
        response_path=f"raw/{label}/attempt-{number}.response.json")


def make_reply(text=None, calls=()) -> Reply:
    tool_calls = tuple(ToolCall(id=f"call_{i}", name=n, arguments=a, raw_arguments=json.dumps(a))
                       for i, (n, a) in enumerate(calls))
    return Reply(text=text, tool_calls=tool_calls, finish_reason="tool_calls" if calls else "stop",
                 response_id="resp-1", model="m-2026", provider="openai",
                 usage=Usage(input_tokens=100, output_tokens=20),
                 message=AssistantMessage(text=text, tool_calls=tool_calls,
                                          provider_data={"google": {"sig": "abc"}}))


SYSTEM = ("You answer questions about SEC filings stored as Markdown in Parquet files. Use the "
          "tools; cite every fact with its source id and character offsets. ") * 8
TOOLS = [
    {"type": "function", "function": {"name": name, "description": desc * 3, "parameters": {
        "type": "object", "properties": {"query": {"type": "string", "description": "the text"}},
        "required": ["query"], "additionalProperties": False}}}
    for name, desc in [("describe_corpus", "Describe the corpus: schemas and row counts. "),
                       ("sql", "Run exactly one read-only SELECT over the corpus. "),
                       ("search_headers", "Search issuer headers by company name or CIK. "),
                       ("read_filing", "Read a capped excerpt of one filing by file_stem. ")]
]


def conversation_bodies(case: int, turns: int = 3) -> list[bytes]:
    """The request bodies an agent sends in one case (OpenAI chat wire shape), turn by turn."""
    messages = [{"role": "system", "content": SYSTEM},
                {"role": "user", "content": f"Question {case}: what revenue did issuer {case} report?"}]
    bodies = []
    for turn in range(turns):
        bodies.append(json.dumps({"messages": messages, "model": "gpt-x", "tools": TOOLS,
                                  "tool_choice": "auto", "temperature": 0.0},
                                 separators=(",", ":")).encode())
        call_id = f"call_{case}_{turn}"
        messages = messages + [
            {"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function",
             "function": {"name": "sql", "arguments": json.dumps({"query": f"SELECT {case} {turn}"})}}]},
            {"role": "tool", "tool_call_id": call_id, "content": json.dumps(
                {"columns": ["file_stem", "company"], "rows": [[f"0000{case}-25-{i:06d}", f"Co {i}"]
                                                                for i in range(20 + turn)]})},
        ]
    return bodies


@pytest.fixture
def attempt_dict():
    return lambda **kw: asdict(make_attempt(**kw))
