"""The audit is a kind of run on the run-folder core (issue 26 item 3): a hashed manifest with
`kind`, `verify` and `export` through the same commands as experiments, one `runs` listing with
a kind column, and every experiment-only path refusing an audit folder with a message."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from parquet_agent import RunStore
from parquet_agent.audit.run import AuditRun, open_audit
from parquet_agent.errors import UsageError
from parquet_agent.experiment.run import ExperimentRun, open_experiment
from parquet_agent.store import Run
from parquet_agent.store.manifest import manifest_hash
from tests.audit.conftest import unpack_audit, write_filings

OLD_AUDIT = Path(__file__).parent / "fixtures" / "audit-main-ce4e1e3"
EXPERIMENT = Path(__file__).parents[1] / "store" / "fixtures" / "run-v3"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "parquet_agent", *args], capture_output=True,
                          text=True, timeout=600)


@pytest.fixture(scope="module")
def audited(tmp_path_factory) -> Path:
    """A runs folder holding an experiment (the checked-in v3 run) and a fresh audit, made once
    per module (the audit command takes seconds); tests edit only their own copy (`runs`)."""
    base = tmp_path_factory.mktemp("run-kind")
    folder = base / "runs"
    shutil.copytree(EXPERIMENT, folder / "exp")
    data = write_filings(base / "data")
    done = _cli("audit", "run", str(data), "--run-dir", str(folder / "aud"), "--lineage",
                "filings", "--store", str(base / "f.sqlite"))
    assert done.returncode == 0, done.stderr
    return folder


@pytest.fixture
def runs(audited: Path, tmp_path: Path) -> Path:
    """This test's own copy of `audited`."""
    return shutil.copytree(audited, tmp_path / "runs")


def test_an_audit_manifest_is_hashed_and_says_its_kind(runs):
    manifest = json.loads((runs / "aud" / "manifest.json").read_text())
    assert manifest["kind"] == "audit" and manifest["schema_version"] == 2
    assert manifest["manifest_hash"] == manifest_hash(manifest)
    run = RunStore(runs).open("aud")
    assert isinstance(run, AuditRun) and run.kind == "audit" and run.case_ids() == []
    assert isinstance(RunStore(runs).open("exp"), ExperimentRun)


def test_runs_lists_both_kinds_with_a_kind_column(runs):
    listing = RunStore(runs).list().set_index("run_id")
    assert listing.loc["exp", "kind"] == "experiment" and listing.loc["aud", "kind"] == "audit"
    assert listing.loc["aud", "status"] == "complete" and listing.loc["aud", "name"] == "filings"
    shown = _cli("runs", str(runs))
    assert shown.returncode == 0, shown.stderr
    lines = {line.split()[0]: line.split() for line in shown.stdout.splitlines()[1:]}
    assert lines["aud"][1:3] == ["audit", "complete"] and lines["exp"][1] == "experiment"
    # counts print whole beside the other kind's blanks (not 2.0 / 12.0)
    assert lines["aud"][3].isdigit() and lines["aud"][4] == "-"
    assert lines["exp"][3] == "-" and lines["exp"][4].isdigit()


def test_verify_both_kinds_and_name_an_edited_audit_line(runs):
    for name in ("exp", "aud"):
        done = _cli("verify", str(runs / name))
        assert done.returncode == 0 and "verified" in done.stdout, done.stdout + done.stderr
    journal = runs / "aud" / "journal" / "audit.jsonl"
    lines = journal.read_text().splitlines(keepends=True)
    lines[2] = lines[2].replace('"PASS"', '"FAIL"', 1) if '"PASS"' in lines[2] else (
        lines[2].replace('"', "'", 1))
    journal.write_text("".join(lines))
    done = _cli("verify", str(runs / "aud"))
    assert done.returncode == 1 and "audit.jsonl" in done.stderr, done.stdout + done.stderr
    assert "Traceback" not in done.stderr


def test_verify_names_an_edited_audit_manifest(runs):
    path = runs / "aud" / "manifest.json"
    manifest = json.loads(path.read_text())
    path.write_text(json.dumps(manifest | {"lineage": "other"}))
    done = _cli("verify", str(runs / "aud"))
    assert done.returncode == 1 and "manifest" in done.stderr


def test_export_rebuilds_an_audits_report(runs):
    (runs / "aud" / "report.html").unlink()
    done = _cli("export", str(runs / "aud"))
    assert done.returncode == 0, done.stderr
    assert (runs / "aud" / "report.html").stat().st_size > 0 and "findings" in done.stdout


def test_experiment_paths_refuse_an_audit_with_a_message(runs):
    with pytest.raises(UsageError, match="holds an audit run, not an experiment"):
        open_experiment(runs / "aud")
    with pytest.raises(UsageError, match="holds an audit run"):
        open_experiment(runs / "exp").compare(runs / "aud")
    with pytest.raises(UsageError, match="holds an experiment run, not an audit"):
        open_audit(runs / "exp")
    judged = _cli("judge", str(runs / "aud"), "--judge", "rubric")
    assert judged.returncode == 2 and "not an experiment" in judged.stderr


def test_demo_resume_never_picks_an_audit(tmp_path):
    from parquet_agent.cli.experiment import _latest_unfinished

    runs = tmp_path / "runs"
    data = write_filings(tmp_path / "data")
    config = tmp_path / "audit.toml"
    config.write_text("[audit]\nmax_steps = 1\n")  # stops incomplete: unfinished
    stopped = _cli("audit", "run", str(data), "--run-dir", str(runs / "a"), "--lineage", "demo",
                   "--config", str(config))
    assert RunStore(runs).list().set_index("run_id").loc["a", "status"] != "complete", (
        stopped.stdout + stopped.stderr)
    with pytest.raises(UsageError, match="no unfinished demo run"):
        _latest_unfinished(runs, "demo")


def test_an_audit_folder_written_by_earlier_main_opens_verifies_and_exports(tmp_path):
    folder = unpack_audit(OLD_AUDIT, tmp_path)
    run = RunStore(tmp_path).open(folder.name)
    assert isinstance(run, AuditRun) and isinstance(run, Run)
    report = run.verify()
    assert report.ok, report.problems
    assert report.notes and "before audits were hashed" in report.notes[0]
    exported = run.export()
    assert (folder / "report.html").exists() and exported.findings
    row = run.listing_row()
    assert row["kind"] == "audit" and row["findings"] == len(exported.findings)


def test_notebooks_pick_the_newest_experiment_never_an_audit(runs):
    from parquet_agent.explore.notebook import latest_runs

    assert latest_runs(runs) == [runs / "exp"]  # the audit is newer, and not an experiment
    assert latest_runs(runs, kind="audit") == [runs / "aud"]
    with pytest.raises(UsageError, match="1 experiment run folder"):
        latest_runs(runs, 2)
