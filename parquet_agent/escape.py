"""Untrusted text leaving us: one rule per medium (a terminal, a spreadsheet, a page).

Model output, filings, dataset cells and column or file names are untrusted wherever they are
shown. Every writer that puts them on a terminal, into a CSV file or into HTML goes through one
function here, so each medium has exactly one rule:

- `visible(text)`: the characters that could hide, reorder or restyle what a reader sees
  (`ODD`: C0 and C1 controls but tab and newline, DEL, bidi embeddings, overrides and isolates,
  zero-width and other invisible format characters, line and paragraph separators, the BOM)
  become a visible `<U+XXXX>` mark. ASCII on purpose: a page laid out hundreds of thousands of
  `⟨U+0001⟩` marks in a fallback font for minutes (issue 24), ASCII marks lay out at once.
- `terminal(text)`: for stdout and stderr: `visible`, so no escape sequence (ESC, OSC, BEL, CR)
  or bidi override from the data reaches the terminal; the caller's own newlines stay.
- `csv_cell(value)`: a cell a spreadsheet never runs as a formula: text starting with `=`, `+`,
  `-`, `@`, tab, CR or LF (or a full-width `＝＋－＠`) gets a leading `'`, the usual guard; None
  is empty; other values are left for the csv module. `csv_frame(df)` does it to a DataFrame.
- `html_text(value, limit=None)`: for HTML (report pages, notebook widgets): text (non-text as
  compact JSON), `visible`, then escaped for element content and quoted attributes alike;
  `limit` shows at most that many characters and says how many were left out.

report.js applies the same `ODD` set and the same formula guard in the browser (a test checks
they match), since the page renders the case records itself.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

# Kept in step with ODD in parquet_agent/report/assets/report.js (tests/test_escape.py checks).
ODD_CLASS = ("\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f\\u00ad\\u061c\\u180e"
             "\\u200b-\\u200f\\u2028-\\u202e\\u2060-\\u206f\\ufeff\\ufff9-\\ufffb")
ODD = re.compile("[" + ODD_CLASS + "]")  # re reads the \uXXXX escapes itself
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def mark(char: str) -> str:
    """The visible mark of one character: `<U+202E>`."""
    return f"<U+{ord(char):04X}>"


def visible(text: str) -> str:
    """`text` with every `ODD` character shown as its `<U+XXXX>` mark."""
    return ODD.sub(lambda m: mark(m.group()), text)


def terminal(text: Any) -> str:
    """Text safe to print on a terminal: no control sequence or bidi override survives."""
    return visible(str(text))


def csv_cell(value: Any) -> Any:
    """A CSV cell that no spreadsheet runs as a formula (see the module docstring)."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def csv_frame(frame: Any) -> Any:
    """A copy of a pandas DataFrame with `csv_cell` applied to its text cells (for `to_csv`)."""
    from pandas.api.types import is_object_dtype, is_string_dtype

    out = frame.copy()
    for col in out.columns:
        if is_object_dtype(out[col].dtype) or is_string_dtype(out[col].dtype):
            out[col] = out[col].map(lambda v: csv_cell(v) if isinstance(v, str) else v)
    return out


def html_text(value: Any, limit: int | None = None) -> str:
    """`value` as HTML text: marks for `ODD` characters, then escaped (quotes too). Non-text
    values are shown as compact JSON, so a forged number cannot carry markup."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    cut = ""
    if limit is not None and len(text) > limit:
        cut = f" … [{len(text) - limit:,} more characters not shown here]"
        text = text[:limit]
    return html.escape(visible(text) + cut, quote=True)


__all__ = ["FORMULA_START", "ODD", "ODD_CLASS", "csv_cell", "csv_frame", "html_text", "mark", "terminal", "visible"]
