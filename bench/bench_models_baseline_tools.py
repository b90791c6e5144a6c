"""The offline baseline against the real tools (sandboxed workers) on a built corpus.

    .venv/bin/python -m parquet_agent corpus build --rows 300 --out /tmp/pa_corpus
    .venv/bin/python -m parquet_agent corpus index /tmp/pa_corpus
    .venv/bin/python bench/bench_models_baseline_tools.py /tmp/pa_corpus [--limit 40]

Per strategy: answers with a citation, citations in a gold-evidence filing, citations whose
[start, end) overlaps a gold span, tool errors by kind; and the question kinds seen.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import tempfile
from pathlib import Path

from parquet_agent.models import BaselineModel, DirectorySink
from parquet_agent.models.protocol import ModelRequest, ToolMessage, UserMessage
from parquet_agent.tools import Tools


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--limit", type=int, default=40)
    args = ap.parse_args()
    questions = [json.loads(x) for x in (args.corpus / "questions.jsonl").read_text().splitlines()]
    questions = questions[: args.limit]
    res: collections.Counter = collections.Counter()
    for strategy in ("sql", "sql+stream"):
        tools = Tools.open(args.corpus, strategy=strategy)
        model, sink = BaselineModel(), DirectorySink(Path(tempfile.mkdtemp(prefix="bench-bl-")))
        try:
            for q in questions:
                msgs = [UserMessage(q["question"])]
                for turn in range(12):
                    reply = model.complete(ModelRequest(messages=tuple(msgs), tools=tools.specs(),
                                                        label=f"{q['question_id']}/t{turn:02d}"),
                                           sink).reply
                    msgs.append(reply.message)
                    if not reply.tool_calls:
                        break
                    for c in reply.tool_calls:
                        out = tools.call_raw(c.name, c.arguments)
                        msgs.append(ToolMessage(c.id, c.name, out.model_text()))
                        if not out.ok:
                            res[(strategy, f"tool_error:{out.error.kind}")] += 1
                gold = q["gold_evidence"]
                m = re.search(r"Source: (\S+) \[(\d+), (\d+)\)", reply.text or "")
                res[(strategy, "answered_with_citation")] += bool(m)
                if m and any(g["file_stem"] == m.group(1) for g in gold):
                    res[(strategy, "cited_gold_filing")] += 1
                    s, e = int(m.group(2)), int(m.group(3))
                    res[(strategy, "overlaps_gold_span")] += any(
                        g["file_stem"] == m.group(1) and s < g["end"] and e > g["start"] for g in gold)
                if strategy == "sql":
                    res[("kinds", q.get("kind", "?"))] += 1
        finally:
            tools.close()
    print(f"questions: {len(questions)}")
    for k, v in sorted(res.items()):
        print(" ".join(k), v)


if __name__ == "__main__":
    main()
