"""The machine's faults (issue 14): a full disk (a small tmpfs mounted here, as root), a read-only
runs folder, permission denied (an immutable folder: root is refused too) and a corpus file that
vanished mid-run end `parquet-agent run` with one line that says what happened and what to do,
exit status 2, nothing recorded lost; `--resume` finishes the run once the cause is gone.

Real CLI processes, real run folders, the OpenAI SDK against the fake server on 127.0.0.1 (each
answer call takes 0.2 s, so the fault lands while cases are in flight), the harness corpus.
Permission denied is met twice: as root through an immutable folder (EPERM: root ignores mode
bits) and as user nobody through a folder whose mode no longer lets it write (EACCES)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from parquet_agent.explore.runs import RunStore
from parquet_agent.models.fakes import openai_server
from tests.conftest import fill_disk
from tests.engine.grid import GridScript, harness_answers, write_config
from tests.harness_corpus import make_harness_corpus
from tests.window import check_complete_once

REPO = Path(__file__).resolve().parents[1]
GRID = 12  # 3 questions x 2 models x 2 strategies
ENV = dict(os.environ, FAKE_OPENAI_KEY="sk-test")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_harness_corpus(tmp_path_factory.mktemp("faults") / "corpus")


def _start(config: Path, run_dir: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "parquet_agent", "run", str(config), "--run-dir", str(run_dir),
         "--quiet", *extra], cwd=REPO, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)


def _finish(proc: subprocess.Popen) -> subprocess.CompletedProcess:
    out, err = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _run(config: Path, run_dir: Path, *extra: str) -> subprocess.CompletedProcess:
    return _finish(_start(config, run_dir, *extra))


def _sealed(run_dir: Path) -> int:
    """Cases whose journal is sealed (finished) so far."""
    return len(list((run_dir / "journal").glob("*.jsonl.gz")))


def _when_cases_finished(proc: subprocess.Popen, run_dir: Path, n: int = 1) -> None:
    deadline = time.monotonic() + 120
    while _sealed(run_dir) < n:
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "no case finished in time"
        time.sleep(0.02)


def _one_line(done: subprocess.CompletedProcess) -> str:
    """The run's stderr is one `parquet-agent:` line and nothing else (no traceback; the
    "cost unknown" warnings for the fake models aside: one per model)."""
    assert done.returncode == 2, (done.stdout[-1000:], done.stderr[-3000:])
    lines = [line for line in done.stderr.splitlines()
             if line.strip() and not line.startswith("cost unknown")]
    assert len(lines) == 1 and lines[0].startswith("parquet-agent: "), done.stderr[-3000:]
    return lines[0]


def _finished_once(run_dir: Path) -> None:
    with RunStore(run_dir.parent).open(run_dir) as run:
        check_complete_once(run, GRID)


def _stopped_mid_run(config: Path, run_dir: Path, fault) -> str:
    """Start a run, call `fault()` once its first case finished; the run's one stderr line."""
    proc = _start(config, run_dir)
    _when_cases_finished(proc, run_dir)
    fault()
    return _one_line(_finish(proc))


def _resume_finishes(config: Path, run_dir: Path) -> None:
    done = _run(config, run_dir, "--resume")
    assert done.returncode == 0, done.stderr[-3000:]
    _finished_once(run_dir)


def _partial_run(config: Path, run_dir: Path) -> None:
    """A run stopped hard (SIGKILL) after its first case finished, as a crash leaves it."""
    proc = _start(config, run_dir)
    _when_cases_finished(proc, run_dir)
    proc.send_signal(signal.SIGKILL)
    _finish(proc)
    assert _sealed(run_dir) < GRID


def test_disk_full_mid_run_is_one_line_then_resume_finishes(corpus, tmp_path, small_tmpfs):
    script = GridScript(harness_answers(corpus), latency_s=0.2)
    run_dir = small_tmpfs / "runs" / "full"
    with openai_server(script) as server:
        config = write_config(tmp_path / "exp.toml", corpus, small_tmpfs / "runs", server.url,
                              case_workers=2)
        filled: list[Path] = []
        line = _stopped_mid_run(config, run_dir, lambda: filled.append(fill_disk(small_tmpfs)))
        assert "disk is full" in line and str(run_dir) in line, line
        assert "--resume" in line and "Nothing recorded was lost" in line, line
        filled[0].unlink()
        _resume_finishes(config, run_dir)
    # every answer call paid before the disk filled is replayed, not asked again, except calls
    # cut off mid-write by the fault (at most one per case in flight)
    assert sum(n - 1 for n in script.duplicates().values()) <= 2


