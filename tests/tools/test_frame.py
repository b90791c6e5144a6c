"""`sql_frame` / `ToolResult.to_frame()` (issue 19, part 5): an `sql` result as a DataFrame in a
notebook, from a live call, from its output and from a journaled call as a case record keeps it;
real workers over the tools corpus. A cut result says it was cut; a failed call or another tool's
result is refused with what it was."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from parquet_agent import sql_frame
from parquet_agent.tools import Tools
from parquet_agent.tools.frame import NotATable
from parquet_agent.tools.render import OutputLimits


def test_an_sql_result_becomes_the_frame_the_model_saw(tools):
    result = tools.call("sql", query="SELECT month, count(*) AS n, min(file_stem) AS first "
                                     "FROM filings GROUP BY month ORDER BY month")
    frame = result.to_frame()
    assert list(frame.columns) == ["month", "n", "first"]
    assert frame["n"].tolist() == [30, 30] and frame["month"].tolist() == [1, 2]
    assert frame.attrs["truncated"] is None and frame.attrs["row_count"] == 2
    # the same from the output alone, and from the journaled form (JSON round trip)
    pd.testing.assert_frame_equal(sql_frame(result.output), frame)
    record_call = json.loads(json.dumps({"name": "sql", "ok": True, "output": result.output,
                                         "error_kind": None}))
    pd.testing.assert_frame_equal(sql_frame(record_call), frame)


def test_a_cut_result_says_so(corpus_dir):
    with Tools.open(corpus_dir, "sql", cache="off",
                    output_limits=OutputLimits(max_rows=5)) as small:
        result = small.call("sql", query="SELECT file_stem FROM filings ORDER BY file_stem")
    with pytest.warns(UserWarning, match="cut by the tools' output limits"):
        frame = sql_frame(result)
    assert len(frame) == 5 and frame.attrs["truncated"]["more_rows"] is True


def test_failed_calls_and_other_tools_are_refused_by_name(tools):
    failed = tools.call("sql", query="SELECT nope FROM filings")
    with pytest.raises(NotATable, match="the sql call failed.*sql: "):
        failed.to_frame()
    with pytest.raises(NotATable, match="failed.*sql: boom"):
        sql_frame({"name": "sql", "ok": False, "error_kind": "sql", "error_message": "boom"})
    search = tools.call("search_headers", query="Northwind")
    with pytest.raises(NotATable, match="'search_headers' tool result is not a table"):
        sql_frame(search)
    with pytest.raises(NotATable, match=r"got dict with keys \['a'\]"):
        sql_frame({"a": 1})
