"""Bounding tool output: every value becomes JSON-able and every output has a size limit.

`bound_rows(columns, rows, limits)` turns DuckDB result rows into JSON-able lists, cutting long
cells, long or many column names, and stopping at a total character budget that the names count
against, and says what it cut (`truncated` is None when
nothing was cut, so an untruncated result carries no noise).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import json
import math
import uuid
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class OutputLimits:
    max_rows: int = 200
    max_cell_chars: int = 2_000
    max_total_chars: int = 30_000
    max_columns: int = 100
    max_name_chars: int = 120

    def hard_limit_chars(self) -> int:
        """No tool's answer to the model is longer than this, whatever it holds (the last
        check, in the caller's process, over the exact text the model would receive)."""
        return 2 * self.max_total_chars + 20_000


def jsonable(value: Any) -> Any:
    """A JSON-able form of one DuckDB value (dates as ISO text, decimals as text, ...)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, (decimal.Decimal, uuid.UUID, _dt.timedelta)):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "0x" + bytes(value[:1024]).hex()
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [jsonable(v) for v in value]
    return str(value)


def _cell_size(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    return len(json.dumps(value, ensure_ascii=False))


def bound_rows(
    columns: list[str], rows: list[tuple], limits: OutputLimits
) -> tuple[list[str], list[list[Any]], dict[str, Any] | None]:
    """Bounded column names and JSON-able rows. `rows` may hold one more row than `max_rows`
    (to detect more). Column names count against the total like cells do: a query can make
    its names as large as its values (`SELECT *, *, ... FROM (SELECT 1 AS "xxxx...")`)."""
    more_rows = len(rows) > limits.max_rows
    names_cut = sum(len(c) > limits.max_name_chars for c in columns)
    names = [_cut_name(c, limits.max_name_chars) for c in columns[: limits.max_columns]]
    columns_cut = max(0, len(columns) - limits.max_columns)
    out: list[list[Any]] = []
    cells_cut = 0
    total = sum(len(c) for c in names)
    stopped_at_total = False
    for row in rows[: limits.max_rows]:
        cells = []
        for value in row[: limits.max_columns]:
            value = jsonable(value)
            size = _cell_size(value)
            if size > limits.max_cell_chars:
                cells_cut += 1
                text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
                value = text[: limits.max_cell_chars] + f"…[cut {size - limits.max_cell_chars} chars]"
                size = limits.max_cell_chars
            if not out and total + size > limits.max_total_chars:  # one row alone is too large
                value, size, stopped_at_total = "…[cut: output budget]", 0, True
            cells.append(value)
            total += size
        if out and total > limits.max_total_chars:
            stopped_at_total = True
            break
        out.append(cells)
    truncated: dict[str, Any] = {}
    if more_rows:
        truncated["more_rows"] = True
        truncated["max_rows"] = limits.max_rows
    if stopped_at_total:
        truncated["stopped_at_total_chars"] = limits.max_total_chars
    if cells_cut:
        truncated["cells_cut"] = cells_cut
        truncated["max_cell_chars"] = limits.max_cell_chars
    if columns_cut:
        truncated["columns_cut"] = columns_cut
        truncated["max_columns"] = limits.max_columns
    if names_cut:
        truncated["column_names_cut"] = names_cut
        truncated["max_name_chars"] = limits.max_name_chars
    if truncated:
        truncated["rows_returned"] = len(out)
        truncated["advice"] = (
            "aggregate, filter or LIMIT in SQL; select fewer columns with short names; select "
            "substr(parsed_md, start, n) or use read_filing for long text instead of whole cells"
        )
    return names, out, truncated or None


def _cut_name(name: str, limit: int) -> str:
    return name if len(name) <= limit else name[:limit] + "…"