def test_read_only_runs_folder_is_one_line_for_run_and_resume(corpus, tmp_path, small_tmpfs):
    script = GridScript(harness_answers(corpus), latency_s=0.1)
    runs = small_tmpfs / "runs"
    runs.mkdir()
    with openai_server(script) as server:
        config = write_config(tmp_path / "exp.toml", corpus, runs, server.url, case_workers=2)
        _partial_run(config, runs / "crashed")
        subprocess.run(["mount", "-o", "remount,ro", str(small_tmpfs)], check=True)
        try:
            fresh = _one_line(_run(config, runs / "new"))
            resumed = _one_line(_run(config, runs / "crashed", "--resume"))
        finally:
            subprocess.run(["mount", "-o", "remount,rw", str(small_tmpfs)], check=True)
        assert "read-only" in fresh and "creating the run folder" in fresh, fresh
        assert "read-only" in resumed and str(runs / "crashed") in resumed, resumed
        assert "--resume" in resumed, resumed
        _resume_finishes(config, runs / "crashed")


def test_permission_denied_is_one_line_then_resume_finishes(corpus, tmp_path, small_tmpfs):
    script = GridScript(harness_answers(corpus), latency_s=0.1)
    run_dir = small_tmpfs / "runs" / "locked"
    with openai_server(script) as server:
        config = write_config(tmp_path / "exp.toml", corpus, small_tmpfs / "runs", server.url,
                              case_workers=2)
        _partial_run(config, run_dir)
        journal = run_dir / "journal"
        # immutable: even root is refused (EPERM) creating or sealing a journal in it
        subprocess.run(["chattr", "+i", str(journal)], check=True)
        try:
            line = _one_line(_run(config, run_dir, "--resume"))
        finally:
            subprocess.run(["chattr", "-i", str(journal)], check=True)
        assert "not permitted" in line and str(journal) in line, line
        assert "--resume" in line, line
        _resume_finishes(config, run_dir)


def _as_nobody(python: Path, config: Path, run_dir: Path, *extra: str) -> subprocess.Popen:
    env = ["PATH=/usr/bin:/bin", "HOME=/nonexistent", "LANG=C.UTF-8", "FAKE_OPENAI_KEY=sk-test",
           "PARQUET_AGENT_ASSUME_NO_LANDLOCK=1"]  # the sandbox's mode is not what is tested
    return subprocess.Popen(
        ["runuser", "-u", "nobody", "--", "env", *env, str(python), "-m", "parquet_agent", "run",
         str(config), "--run-dir", str(run_dir), "--quiet", *extra], cwd="/",
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_permission_denied_as_a_non_root_user_is_one_line_then_resume_finishes(
        corpus, nobody_python, public_tmp):
    """A real EACCES: the run is user nobody's; once its first case is sealed, its journal
    folder stops being writable for nobody (new cases cannot start, finished ones cannot be
    sealed)."""
    folder = public_tmp / "eacces"
    shutil.copytree(corpus, folder / "corpus")
    (folder / "runs").mkdir()
    script = GridScript(harness_answers(corpus), latency_s=0.2)
    run_dir = folder / "runs" / "denied"
    with openai_server(script) as server:
        config = write_config(folder / "exp.toml", folder / "corpus", folder / "runs", server.url,
                              case_workers=2)
        with open(config, "a") as f:  # [limits] is the last table
            f.write("allow_unprotected_sandbox = true\n")
        subprocess.run(["chmod", "-R", "a+rX", str(folder)], check=True)
        shutil.chown(folder / "runs", "nobody")
        proc = _as_nobody(nobody_python, config, run_dir)
        _when_cases_finished(proc, run_dir)
        journal = run_dir / "journal"
        journal.chmod(0o555)  # owned by nobody, who may no longer write in it
        line = _one_line(_finish(proc))
        assert "permission was denied" in line and str(journal) in line, line
        assert "--resume" in line and "Nothing recorded was lost" in line, line
        assert _sealed(run_dir) < GRID
        journal.chmod(0o755)
        resumed = _finish(_as_nobody(nobody_python, config, run_dir, "--resume"))
        assert resumed.returncode == 0, resumed.stderr[-3000:]
    _finished_once(run_dir)


def test_a_corpus_file_vanished_mid_run_is_one_line_then_resume_finishes(corpus, tmp_path):
    copy = tmp_path / "corpus"
    shutil.copytree(corpus, copy)
    victim = sorted(copy.glob("*.parquet"))[0]
    moved = tmp_path / victim.name
    script = GridScript(harness_answers(corpus), latency_s=0.2)
    run_dir = tmp_path / "runs" / "v"
    with openai_server(script) as server:
        config = write_config(tmp_path / "exp.toml", copy, tmp_path / "runs", server.url,
                              case_workers=1)
        line = _stopped_mid_run(config, run_dir, lambda: victim.rename(moved))
        assert victim.name in line and "put" in line and "--resume" in line, line
        moved.rename(victim)
        _resume_finishes(config, run_dir)
