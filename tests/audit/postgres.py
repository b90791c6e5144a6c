"""A real PostgreSQL server for the findings store tests: initdb in a temp dir, a free port.

As root, the cluster is created and run as uid 65534 (nobody) (PostgreSQL refuses to run as root) in a
world-traversable temp dir outside pytest's 0700 tmp_path. `start_postgres()` yields a
connection URL and stops the server (and removes its files) afterwards. Where no PostgreSQL
binaries or psycopg are installed, the tests skip and say how to install them (`.ci/run` does).
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

NOBODY = 65534


def _bin(name: str) -> str | None:
    found = shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))), None)
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def start_postgres():
    initdb, pg_ctl = _bin("initdb"), _bin("pg_ctl")
    if not initdb or not pg_ctl:
        pytest.skip("PostgreSQL is not installed (apt-get install -y postgresql; .ci/run does)")
    pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install 'psycopg[binary]')")
    root = Path(tempfile.mkdtemp(prefix="pa-pg-"))
    os.chmod(root, 0o755)
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    as_user: dict = {}
    if os.geteuid() == 0:
        os.chown(root, NOBODY, NOBODY)
        os.chown(sock, NOBODY, NOBODY)
        as_user = {"user": NOBODY, "group": NOBODY, "extra_groups": []}
    port = _free_port()
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(root)}
    try:
        subprocess.run([initdb, "-D", str(data), "-U", "postgres", "--auth=trust",
                        "-E", "UTF8", "--no-sync"], check=True, capture_output=True, env=env, cwd=root, **as_user)
        subprocess.run([pg_ctl, "-D", str(data), "-w", "-t", "60", "-l", str(root / "log"),
                        "-o", f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off",
                        "start"], check=True, capture_output=True, env=env, cwd=root, **as_user)
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run([pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"],
                           capture_output=True, env=env, cwd=root, **as_user)
        shutil.rmtree(root, ignore_errors=True)
