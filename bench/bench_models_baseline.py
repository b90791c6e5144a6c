"""How good is the offline baseline floor on real FinanceBench questions?

Builds a one-file Parquet corpus from `realdata/financebench/docs_md` (138 real filings), then
runs `BaselineModel` episodes for every question whose document is present, for both
strategies. SQL is real DuckDB over the Parquet file; `search_headers` and `read_filing` are
simulated in the tools' output shapes (company/form/period from the corpus manifest), so this
measures the policy, not the sandbox. Reports: cited the gold document, the gold answer's
figure inside the quoted text, tool calls per episode, and policy time per episode.

    .venv/bin/python bench/bench_models_baseline.py [--limit N]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import time
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from parquet_agent.models import BaselineModel
from parquet_agent.models.protocol import ModelRequest, ToolMessage, ToolSpec, UserMessage

FB = Path("/work/shared/realdata/financebench")
TOOLS = {"sql": tuple(ToolSpec(n, n, {"type": "object"}) for n in ("describe_corpus", "sql"))}
TOOLS["sql+stream"] = TOOLS["sql"] + tuple(ToolSpec(n, n, {"type": "object"})
                                           for n in ("search_headers", "read_filing"))


class NullSink:
    def write(self, name: str, data: bytes) -> str:
        return name


class Tools:
    def __init__(self, folder: Path):
        self.docs = {}
        self.headers = []
        self.ym = []
        for line in (FB / "corpus_manifest.jsonl").read_text().splitlines():
            m = json.loads(line)
            stem = m["accession_number"] or m["doc_name"]
            self.docs[stem] = (FB / "docs_md" / f"{m['doc_name']}.md").read_text()
            form = {"10k": "10-K", "10q": "10-Q", "8k": "8-K"}.get(m["doc_type"], m["doc_type"])
            self.ym.append((m["year"], m["month"]))
            self.headers.append({"file_stem": stem, "company": m["company"], "form_type": form,
                                 "period": str(m["doc_period"]), "filing_date": m["filing_date"],
                                 "cik": m["cik"], "doc_name": m["doc_name"]})
        self.path = folder / "fb.parquet"
        pq.write_table(pa.table({"accession": [h["cik"] for h in self.headers],
                                 "file_stem": list(self.docs),
                                 "year": [y for y, _ in self.ym], "month": [mo for _, mo in self.ym],
                                 "parsed_md": list(self.docs.values())}),
                       self.path)
        self.con = duckdb.connect()
        self.con.execute(f"CREATE VIEW filings AS SELECT * FROM read_parquet('{self.path}')")

    def __call__(self, call) -> str:
        a = call.arguments
        if call.name == "search_headers":
            terms = a["query"].lower().split()
            hits = [h for h in self.headers if all(t in h["company"].lower() or t == h["form_type"].lower()
                                                   for t in terms)]
            return json.dumps({"query": a["query"], "total": len(hits), "results": hits[:20]})
        if call.name == "read_filing":
            text = self.docs.get(a["file_stem"], "")
            windows = []
            for m in list(re.finditer(re.escape(a["pattern"]), text, re.IGNORECASE))[:4]:
                s, e = max(0, m.start() - 400), min(len(text), m.end() + 400)
                if windows and s <= windows[-1]["end"]:
                    windows[-1]["end"] = e
                    windows[-1]["text"] = text[windows[-1]["start"]:e]
                    continue
                windows.append({"start": s, "end": e, "text": text[s:e]})
            return json.dumps({"file_stem": a["file_stem"], "windows": windows})
        query = a["query"]
        if a.get("file_stem"):
            query = query.replace("FROM filing", f"FROM filings WHERE file_stem = '{a['file_stem']}'")
        try:
            cur = self.con.execute(query)
        except duckdb.Error as exc:
            return json.dumps({"error": {"kind": "sql", "message": str(exc)}})
        return json.dumps({"columns": [d[0] for d in cur.description],
                           "rows": [list(r) for r in cur.fetchall()][:200]}, default=str)


def figures(text: str) -> set[str]:
    return {n.replace(",", "").lstrip("$") for n in re.findall(r"\$?\d[\d,]*\.?\d*", text)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=0)
    args = ap.parse_args()
    tools = Tools(Path(tempfile.mkdtemp(prefix="bench-baseline-")))
    by_doc = {h["doc_name"]: h["file_stem"] for h in tools.headers}
    questions = [json.loads(x) for x in (FB / "questions/financebench_open_source.jsonl").read_text().splitlines()]
    questions = [q for q in questions if q["doc_name"] in by_doc]
    if args.limit:
        questions = questions[: args.limit]
    model = BaselineModel()
    for strategy, specs in TOOLS.items():
        right_doc = figure = 0
        calls, secs = [], []
        for q in questions:
            messages = [UserMessage(q["question"])]
            t = 0.0
            n = 0
            for turn in range(1, 14):
                t0 = time.perf_counter()
                reply = model.decide(ModelRequest(messages=tuple(messages), tools=specs, label="b"))
                t += time.perf_counter() - t0
                messages.append(reply.message)
                if not reply.tool_calls:
                    break
                for c in reply.tool_calls:
                    n += 1
                    messages.append(ToolMessage(c.id, c.name, tools(c)))
            text = reply.text or ""
            m = re.search(r"Source: (\S+) \[", text)
            right_doc += bool(m and m.group(1) == by_doc[q["doc_name"]])
            gold = {f for f in figures(q["answer"]) if len(f.replace(".", "")) >= 2}
            figure += bool(gold & figures(text.split("\n\nSource:")[0]))
            calls.append(n)
            secs.append(t)
        k = len(questions)
        print(f"{strategy:11} questions={k} cited_gold_doc={right_doc}/{k} "
              f"gold_figure_in_quote={figure}/{k} tool_calls_median={statistics.median(calls)} "
              f"policy_ms_median={statistics.median(secs) * 1000:.1f}")


if __name__ == "__main__":
    main()
