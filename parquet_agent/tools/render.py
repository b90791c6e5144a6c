"""Bounding tool output: every value becomes JSON-able and every output has a size limit.

`bound_rows(columns, rows, limits)` turns DuckDB result rows into JSON-able lists, cutting long
cells and stopping at a total character budget, and says what it cut (`truncated` is None when
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
) -> tuple[list[list[Any]], dict[str, Any] | None]:
    """Bounded JSON-able rows. `rows` may hold one more row than `max_rows` (to detect more)."""
    more_rows = len(rows) > limits.max_rows
    out: list[list[Any]] = []
    cells_cut = 0
    total = sum(len(c) for c in columns)
    stopped_at_total = False
    for row in rows[: limits.max_rows]:
        cells = []
        for value in row:
            value = jsonable(value)
            size = _cell_size(value)
            if size > limits.max_cell_chars:
                cells_cut += 1
                text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
                value = text[: limits.max_cell_chars] + f"…[cut {size - limits.max_cell_chars} chars]"
                size = limits.max_cell_chars
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
    if truncated:
        truncated["rows_returned"] = len(out)
        truncated["advice"] = (
            "aggregate, filter or LIMIT in SQL; select substr(parsed_md, start, n) or use "
            "read_filing for long text instead of whole cells"
        )
    return out, truncated or None
