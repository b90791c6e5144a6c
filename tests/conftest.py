"""Fixtures shared by every test folder.

`browser`: one headless Debian Chromium driven by Playwright's sync API for the whole session.
There must be exactly one: a second `sync_playwright()` started while the first is alive fails
("Playwright Sync API inside the asyncio loop"). Tests that need it skip cleanly where Chromium
is missing; `.ci/run` installs it, so CI never skips them.

`small_tmpfs`: a real 8 MiB tmpfs mounted for one test (a disk that fills up, a folder that can
be remounted read-only or made immutable); needs root, which CI has, and skips otherwise.

`public_tmp`, `nobody_python`: a folder user nobody can traverse and a Python that user nobody
may run (`runuser -u nobody`), seeing this checkout and its installed packages, for tests of
what a non-root user meets; they need root and `runuser`, and skip otherwise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"Chromium not installed at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        yield b
        b.close()


@pytest.fixture
def small_tmpfs(tmp_path):
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root to mount a small tmpfs (CI runs as root)")
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    yield mount
    subprocess.run(["chattr", "-R", "-i", str(mount)], capture_output=True)
    subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture(scope="module")
def public_tmp() -> Path:
    """A folder user nobody can traverse (pytest's own tmp folders are 0700 as root)."""
    folder = Path(tempfile.mkdtemp(prefix="tools-nobody-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def nobody_python(public_tmp) -> Path:
    """A Python that user nobody can run, seeing this checkout and its installed packages."""
    if os.geteuid() != 0 or shutil.which("runuser") is None:
        pytest.skip("needs root and runuser to run as user nobody")
    folder = public_tmp
    base = Path(sys._base_executable)
    candidates = [base, Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")]
    for python in candidates:
        if not _nobody_can_run(python):
            continue
        venv = folder / "venv"
        subprocess.run([str(python), "-m", "venv", "--without-pip", str(venv)], check=True)
        site = Path(subprocess.run([str(venv / "bin" / "python"), "-c",
                                    "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   check=True, capture_output=True, text=True).stdout.strip())
        (site / "parent.pth").write_text(f"{sysconfig.get_paths()['purelib']}\n{REPO}\n")
        subprocess.run(["chmod", "-R", "a+rX", str(folder)], check=True)
        return venv / "bin" / "python"
    pytest.skip("no Python interpreter that user nobody may execute")


def _nobody_can_run(python: Path) -> bool:
    if not python.exists():
        return False
    done = subprocess.run(["runuser", "-u", "nobody", "--", str(python), "-c", "pass"],
                          capture_output=True)
    return done.returncode == 0


def fill_disk(folder) -> object:
    """Write `folder/filler` until the file system holding `folder` is full; its path."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as f:
        for block in (65536, 512):
            try:
                while True:
                    f.write(b"\0" * block)
            except OSError:
                pass
    return filler
