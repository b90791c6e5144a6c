"""The `corpus` command family end to end, in a real child process (exit codes, output)."""

from __future__ import annotations

import subprocess
import sys

from parquet_agent.corpus.index import CorpusIndex
from parquet_agent.corpus.manifest import read_corpus_manifest


def _run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "parquet_agent", "corpus", *args],
                          capture_output=True, text=True, cwd=cwd, timeout=300)


def test_build_writes_corpus_manifest_and_index(tmp_path):
    out = tmp_path / "c"
    proc = _run("build", "--rows", "300", "--out", str(out), "--seed", "3")
    assert proc.returncode == 0, proc.stderr
    assert "index: 300 rows" in proc.stdout
    manifest = read_corpus_manifest(out)
    assert manifest.kind == "synthetic" and manifest.rows == 300 and manifest.tool_ready
    index = CorpusIndex.open(out)
    assert index.snapshot_id == manifest.snapshot.snapshot_id
    proc = _run("verify", str(out), "--require-tool-ready")
    assert proc.returncode == 0 and "matches the manifest" in proc.stdout
    assert "skipping index: " in (_run("index", str(out), "--skip-only")).stdout


def test_index_builds_the_skipping_index_unless_told_not_to(tmp_path):
    from tests.tools.conftest import write_files

    folder = tmp_path / "c"
    write_files(folder)
    proc = _run("index", str(folder), "--no-skip-index")
    assert proc.returncode == 0 and "index: 60 rows" in proc.stdout and "skipping index:" not in proc.stdout
    assert not (folder / "_skip").exists()
    proc = _run("index", str(folder), "--skip-only")
    assert proc.returncode == 0 and proc.stdout.startswith("skipping index: ")
    assert (folder / "_skip" / "skip.json").is_file()
    serial = (folder / "_skip" / "bits.npy").read_bytes()
    proc = _run("index", str(folder), "--skip-only", "--jobs", "2")
    assert proc.returncode == 0 and (folder / "_skip" / "bits.npy").read_bytes() == serial
    proc = _run("index", str(folder), "--skip-only", "--no-skip-index")
    assert proc.returncode == 2 and "exclude each other" in proc.stderr


def test_designed_errors_exit_2_with_a_message(tmp_path):
    proc = _run("index", str(tmp_path / "missing"))
    assert proc.returncode == 2
    assert "does not exist" in proc.stderr and "Traceback" not in proc.stderr
    (tmp_path / "bad.parquet").write_text("nope")
    proc = _run("prepare", str(tmp_path), "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "bad.parquet: not a readable Parquet file" in proc.stderr
