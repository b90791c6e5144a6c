"""`parquet-agent lab` started as a user starts it, with Jupyter's config, runtime, settings and
workspaces kept in a temporary `home` (nothing of the developer's home leaks in or out)."""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def isolated_env(home: Path) -> dict[str, str]:
    """Jupyter's own folders under `home`; no news or update toasts."""
    settings = home / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}')
    return {**os.environ, "JUPYTER_CONFIG_DIR": str(home / "config"),
            "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
            "JUPYTER_DATA_DIR": str(home / "userdata"),
            "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
            "JUPYTERLAB_WORKSPACES_DIR": str(home / "ws")}


@contextlib.contextmanager
def parquet_agent_lab(root: Path, home: Path, env: dict[str, str] | None = None, *,
                      python: Path | None = None, user: str | None = None
                      ) -> Iterator[tuple[str, str, Path]]:
    """`python -m parquet_agent lab` in `root` (as `user` with `python`, default this one)
    until the server answers; yields (url, token, log file holding its stderr). Stopped with
    SIGTERM at the end: the command execs Lab, so the signal reaches JupyterLab itself."""
    port, token = _free_port(), secrets.token_hex(16)
    log_path = home / "lab.log"
    with open(log_path, "wb") as log:
        server = subprocess.Popen(
            [str(python or sys.executable), "-m", "parquet_agent", "lab", "--", "--no-browser",
             "--ip=127.0.0.1", f"--port={port}", f"--IdentityProvider.token={token}",
             "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
             "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
            cwd=root, env=env or isolated_env(home), stdout=subprocess.DEVNULL, stderr=log,
            user=user, group=user and "nogroup", extra_groups=[] if user else None)
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(600):
                try:
                    urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=1)
                    break
                except OSError:
                    assert server.poll() is None, log_path.read_text()
                    time.sleep(0.1)
            yield url, token, log_path
        finally:
            server.terminate()
            server.wait(timeout=30)
