"""The action gate as an option for question-answering agents (off unless you wrap the tools).

    agent = Agent(model, GatedTools(tools))      # tools: a Tools / ScopedTools / view

Before an unscoped `sql` call reaches a worker, the audit's action rules (`rules.query_rules`)
check it: a pattern scan over `parsed_md` of the whole corpus that no other column narrows is
refused at once (it would only run into the 20 CPU-second limit), with the critique as the
tool error the agent sees and the case journal records (`tool_call`, kind `forbidden`, message
starting "action gate"). Every evaluation (PASS / WARN / FAIL) is kept in `.evaluations`.
Experiments that do not wrap their tools are unchanged.
"""

from __future__ import annotations

import json
from typing import Any

from parquet_agent.audit.gates import Evaluation
from parquet_agent.audit.rules import query_rules
from parquet_agent.models.protocol import ToolSpec
from parquet_agent.tools.result import ToolResult, error_result


class GatedTools:
    def __init__(self, tools: Any, *, long_text: tuple[str, ...] = ("parsed_md",)):
        self.tools = tools
        self.strategy = tools.strategy
        self.long_text = list(long_text)
        self.evaluations: list[Evaluation] = []

    def specs(self) -> tuple[ToolSpec, ...]:
        return self.tools.specs()

    def call_raw(self, name: object, arguments: object) -> ToolResult:
        query = _unscoped_query(name, arguments)
        if query is not None:
            verdict, critique = query_rules(query, self.long_text)
            self.evaluations.append(Evaluation("action", "rules", len(self.evaluations) + 1,
                                               verdict, critique, {"tool": name, "query": query}))
            if verdict == "FAIL":
                return error_result(name, arguments, "forbidden", f"action gate (rules) FAIL: {critique}")
        return self.tools.call_raw(name, arguments)


def _unscoped_query(name: object, arguments: object) -> str | None:
    if name != "sql":
        return None
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    if not isinstance(arguments, dict) or arguments.get("file_stem") is not None:
        return None
    query = arguments.get("query")
    return query if isinstance(query, str) else None
