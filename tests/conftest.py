"""Fixtures shared by every test folder.

`browser`: one headless Debian Chromium driven by Playwright's sync API for the whole session.
There must be exactly one: a second `sync_playwright()` started while the first is alive fails
("Playwright Sync API inside the asyncio loop"). Tests that need it skip cleanly where Chromium
is missing; `.ci/run` installs it, so CI never skips them.

`small_tmpfs`: a real 8 MiB tmpfs mounted for one test (a disk that fills up, a folder that can
be remounted read-only or made immutable); needs root, which CI has, and skips otherwise.

`public_tmp`, `nobody_python`: a folder user nobody can traverse and a Python that user nobody
may run (`runuser -u nobody`), seeing this checkout and its installed packages, for tests of
what a non-root user meets; they need root and `runuser`, and skip otherwise. Where nobody cannot
read the checkout (a clone in a private folder, mode 0700 as `mktemp -d` or /root gives), the
package is copied and the environment's packages hard-linked (copied across file systems) into a
folder nobody can read, once per session.

Under pytest-xdist with `--dist loadfile` (`scripts/test` runs two workers so) each test module
runs whole on one worker (its module-scoped fixtures are built once), and the Ray modules (marker
`ray`, only in tests/engine/test_ray_*.py) run on the same worker, one after the other: each
starts its own two-node cluster (tests/engine/conftest.py), and two at once on a 2-core machine
starve each other.
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


RAY_MODULES = "tests/engine/test_ray_"  # where every test marked `ray` lives


def pytest_collection_modifyitems(items):
    stray = [i.nodeid for i in items if i.get_closest_marker("ray") and not i.nodeid.startswith(RAY_MODULES)]
    if stray:  # the scheduler below finds the Ray tests by their path
        raise pytest.UsageError(f"tests marked `ray` belong in {RAY_MODULES}*.py: {stray}")


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, which may not be installed
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile`, with all Ray modules one unit of work. (Not `--dist loadgroup` with
    `xdist_group` marks: xdist 3.8 groups through a suffix it writes into node ids, which the
    node ids of pytest 9.2 no longer take, so the marks are silently ignored.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class RayOnOneWorker(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "ray" if nodeid.startswith(RAY_MODULES) else super()._split_scope(nodeid)

    return RayOnOneWorker(config, log)


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


@pytest.fixture(scope="session")
def nobody_sources() -> list[Path]:
    """Where user nobody finds this checkout's package and its installed packages: the checkout
    and the environment themselves when nobody can read them, else a copy nobody can read."""
    if os.geteuid() != 0 or shutil.which("runuser") is None:
        pytest.skip("needs root and runuser to run as user nobody")
    purelib = Path(sysconfig.get_paths()["purelib"])
    readable = [purelib, REPO]
    if all(_nobody_can_read(p) for p in (purelib / "duckdb" / "__init__.py",
                                         REPO / "parquet_agent" / "__init__.py")):
        yield readable
        return
    mirror = Path(tempfile.mkdtemp(prefix="nobody-checkout-"))
    try:
        yield _mirror_for_nobody(purelib, mirror)
    finally:
        shutil.rmtree(mirror, ignore_errors=True)


def _nobody_can_read(path: Path) -> bool:
    return subprocess.run(["runuser", "-u", "nobody", "--", "test", "-r", str(path)]).returncode == 0


def _mirror_for_nobody(purelib: Path, mirror: Path) -> list[Path]:
    """Copy the package, hard-link the installed packages (a hard link shares the file's mode, so
    nothing of the original tree changes; only the new folders are opened up)."""
    site, repo = mirror / "site-packages", mirror / "checkout"
    if subprocess.run(["cp", "-al", str(purelib), str(site)], capture_output=True).returncode != 0:
        shutil.rmtree(site, ignore_errors=True)  # another file system: copy instead
        subprocess.run(["cp", "-a", str(purelib), str(site)], check=True)
    shutil.copytree(REPO / "parquet_agent", repo / "parquet_agent",
                    ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(["find", str(mirror), "-type", "d", "-exec", "chmod", "a+rx", "{}", "+"], check=True)
    subprocess.run(["chmod", "-R", "a+r", str(repo)], check=True)
    if not _nobody_can_read(site / "duckdb" / "__init__.py"):
        pytest.skip(f"user nobody cannot read the installed packages of {purelib} even hard-linked "
                    "into a folder of its own (their files are not world-readable)")
    return [site, repo]


@pytest.fixture(scope="module")
def nobody_python(public_tmp, nobody_sources) -> Path:
    """A Python that user nobody can run, seeing this checkout and its installed packages."""
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
        (site / "parent.pth").write_text("".join(f"{p}\n" for p in nobody_sources))
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
