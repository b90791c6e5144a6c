"""Hostile column and file names meet a terminal and a spreadsheet (issue 24, item 6): the
offline baseline audits a dataset whose column names carry a terminal's control sequences (ESC,
an OSC title, BEL, CR, a right-to-left override) and a spreadsheet formula, in files whose names
carry them too. `audit run`, `audit inspect` and `audit diff` print none of those characters raw
(each is a visible `<U+XXXX>` mark), and findings.csv guards every cell a spreadsheet would run
as a formula, as cases-index.csv does."""

from __future__ import annotations

import csv
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq

from parquet_agent.escape import FORMULA_START

TERMINAL = "amount\x1b]0;pwned\x07\x1b[2J\u202e\rhidden"
FORMULA = '=HYPERLINK("http://evil.example/","open me")'
RAW = ("\x1b", "\x07", "\r", "\u202e")


def _dataset(folder):
    folder.mkdir()
    for name, kind in (("orders-\x1b[2J\u202e.parquet", pa.float64()), ("orders-b.parquet", pa.string())):
        rows = [{"id": i, TERMINAL: None if i % 3 else 1.0, FORMULA: None if i % 2 else "x",
                 "drift": None} for i in range(30)]
        schema = pa.schema([("id", pa.int64()), (TERMINAL, pa.float64()), (FORMULA, pa.string()),
                            ("drift", kind)])
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), folder / name)
    return folder


def _cli(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "parquet_agent", "audit", *args],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return done.stdout + done.stderr


def test_names_reach_no_terminal_raw_and_no_spreadsheet_as_a_formula(tmp_path):
    data = _dataset(tmp_path / "hostile")
    run = tmp_path / "run"
    printed = [_cli("run", str(data), "--run-dir", str(run))]
    printed.append(_cli("inspect", str(run), "--full"))
    with open(run / "findings.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert any(TERMINAL in r["columns"] for r in rows) and any(FORMULA in r["title"] for r in rows)
    for row in rows:
        if TERMINAL in row["columns"]:  # its examples name the hostile file
            printed.append(_cli("inspect", str(run), "--finding", row["key"]))
        for column, cell in row.items():
            assert not cell.startswith(FORMULA_START), (column, cell)
    printed.append(_cli("diff", str(run), str(run)))
    text = "\n".join(printed)
    assert "<U+001B>]0;pwned<U+0007>" in text and "<U+202E><U+000D>hidden" in text
    assert "[2J<U+202E>.parquet" in text  # the file name, in the examples (JSON escapes ESC)
    for char in RAW:
        assert char not in text, repr(char)
