"""The offline baseline: its decisions on hand-written tool outputs, and whole episodes on real
FinanceBench filings, with SQL run by real DuckDB over a Parquet file (the other tools are
simulated here in the tools' documented output shapes)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from parquet_agent.models import BaselineModel, DirectorySink
from parquet_agent.models.baseline_reading import read_question
from parquet_agent.models.protocol import (
    AssistantMessage,
    ModelRequest,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from tests.realdata import needs_realdata, realdata

REAL = realdata("financebench/docs_md")
Q_CAPEX = ("What is the FY2018 capital expenditure amount (in USD millions) for 3M? Give a "
           "response to the question by relying on the details shown in the cash flow statement.")


def spec(name: str) -> ToolSpec:
    return ToolSpec(name, name, {"type": "object", "properties": {}})


SQL_ONLY = (spec("describe_corpus"), spec("sql"))
STREAM = SQL_ONLY + (spec("search_headers"), spec("read_filing"))


def conversation(question: str, *turns: tuple[ToolCall, object]):
    msgs = [SystemMessage("answer with a citation"), UserMessage(question)]
    for call, output in turns:
        msgs.append(AssistantMessage(None, (call,)))
        msgs.append(ToolMessage(call.id, call.name, output if isinstance(output, str)
                                else json.dumps(output)))
    return tuple(msgs)


def decide(question, *turns, tools=STREAM):
    return BaselineModel().decide(ModelRequest(messages=conversation(question, *turns), tools=tools))


def test_reads_the_question():
    t = read_question(Q_CAPEX)
    assert t.companies[0] == "3M" and t.years == ("2018",) and t.form_type == "10-K"
    assert t.phrases[0] == "capital expenditure" and t.numeric
    t2 = read_question("How many employees did Johnson & Johnson report at the end of 2023?")
    assert t2.companies[0] == "Johnson & Johnson"
    assert read_question("Which filing has CIK 0000066740?").cik == "0000066740"


def test_first_step_searches_headers_or_sql():
    first = decide(Q_CAPEX)
    (call,) = first.tool_calls
    assert (call.name, call.arguments) == ("search_headers", {"query": "3M"})
    (sql,) = decide(Q_CAPEX, tools=SQL_ONLY).tool_calls
    assert sql.name == "sql" and "contains(lower(substr(parsed_md, 1, 3000)), '3m')" in sql.arguments["query"]
    assert "file_stem" in sql.arguments["query"]


HEADERS = {"query": "3M", "total": 3, "page": 1, "page_size": 20, "pages": 1, "results": [
    {"file_stem": "0000066740-18-000008", "company": "3M CO", "form_type": "10-K",
     "period": "2017-12-31", "filing_date": "2018-02-08", "cik": "66740"},
    {"file_stem": "0000066740-19-000010", "company": "3M CO", "form_type": "10-K",
     "period": "2018-12-31", "filing_date": "2019-02-07", "cik": "66740"},
    {"file_stem": "0000066740-19-000030", "company": "3M CO", "form_type": "10-Q",
     "period": "2019-03-31", "filing_date": "2019-04-25", "cik": "66740"}]}


def test_picks_the_filing_of_the_right_year_and_form():
    found = ToolCall("b1", "search_headers", {"query": "3M"})
    (read,) = decide(Q_CAPEX, (found, HEADERS)).tool_calls
    assert read.name == "read_filing"
    assert read.arguments == {"file_stem": "0000066740-19-000010",
                              "pattern": "capital expenditure", "max_chars": 3000}


def test_answers_with_the_best_sentence_and_exact_offsets():
    text = ("Cash flows from investing activities. In 2018, capital expenditures were "
            "$1,577 million, compared with $1,373 million in 2017. Other matters follow.")
    found = ToolCall("b1", "search_headers", {"query": "3M"})
    read = ToolCall("b2", "read_filing", {"file_stem": "0000066740-19-000010",
                                          "pattern": "capital expenditure", "max_chars": 3000})
    window = {"file_stem": "0000066740-19-000010", "char_count": 900000,
              "pattern": "capital expenditure", "matches_total": 1,
              "windows": [{"start": 5000, "end": 5000 + len(text), "match_starts": [5048],
                           "text": text}], "next_start": None}
    reply = decide(Q_CAPEX, (found, HEADERS), (read, window))
    assert reply.tool_calls == () and "1,577" in reply.text
    m = re.search(r"Source: (\S+) \[(\d+), (\d+)\)", reply.text)
    stem, s, e = m.group(1), int(m.group(2)), int(m.group(3))
    assert stem == "0000066740-19-000010"
    assert text[s - 5000:e - 5000].startswith("In 2018, capital expenditures were $1,577")


def test_table_cell_under_the_question_year():
    table = ("| (Millions) | 2018 | 2017 |\n|---|---|---|\n"
             "| Capital expenditures | 1,577 | 1,373 |\n")
    read = ToolCall("b2", "read_filing", {"file_stem": "F1", "pattern": "x"})
    reply = decide(Q_CAPEX, (ToolCall("b1", "search_headers", {"query": "3M"}),
                             {"results": [{"file_stem": "F1"}]}),
                   (read, {"file_stem": "F1", "windows": [{"start": 100, "text": table}]}))
    m = re.search(r"\[(\d+), (\d+)\)", reply.text)
    assert table[int(m.group(1)) - 100:int(m.group(2)) - 100] == "1,577"


def test_tool_errors_and_unexpected_shapes_never_crash():
    err = {"error": {"kind": "not_found", "message": "no header index"}}
    (nxt,) = decide(Q_CAPEX, (ToolCall("b1", "search_headers", {"query": "3M"}), err)).tool_calls
    assert nxt.name == "search_headers" or nxt.name == "sql"
    for junk in ("not json", [], {"results": "x"}, {"rows": [[1, 2]], "columns": ["a"]}, None):
        reply = decide(Q_CAPEX, (ToolCall("b1", "sql", {"query": "q"}), json.dumps(junk)),
                       tools=SQL_ONLY)
        assert reply.text or reply.tool_calls


def test_says_it_found_nothing_when_nothing_matches():
    empty = {"query": "3M", "total": 0, "results": []}
    turns = [(ToolCall(f"b{i}", "search_headers", {"query": q}), empty)
             for i, q in enumerate(["3M"])]
    turns.append((ToolCall("s1", "sql", {"query": (
        "SELECT file_stem, year, month, substr(parsed_md, 1, 400) AS head FROM filings "
        "WHERE contains(lower(substr(parsed_md, 1, 3000)), '3m') LIMIT 20")}),
        {"columns": ["file_stem"], "rows": [], "row_count": 0}))
    reply = decide(Q_CAPEX, *turns)
    assert reply.tool_calls == () and "could not find" in reply.text


# -- whole episodes on real filings --------------------------------------------------------


class MiniTools:
    """Tool outputs in the tools' shapes: SQL by real DuckDB over Parquet; the rest simulated."""

    def __init__(self, folder: Path, docs: dict[str, tuple[str, str, str]]):
        self.texts = {stem: (REAL / f"{name}.md").read_text() for stem, (name, _, _) in docs.items()}
        self.headers = [{"file_stem": stem, "company": company, "form_type": "10-K",
                         "period": period, "filing_date": None, "cik": "66740"}
                        for stem, (_, company, period) in docs.items()]
        table = pa.table({
            "accession": ["0000066740"] * len(docs), "file_stem": list(self.texts),
            "year": [2025] * len(docs), "month": [1] * len(docs),
            "parsed_md": list(self.texts.values()),
            "char_count": [len(t) for t in self.texts.values()]})
        self.path = folder / "2025-01.parquet"
        pq.write_table(table, self.path)

    def __call__(self, call: ToolCall) -> str:
        a = call.arguments
        if call.name == "search_headers":
            hits = [h for h in self.headers if a["query"].lower() in h["company"].lower()]
            return json.dumps({"query": a["query"], "total": len(hits), "results": hits})
        if call.name == "read_filing":
            text = self.texts[a["file_stem"]]
            windows = []
            for m in list(re.finditer(re.escape(a["pattern"]), text, re.IGNORECASE))[:3]:
                s, e = max(0, m.start() - 400), min(len(text), m.end() + 400)
                windows.append({"start": s, "end": e, "text": text[s:e]})
            return json.dumps({"file_stem": a["file_stem"], "windows": windows})
        if call.name == "sql":
            con = duckdb.connect()
            con.execute(f"CREATE VIEW filings AS SELECT * FROM read_parquet('{self.path}')")
            view = "filings"
            if a.get("file_stem"):
                con.execute("CREATE VIEW filing AS SELECT * FROM filings WHERE file_stem = ?",
                            [a["file_stem"]]) if False else con.execute(
                    f"CREATE VIEW filing AS SELECT * FROM filings WHERE file_stem = '{a['file_stem']}'")
                view = "filing"
            cur = con.execute(a["query"])
            cols = [d[0] for d in cur.description]
            rows = [list(r) for r in cur.fetchall()]
            assert view
            return json.dumps({"columns": cols, "rows": rows, "row_count": len(rows)})
        raise AssertionError(call.name)


