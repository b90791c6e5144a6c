"""Audit bytes per case and store write cost, on real wire bodies.

    .venv/bin/python bench/store_bench.py [--cases 200] [--keep DIR]

Each case is what the harness will do: the real `openai` SDK (through the models piece's
`build_model` and recording transport) talks to the fake OpenAI server on 127.0.0.1; turn 1 asks
with the system prompt and the four real tool specs and gets a `read_filing` call; the tool result
is a 4,000-character excerpt of a real 10-K (FinanceBench `docs_md`); turn 2 sends the grown
conversation and gets the answer; the judge gets question, answer, reference, gold evidence and
the tool evidence and returns JSON scores. Every raw body goes to the run's `RawStore`, every event
to the case journal. Reported: audit bytes per case (raw packs + journals) against the DESIGN.md
target of 2 x ~3.0 KB, the same bodies as one file each, and the store's own time per raw write,
per event and per case (time spent inside `RawStore.write` and `Journal.append` only).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from parquet_agent.experiment.config import ExperimentConfig
from parquet_agent.experiment.run import create_run
from parquet_agent.models.factory import build_model
from parquet_agent.models.fakes import FakeReply, FakeToolCall, openai_server
from parquet_agent.models.protocol import (
    ModelRequest,
    SystemMessage,
    ToolMessage,
    UserMessage,
)
from parquet_agent.models.spec import ModelSpec
from parquet_agent.store import (
    CaseFinished,
    CaseStarted,
    JudgeAttempt,
    Judgment,
    ModelAttempt,
    ModelTurn,
    RunStore,
    ToolCallEvent,
    freeze,
)
from parquet_agent.tools.result import Timings
from parquet_agent.tools.specs import ALL_TOOLS, tool_spec

REAL = Path("/work/shared/realdata/financebench")
SYSTEM = (
    "You answer questions about SEC filings. The corpus is a set of Parquet files; each row is "
    "one filing with its full text as Markdown in `parsed_md` (company name, form type, dates "
    "and financial tables live only in there). You have data tools and nothing else: no web, no "
    "memory of filings. Find the filing, read the relevant part, and answer briefly. Cite every "
    "fact as [source_id:start-end] with the character offsets the tools returned. If the tools "
    "do not give you the answer, say so; never guess a number. Tool calls are limited."
)
JUDGE = (
    "You are a strict grader. Compare the candidate answer with the reference answer and the "
    "gold evidence. Check every citation against the tool evidence the agent actually received. "
    'Reply with JSON only: {"correctness": 0-100, "citation_support": 0-100, "rationale": "..."}'
)


class Timed:
    """Wraps the RawStore to time only the store's own work."""

    def __init__(self, store):
        self.store, self.ms, self.cpu_ms = store, [], 0.0

    def write(self, name, data):
        t, c = time.perf_counter(), time.thread_time()
        path = self.store.write(name, data)
        self.ms.append((time.perf_counter() - t) * 1000)
        self.cpu_ms += (time.thread_time() - c) * 1000
        return path


def load_cases(n):
    rows = [json.loads(line) for line in
            (REAL / "questions" / "financebench_open_source.jsonl").read_text().splitlines()]
    cases = []
    for row in rows:
        doc = REAL / "docs_md" / f"{row['doc_name']}.md"
        if not doc.exists():
            continue
        text = doc.read_text(errors="replace")
        ev = (row.get("evidence") or [{}])[0].get("evidence_text", "")
        at = max(0, text.find(ev[:60])) if ev else 0
        cases.append((row, text[at:at + 4000], at))
        if len(cases) == n:
            break
    return cases


def script(request):
    body = request.json or {}
    messages = body.get("messages", [])
    if messages and JUDGE[:20] in str(messages[0].get("content")):
        return FakeReply(text=json.dumps({"correctness": 90, "citation_support": 80,
                                          "rationale": "Matches the reference; the cited span "
                                          "is in the excerpt the agent read."}),
                         input_tokens=2100, output_tokens=60)
    if messages and messages[-1].get("role") == "tool":
        return FakeReply(text="Capital expenditure was $1,577 million in FY2018 "
                         "[0001558370-19-000470:48211-48390].", input_tokens=1900,
                         output_tokens=40)
    return FakeReply(tool_calls=(FakeToolCall("read_filing", {
        "file_stem": "0001558370-19-000470", "pattern": "Purchases of property"}),),
        input_tokens=900, output_tokens=30)


