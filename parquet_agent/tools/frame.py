"""An `sql` tool result as a pandas DataFrame, for notebooks.

    result = tools.call("sql", query="SELECT form_type, count(*) AS n FROM filings GROUP BY 1")
    result.to_frame()            # or sql_frame(result)
    sql_frame(record["tool_calls"][0])   # a tool call of a case record (cases/<id>.json)

It takes what a researcher has at hand: a `ToolResult`, a journaled tool call (anything with
`output` / `ok` / `name`, or such a mapping), or the output itself (`{"columns", "rows"}`). The
frame holds exactly the rows the model saw; when the output limits cut the result, the frame
says so (`frame.attrs["truncated"]`, and a warning), so a cut table is never taken for the whole.
pandas is imported only here (the tool workers import the tools package, never this module).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any


class NotATable(ValueError):
    """What was given holds no `sql` table (a failed call, another tool's output, ...)."""


def sql_frame(result: Any) -> Any:
    """A DataFrame of an `sql` tool result: its columns in order, one row per returned row,
    `attrs` with `truncated` (None when nothing was cut) and `row_count`. Raises NotATable
    saying what it got instead."""
    import pandas as pd

    output = _output(result)
    columns, rows = output["columns"], output["rows"]
    frame = pd.DataFrame.from_records([list(r) for r in rows], columns=list(columns))
    truncated = output.get("truncated")
    frame.attrs.update(truncated=truncated, row_count=output.get("row_count", len(rows)))
    if output.get("scoped_to"):
        frame.attrs["scoped_to"] = output["scoped_to"]
    if truncated:
        warnings.warn(f"this sql result was cut by the tools' output limits ({truncated}); the "
                      f"DataFrame holds the {len(rows)} row(s) the model saw, not the whole "
                      "answer: narrow the query or aggregate", stacklevel=2)
    return frame


def _output(result: Any) -> Mapping[str, Any]:
    """The `{"columns", "rows"}` mapping inside whatever was given."""
    if isinstance(result, Mapping) and "columns" in result and "rows" in result:
        return result
    get = result.get if isinstance(result, Mapping) else (lambda k: getattr(result, k, None))
    name, ok, output, error = get("name"), get("ok"), get("output"), get("error")
    if name is not None and name != "sql":
        raise NotATable(f"a {name!r} tool result is not a table; sql_frame takes sql results")
    if ok is False:
        raise NotATable(f"the sql call failed, so there is no table: {_error_text(error, get)}")
    if isinstance(output, Mapping) and "columns" in output and "rows" in output:
        return output
    raise NotATable("expected an sql tool result (a ToolResult, a journaled sql call, or its "
                    f"output with 'columns' and 'rows'); got {type(result).__name__}"
                    + (f" with keys {sorted(result)[:8]}" if isinstance(result, Mapping) else ""))


def _error_text(error: Any, get: Any) -> str:
    if isinstance(error, Mapping):
        return f"{error.get('kind')}: {error.get('message')}"
    if error is not None and hasattr(error, "kind"):
        return f"{error.kind}: {error.message}"
    kind, message = get("error_kind"), get("error_message")
    return f"{kind}: {message}" if kind or message else "no error recorded"