@needs_realdata("financebench/docs_md")
@pytest.mark.parametrize("tools", [STREAM, SQL_ONLY], ids=["sql+stream", "sql"])
def test_episode_on_real_filings(tools, tmp_path):
    docs = {"0000066740-18-000008": ("3M_2017_10K", "3M CO", "2017-12-31"),
            "0000066740-19-000010": ("3M_2018_10K", "3M CO", "2018-12-31"),
            "0000066740-20-000012": ("3M_2019_10K", "3M CO", "2019-12-31")}
    mini = MiniTools(tmp_path, docs)
    model, sink = BaselineModel(), DirectorySink(tmp_path / "run")
    messages = [UserMessage(Q_CAPEX)]
    for turn in range(1, 12):
        result = model.complete(ModelRequest(messages=tuple(messages), tools=tools,
                                             label=f"Q1/turn-{turn:02d}"), sink)
        messages.append(result.reply.message)
        if not result.reply.tool_calls:
            break
        for call in result.reply.tool_calls:
            messages.append(ToolMessage(call.id, call.name, mini(call)))
    answer = result.reply.text
    m = re.search(r"Source: (\S+) \[(\d+), (\d+)\)", answer)
    assert m, answer
    stem, s, e = m.group(1), int(m.group(2)), int(m.group(3))
    quoted = answer[: answer.index("\n\nSource:")]
    assert " ".join(mini.texts[stem][s:e].split()) == quoted  # the citation is exact
    if tools == STREAM:
        assert stem == "0000066740-19-000010"  # ranked by the question's fiscal year
    # A floor, not an oracle: it must quote a passage about the asked metric, with a figure.
    assert "capital expenditure" in quoted.lower() or "property, plant" in quoted.lower(), quoted
    assert turn <= 8


def test_answers_when_the_agent_forbids_tools():
    from parquet_agent.models.protocol import GenerationSettings

    found = ToolCall("b1", "search_headers", {"query": "3M"})
    msgs = conversation(Q_CAPEX, (found, HEADERS)) + (UserMessage("Give your final answer now."),)
    reply = BaselineModel().decide(ModelRequest(
        messages=msgs, tools=STREAM, settings=GenerationSettings(tool_choice="none")))
    assert reply.tool_calls == () and "could not find" in reply.text
