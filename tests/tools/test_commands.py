"""`parquet-agent tool`: one call, a batch, and the exit statuses (tool errors exit 0)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.tools.conftest import stem


class Done:
    def __init__(self, returncode: int, stdout: str, stderr: str):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def run(capsys):
    """The real CLI entry point in this process (a subprocess per call costs seconds)."""
    from parquet_agent.cli import main

    def call(*args: str) -> Done:
        code = main(["tool", *args])
        out, err = capsys.readouterr()
        return Done(code, out, err)

    return call


def test_one_call_prints_one_json_result(corpus_dir):
    done = subprocess.run(
        [sys.executable, "-m", "parquet_agent", "tool", str(corpus_dir), "sql",
         "--args", '{"query": "SELECT count(*) AS n FROM filings"}'],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["ok"] and result["output"]["rows"] == [[60]] and result["error"] is None
    assert set(result["timings"]) == {"queue_ms", "run_ms", "total_ms"}


def test_a_tool_error_is_a_value_and_exits_zero(run, corpus_dir):
    done = run(str(corpus_dir), "sql", "--args", '{"query": "DROP VIEW filings"}')
    assert done.returncode == 0
    assert json.loads(done.stdout)["error"]["kind"] == "forbidden"


def test_batch_prints_one_result_per_line_in_order(run, corpus_dir, tmp_path):
    batch = tmp_path / "calls.jsonl"
    calls = [
        {"name": "describe_corpus", "args": {}},
        {"name": "read_filing", "args": {"file_stem": stem(3), "max_chars": 50}},
        {"name": "nope", "args": {}},
        {"name": "search_headers", "args": {"query": "Tailspin", "page_size": 2}},
    ]
    batch.write_text("\n".join(json.dumps(c) for c in calls) + "\n")
    done = run(str(corpus_dir), "--batch", str(batch))
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["name"] for r in lines] == ["describe_corpus", "read_filing", "nope", "search_headers"]
    assert [r["ok"] for r in lines] == [True, True, False, True]
    assert lines[1]["output"]["end"] == 50 and lines[2]["error"]["kind"] == "unknown_tool"


def test_usage_errors_exit_non_zero(run, corpus_dir, tmp_path):
    assert run(str(corpus_dir), "sql", "--args", "{not json").returncode == 2
    assert run(str(corpus_dir)).returncode == 2  # neither NAME nor --batch
    with pytest.raises(SystemExit) as exited:  # argparse: unknown strategy
        run(str(corpus_dir), "sql", "--strategy", "vector")
    assert exited.value.code == 2
    assert run(str(tmp_path / "missing"), "sql", "--args", "{}").returncode == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"args": {}}\n')
    done = run(str(corpus_dir), "--batch", str(bad))
    assert done.returncode == 2 and "bad.jsonl:1" in done.stderr
