"""The commands as a user runs them (real processes): `parquet-agent export`, `parquet-agent raw`,
`python -m parquet_agent.case_audit` and its report-package twin."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from parquet_agent.report.case_record import RunSource, build_case
from parquet_agent.store import read_raw
from tests.report.conftest import INCOMPLETE_CASE, MISSING_REQUEST, answer_requests, fresh_copy

REPO = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, timeout=120)


def test_export_command_rebuilds_a_saved_run(offline_run, tmp_path):
    run_dir = fresh_copy(offline_run, tmp_path)
    proc = _run("-m", "parquet_agent", "export", str(run_dir))
    assert proc.returncode == 0, proc.stderr.decode()
    assert "exported 6 cases" in proc.stdout.decode()
    assert (run_dir / "report.html").exists() and (run_dir / "cases-index.csv").exists()
    bad = _run("-m", "parquet_agent", "export", str(tmp_path / "nope"))
    assert bad.returncode == 2 and b"not a run folder" in bad.stderr


def test_raw_command_prints_the_exact_bytes(http_run):
    sent = [p for p in answer_requests(http_run, INCOMPLETE_CASE) if p != MISSING_REQUEST]
    path = sent[-1]  # the latest request of the case that reached the raw store
    proc = _run("-m", "parquet_agent", "raw", str(http_run), path)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout == read_raw(http_run, path)
    missing = _run("-m", "parquet_agent", "raw", str(http_run), f"raw/{INCOMPLETE_CASE}/nope.json")
    assert missing.returncode == 2
    # the message lists the case's raw files, the first request among them
    assert b"no such raw file" in missing.stderr and Path(sent[0]).name.encode() in missing.stderr


def test_case_audit_prints_one_case_readably(http_run):
    proc = _run("-m", "parquet_agent.case_audit", str(http_run), "--question", "Q001",
                "--model", "fake-b", "--method", "sql+stream")
    assert proc.returncode == 0, proc.stderr.decode()
    out = proc.stdout.decode()
    for n in range(1, 7):
        assert f"== {n}. " in out
    assert "Northwind" in out and "correctness 0.0" in out
    # terminal safety: the ANSI escape, NUL and bidi override arrive as visible marks
    assert "\x1b" not in out and "\x00" not in out and "\u202e" not in out
    assert "<U+001B>[31m" in out and "<U+202E>evil-rtl" in out
    assert '"method": "POST"' not in out  # without --full the exact requests are only named


def test_case_audit_full_and_json(http_run):
    full = _run("-m", "parquet_agent.case_audit", str(http_run), "--question", "Q002",
                "--model", "openai/gpt-fake-a", "--method", "sql", "--full")
    assert full.returncode == 0, full.stderr.decode()
    out = full.stdout.decode()
    assert '"method": "POST"' in out and "tool outputs not in latest request: late-1" in out
    assert "[MISSING]" in out
    # every attempt's exact raw request, the first turn's too
    first = read_raw(http_run, answer_requests(http_run, INCOMPLETE_CASE)[0]).decode()
    body_line = next(line for line in first.splitlines() if '"body":' in line)
    assert body_line.strip() in out
    as_json = _run("-m", "parquet_agent.report.case_audit", str(http_run), "--question", "Q002",
                   "--model", "gpt-fake-a", "--method", "sql", "--json")
    assert as_json.returncode == 0, as_json.stderr.decode()
    source = RunSource.open(http_run)
    assert json.loads(as_json.stdout) == build_case(source, INCOMPLETE_CASE).to_dict()


def test_case_audit_lists_what_exists_for_a_wrong_question_model_or_method(http_run):
    proc = _run("-m", "parquet_agent.case_audit", str(http_run), "--question", "Q999",
                "--model", "gpt-9", "--method", "vector")
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert "question 'Q999' is not in this run; it has: Q001, Q002, Q003" in err
    assert "fake-a (openai/gpt-fake-a)" in err and "fake-b (openai/gpt-fake-b)" in err
    assert "method 'vector' is not in this run; it has: sql, sql+stream" in err


def test_case_audit_needs_model_and_method_only_where_the_run_has_several(offline_run, http_run):
    """Issue 27 item 7: the offline demo has one model; --model was required all the same."""
    one_model = _run("-m", "parquet_agent.case_audit", str(offline_run), "--question", "Q001",
                     "--method", "sql")
    assert one_model.returncode == 0, one_model.stderr.decode()
    assert "Q001__baseline__sql" in one_model.stdout.decode()
    two_methods = _run("-m", "parquet_agent.case_audit", str(offline_run), "--question", "Q001")
    assert two_methods.returncode == 2
    assert "this run has 2 strategies (sql, sql+stream): give --method" in \
        two_methods.stderr.decode()
    two_models = _run("-m", "parquet_agent.case_audit", str(http_run), "--question", "Q001",
                      "--method", "sql")
    assert two_models.returncode == 2
    assert "this run has 2 models (fake-a, fake-b): give --model" in two_models.stderr.decode()


def test_case_audit_takes_ids_in_any_case_and_suggests_close_matches(http_run):
    lower = _run("-m", "parquet_agent.case_audit", str(http_run), "--question", "q001",
                 "--model", "fake-b", "--method", "SQL+STREAM")
    assert lower.returncode == 0, lower.stderr.decode()
    assert "Q001__fake-b__sql+stream" in lower.stdout.decode()
    typo = _run("-m", "parquet_agent.case_audit", str(http_run), "--question", "Q0001",
                "--model", "fake-b", "--method", "sq")
    assert typo.returncode == 2
    err = typo.stderr.decode()
    assert "question 'Q0001' is not in this run; did you mean Q001" in err
    assert "method 'sq' is not in this run; did you mean sql" in err


def test_export_refuses_a_corpus_folder_and_writes_nothing(tmp_path):
    """Issue 19 finding 3: a corpus folder has a manifest.json too; export used to write
    cases/, indexes, summary and report.html into it."""
    from parquet_agent.corpus.manifest import write_corpus_manifest
    from tests.harness_corpus import make_harness_corpus

    corpus = make_harness_corpus(tmp_path / "corpus")
    write_corpus_manifest(corpus, origin={"test": "harness"}, kind="prepared")
    assert (corpus / "manifest.json").is_file()
    before = sorted(p.relative_to(corpus) for p in corpus.rglob("*"))
    proc = _run("-m", "parquet_agent", "export", str(corpus))
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert "not a run folder: its manifest.json is a corpus manifest" in err
    assert "nothing was written" in err
    assert sorted(p.relative_to(corpus) for p in corpus.rglob("*")) == before


def test_a_closed_pipe_ends_tool_batch_and_audit_quietly(http_run, corpus, tmp_path):
    """Issue 19 finding 8: `... | head` printed a BrokenPipeError traceback."""
    batch = tmp_path / "calls.jsonl"
    batch.write_text('{"name": "describe_corpus", "args": {}}\n' * 30)
    commands = [[sys.executable, "-m", "parquet_agent", "tool", str(corpus), "--batch",
                 str(batch)],
                [sys.executable, "-m", "parquet_agent.case_audit", str(http_run), "--question",
                 "Q001", "--model", "fake-b", "--method", "sql", "--full"],
                [sys.executable, "-m", "parquet_agent", "case-audit", str(http_run), "--question",
                 "Q001", "--model", "fake-b", "--method", "sql", "--full"]]
    for command in commands:
        proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        proc.stdout.read(10)
        proc.stdout.close()  # the reader goes away, as `head -c 10` does
        err = proc.stderr.read().decode()
        proc.wait(timeout=120)
        assert "Traceback" not in err and "BrokenPipeError" not in err, (command, err)
        assert proc.returncode in (0, 141), (command, proc.returncode, err)
