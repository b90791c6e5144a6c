"""`parquet-agent audit run|inspect|diff|plant|score` as a user types them."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from tests.audit.conftest import write_filings


def _cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "parquet_agent", "audit", *args],
                          capture_output=True, text=True, check=check, timeout=600)


def test_the_audit_commands(tmp_path):
    clean = write_filings(tmp_path / "clean")
    planted = _cli("plant", str(clean), "--out", str(tmp_path / "dirty"), "--seed", "2",
                   "--rate", "0.05").stdout
    assert "char_count_mismatch" in planted and "planted-defects.json" in planted
    store = str(tmp_path / "f.sqlite")
    first = _cli("run", str(clean), "--run-dir", str(tmp_path / "a"), "--lineage", "filings",
                 "--store", store).stdout
    assert "complete" in first and "0 findings" in first
    assert f"report: {tmp_path / 'a' / 'report.html'}" in first  # issue 27 item 7
    report = json.loads(_cli("run", str(tmp_path / "dirty"), "--run-dir", str(tmp_path / "b"),
                             "--lineage", "filings", "--store", store, "--json").stdout)
    assert report["schema_version"] == 1 and report["status"] == "complete"
    assert report["previous_run"] == "a" and len(report["diff"]["new"]) == len(report["findings"])
    key = report["findings"][0]["key"]
    one = _cli("inspect", str(tmp_path / "b"), "--finding", key).stdout
    assert key in one and "count SQL:" in one and "gate evaluations:" in one
    full = _cli("inspect", str(tmp_path / "b"), "--full").stdout
    assert "evaluations:" in full and re.search(r"finding\s+rules\s+PASS", full)
    diff = _cli("diff", str(tmp_path / "a"), str(tmp_path / "b")).stdout
    assert f"new: {len(report['findings'])}" in diff and "measured" in diff
    scored = _cli("score", str(tmp_path / "b"), "--truth", str(tmp_path / "dirty"),
                  "--clean", str(tmp_path / "a")).stdout
    assert "overall" in scored and "precision" in scored
    missing = _cli("inspect", str(tmp_path / "nope"), check=False)
    assert missing.returncode == 2 and "not an audit run folder" in missing.stderr
    # the old alias moved aside: case_audit is `case-audit` (and python -m parquet_agent.case_audit)
    help_text = subprocess.run([sys.executable, "-m", "parquet_agent", "case-audit", "--help"],
                               capture_output=True, text=True, check=True).stdout
    assert "--question" in help_text
