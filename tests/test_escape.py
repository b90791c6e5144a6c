"""`parquet_agent.escape`: one rule per medium, the same in Python and in report.js.

The browser applies the rule to the case records itself, so report.js carries its own copy of
the odd-character set and the formula guard: this test reads them from the script and fails
when they drift from the module's."""

from __future__ import annotations

import re
from importlib import resources

from parquet_agent.escape import (
    FORMULA_START,
    ODD,
    ODD_CLASS,
    csv_cell,
    html_text,
    terminal,
    visible,
)


def _script() -> str:
    return resources.files("parquet_agent.report").joinpath("assets", "report.js").read_text()


def test_report_js_marks_the_same_characters_with_the_same_marks():
    js = re.search(r"var ODD = /\[(.*?)\]/g;", _script()).group(1)
    assert js == ODD_CLASS
    assert '"<U+" + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0") + ">"' in _script()


def test_report_js_guards_the_same_formula_starts():
    guard = re.search(r"if \(/\^\[(.*?)\]/\.test\(t\)\) t = \"'\" \+ t;", _script()).group(1)
    chars = set(re.sub(r"\\u([0-9a-f]{4})", lambda m: chr(int(m.group(1), 16)),
                       guard.replace("\\-", "-").replace("\\t", "\t").replace("\\r", "\r")
                       .replace("\\n", "\n")))
    assert chars == set(FORMULA_START)


def test_terminal_keeps_no_control_sequence_or_override():
    hostile = "col\x1b]0;title\x07\x1b[2J\r\u202eevil\u2066x\u200b\x9b\n\tnext"
    shown = terminal(hostile)
    assert not ODD.search(shown) and "\x1b" not in shown and "\r" not in shown
    assert shown == ("col<U+001B>]0;title<U+0007><U+001B>[2J<U+000D><U+202E>evil<U+2066>x"
                     "<U+200B><U+009B>\n\tnext")  # the writer's own newline and tab stay
    assert visible("plain text") == "plain text"


def test_csv_cells_never_start_a_formula():
    for start in FORMULA_START:
        assert csv_cell(start + "SUM(A1)") == "'" + start + "SUM(A1)"
    assert csv_cell("a=b") == "a=b" and csv_cell(None) == "" and csv_cell(-3) == -3


def test_html_text_escapes_marks_and_cuts():
    assert html_text('<b a="x">\u202e') == "&lt;b a=&quot;x&quot;&gt;&lt;U+202E&gt;"
    assert html_text({"n": "<"}) == "{&quot;n&quot;: &quot;&lt;&quot;}"  # not text: JSON
    cut = html_text("x" * 50, 10)
    assert cut.startswith("x" * 10 + " … [40 more characters") and "x" * 11 not in cut