def fsync_p50(folder: Path) -> float:
    import os

    path = folder / "fsync-probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    times = []
    for _ in range(200):
        t = time.perf_counter()
        os.write(fd, b"x" * 300)
        os.fdatasync(fd)
        times.append((time.perf_counter() - t) * 1000)
    os.close(fd)
    path.unlink()
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=100)
    ap.add_argument("--keep", type=Path)
    ap.add_argument("--excerpt-chars", type=int, default=4000,
                    help="tool result size: 4000 is read_filing's default cap")
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="store-bench-"))
    specs = tuple(tool_spec(f) for f in ALL_TOOLS.values())
    cases = [(row, excerpt[:args.excerpt_chars], at) for row, excerpt, at in load_cases(args.cases)]
    event_ms: list[float] = []
    event_cpu = [0.0]
    with openai_server(script) as server:
        spec = ModelSpec(name="m", provider="openai", model="gpt-x", api_key_env="K",
                         base_url=server.url + "/v1", temperature=0.0)
        model = build_model(spec, env={"K": "sk-bench"})
        config = ExperimentConfig(name="bench", corpus=".", questions="q.jsonl", models=[spec],
                                  judge=ModelSpec(name="judge", provider="rubric", model="rubric"),
                                  strategies=("sql+stream",), base_dir=root)
        run = create_run(RunStore(root / "runs"), config, freeze(
            question_ids=[r["financebench_id"] for r, _, _ in cases], corpus_snapshot=None,
            prompt_hashes={}, sandbox_mode="bench"))
        sink = Timed(run.raw)

        def emit(journal, payload):
            t, c = time.perf_counter(), time.thread_time()
            journal.append_many(payload) if isinstance(payload, list) else journal.append(payload)
            event_ms.append((time.perf_counter() - t) * 1000)
            event_cpu[0] += (time.thread_time() - c) * 1000

        for row, excerpt, at in cases:
            case = f"{row['financebench_id']}__m__sql+stream"
            j = run.journal(case)
            emit(j, CaseStarted(case, row["financebench_id"], "m", "sql+stream"))
            messages = (SystemMessage(SYSTEM), UserMessage(row["question"]))
            r1 = model.complete(ModelRequest(messages, specs, label=f"{case}/turn-01"), sink)
            # a turn's attempts and the turn itself: one durable write
            emit(j, [ModelAttempt(a.label, a) for a in r1.attempts] + [
                ModelTurn(1, f"{case}/turn-01", r1.attempts[-1].request_path,
                          r1.attempts[-1].response_path, r1.reply)])
            call = r1.reply.tool_calls[0]
            output = {"source_id": call.arguments["file_stem"], "start": at,
                      "end": at + len(excerpt), "text": excerpt, "next_start": at + len(excerpt)}
            text = json.dumps(output, ensure_ascii=False)
            emit(j, ToolCallEvent(1, call.id, call.name, call.arguments, True, text,
                                  timings=Timings(queue_ms=0.1, run_ms=20.0, total_ms=20.1)))
            messages += (r1.reply.message, ToolMessage(call.id, call.name, text))
            r2 = model.complete(ModelRequest(messages, specs, label=f"{case}/turn-02"), sink)
            # a turn's attempts and the turn itself: one durable write
            emit(j, [ModelAttempt(a.label, a) for a in r2.attempts] + [
                ModelTurn(2, f"{case}/turn-02", r2.attempts[-1].request_path,
                          r2.attempts[-1].response_path, r2.reply)])
            evidence = "\n".join(e.get("evidence_text", "") for e in row.get("evidence", []))
            judge_in = (f"Question: {row['question']}\nCandidate answer: {r2.reply.text}\n"
                        f"Reference answer: {row['answer']}\nGold evidence: {evidence}\n"
                        f"Tool evidence:\n[{call.id}] {text}")
            r3 = model.complete(ModelRequest((SystemMessage(JUDGE), UserMessage(judge_in)),
                                             purpose="judge", label=f"{case}/judge"), sink)
            scores = json.loads(r3.reply.text)
            emit(j, [JudgeAttempt(a.label, a) for a in r3.attempts] + [
                Judgment("judge", scores["correctness"], scores["citation_support"],
                         scores["rationale"], True, request_path=r3.attempts[-1].request_path,
                         response_path=r3.attempts[-1].response_path)])
            emit(j, CaseFinished("complete", answer=r2.reply.text, wall_ms=1.0))
        stats = run.raw.stats()
        journal_bytes = sum(p.stat().st_size for p in (run.dir / "journal").iterdir())
        report = run.verify()
        run.close()
    n = len(cases)
    raw_files = stats.logical_bytes
    writes = len(sink.ms)
    per_case_store_ms = (sum(sink.ms) + sum(event_ms)) / n
    print(f"cases: {n}  raw bodies: {stats.bodies}  chunks: {stats.chunks}  verify ok: {report.ok}")
    print(f"raw bodies as written (one file each): {raw_files / n / 1024:.1f} KiB/case")
    print(f"raw packs on disk:                     {stats.stored_bytes / n / 1024:.2f} KiB/case "
          f"(dedup+compression {raw_files / stats.stored_bytes:.1f}x)")
    print(f"journals:                              {journal_bytes / n / 1024:.2f} KiB/case")
    print(f"audit bytes per case (packs+journals): "
          f"{(stats.stored_bytes + journal_bytes) / n / 1000:.2f} KB (target <= 6.0 KB)")
    print(f"RawStore.write: p50 {statistics.median(sink.ms):.3f} ms, "
          f"p95 {sorted(sink.ms)[int(0.95 * writes)]:.3f} ms over {writes} writes")
    print(f"Journal.append: p50 {statistics.median(event_ms):.3f} ms, "
          f"p95 {sorted(event_ms)[int(0.95 * len(event_ms))]:.3f} ms over {len(event_ms)} appends")
    print(f"store time per case (writes + events): {per_case_store_ms:.2f} ms wall, "
          f"{(sink.cpu_ms + event_cpu[0]) / n:.2f} ms CPU (the rest is waiting for fdatasync)")
    print(f"fdatasync of a 300-byte append on this disk now: p50 {fsync_p50(root):.3f} ms "
          "(the floor of every durable write)")
    print(f"run folder: {root}")


if __name__ == "__main__":
    main()
