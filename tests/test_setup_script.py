"""scripts/_setup.sh (sourced by scripts/demo and scripts/test) says what it does during the
minute or two pip takes on a fresh clone, on stderr (issue 27 item 7: ~85 s with no line of
ours). A stand-in interpreter records the calls, so no venv is built and nothing installed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STAND_IN = """#!/bin/sh
echo "$0 $* [warnings: $PYTHONWARNINGS]" >> "$CALLS"
case "$*" in
  --version) echo "Python 3.11.7" ;;
  "-m venv .venv") mkdir -p .venv/bin && cp "$0" .venv/bin/python ;;
esac
exit 0
"""


def _setup(tmp_path: Path) -> subprocess.CompletedProcess:
    (tmp_path / "scripts").mkdir(exist_ok=True)
    shutil.copy(REPO / "scripts" / "_setup.sh", tmp_path / "scripts")
    python = tmp_path / "python-stand-in"
    python.write_text(STAND_IN)
    python.chmod(0o755)
    env = {**os.environ, "PYTHON": str(python), "CALLS": str(tmp_path / "calls"),
           "EXTRAS": "test"}
    return subprocess.run(["bash", "-c", "source scripts/_setup.sh"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)


def test_a_fresh_setup_says_what_it_does_before_pip_runs(tmp_path):
    done = _setup(tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""  # `scripts/demo --quiet` keeps stdout empty
    lines = done.stderr.splitlines()
    assert lines[0].startswith("setting up .venv with Python 3.11.7: parquet_agent[test]"), lines
    assert "1-2 minutes" in lines[0] and lines[-1].startswith(".venv ready in "), lines
    calls = (tmp_path / "calls").read_text()
    assert "-m venv .venv" in calls and "-m pip install -q --disable-pip-version-check -e .[test]" in calls
    # setuptools' ten-line "Editable installation" box is silenced for the install of ours
    install = next(c for c in calls.splitlines() if "-e .[test]" in c)
    assert install.endswith("[warnings: ignore:Editable installation]")


def test_an_existing_venv_is_checked_not_rebuilt(tmp_path):
    _setup(tmp_path)
    (tmp_path / "calls").unlink()
    done = _setup(tmp_path)
    assert done.stderr.splitlines()[0].startswith("checking .venv: parquet_agent[test]")
    assert "-m venv" not in (tmp_path / "calls").read_text()
