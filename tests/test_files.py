"""files.claim_folder: a work folder is new, empty or its owner's own; nothing else is deleted
(issue 27 item 4), in the library and in the bench scripts that take a work folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from parquet_agent.errors import UsageError
from parquet_agent.files import OWNER_MARK, claim_folder

ROOT = Path(__file__).resolve().parents[1]


def test_claim_folder_deletes_nothing_it_did_not_make(tmp_path):
    """issue 27 item 4: a work folder is new, empty or the owner's own; a folder of anything
    else (an earlier experiment run) is refused with a message and left as it was."""
    owner = "notebooks/audit_dataset.ipynb"
    run = tmp_path / "runs" / "2026-demo"
    run.mkdir(parents=True)
    (run / "manifest.json").write_text("{}")
    (run / "cases").mkdir()
    with pytest.raises(UsageError, match=r"not empty \(cases, manifest.json\) and was not made "
                       r"by notebooks/audit_dataset.ipynb: pass a new or empty folder \(nothing"):
        claim_folder(run, owner, clear=("cases", "manifest.json"))
    assert sorted(p.name for p in run.iterdir()) == ["cases", "manifest.json"]
    (run / OWNER_MARK).write_text('{"owner": "someone else"}')
    with pytest.raises(UsageError, match="not empty"):
        claim_folder(run, owner, clear=("cases",))
    assert (run / "cases").is_dir()

    work = claim_folder(tmp_path / "new" / "work", owner, clear=("planted", "findings.sqlite"))
    assert [p.name for p in work.iterdir()] == [OWNER_MARK]
    (work / "planted").mkdir()
    (work / "planted" / "a.parquet").write_text("")
    for name in ("findings.sqlite", "findings.sqlite-wal", "notes.txt"):
        (work / name).write_text("")
    assert claim_folder(work, owner, clear=("planted", "findings.sqlite")) == work
    assert sorted(p.name for p in work.iterdir()) == [OWNER_MARK, "notes.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert claim_folder(empty, owner) == empty and (empty / OWNER_MARK).is_file()
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match="is not a folder"):
        claim_folder(tmp_path / "file", owner)


@pytest.mark.parametrize("script, args", [
    ("bench_audit.py", ["--work"]),
    ("bench_discover.py", ["--work"]),
    ("bench_corpus.py", ["--corpus", "data/none", "--work"]),
])
def test_a_bench_given_an_earlier_run_stops_and_deletes_nothing(tmp_path, script, args):
    """bench_audit and bench_discover removed their --work with shutil.rmtree, bench_corpus
    its prepared/: given an experiment run's folder they now stop before touching it."""
    run = tmp_path / "runs" / "2026-demo"
    (run / "cases").mkdir(parents=True)
    (run / "manifest.json").write_text("{}")
    done = subprocess.run([sys.executable, str(ROOT / "bench" / script), *args, str(run)],
                          check=False, cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0
    assert (f"UsageError: {run} is not empty (cases, manifest.json) and was not made by "
            f"bench/{script}: pass a new or empty folder (nothing there was changed)"
            in done.stderr), done.stderr
    assert sorted(p.name for p in run.iterdir()) == ["cases", "manifest.json"]
