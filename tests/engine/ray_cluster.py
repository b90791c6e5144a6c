"""A real Ray cluster on this machine for tests and benchmarks: a head and N-1 more node
processes (`ray start --head --block`, `ray start --address ... --block`), each with 1 CPU and
a small object store, under a private temp dir; `stop()` ends exactly the processes it started
(the `ray start` processes and every process under that temp dir), even after a failure.

With `auth=True` (the default, as docs/ray.md sets a cluster up) every node runs with Ray's
token authentication: RAY_AUTH_MODE=token and RAY_AUTH_TOKEN_PATH naming a token file only its
owner can read, in the cluster's private temp dir. `as_driver()` gives this process the same
(a driver must hold the token to connect); `auth=False` starts a cluster anyone can join."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

RAY = str(Path(sys.executable).with_name("ray"))
OBJECT_STORE_BYTES = 80 * 1024 * 1024
START_ATTEMPTS = 3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalRayCluster:
    def __init__(self, nodes: int = 2, cpus: int = 1, names: list[str] | None = None,
                 auth: bool = True):
        self.nodes, self.cpus, self.auth = nodes, cpus, auth
        self.names = names or [f"node-{i}" for i in range(nodes)]
        # Ray's unix sockets live under the temp dir: keep its path short
        self.temp = tempfile.mkdtemp(prefix="rayt", dir="/tmp")
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen] = []
        self.token_path = Path(self.temp) / "auth_token"
        if auth:  # created 0600: only its owner reads it
            fd = os.open(self.token_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32))

    def client_env(self) -> dict[str, str]:
        """The variables a process needs to join or drive this cluster."""
        if self.auth:
            return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(self.token_path)}
        return {"RAY_AUTH_MODE": "disabled"}

    def env(self) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items()
                if k not in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")}
        # Ray (2.60) drains a node for up to 30 s on SIGTERM before it stops (for Serve
        # replicas); our nodes serve nothing, and the wait made every stop() take 20-30 s
        return base | self.client_env() | {"RAY_USAGE_STATS_ENABLED": "0",
                                           "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0"}

    @contextmanager
    def as_driver(self) -> Iterator[None]:
        """This process (and the processes it starts) drives the cluster with its token."""
        saved = {k: os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN",
                                                "RAY_AUTH_TOKEN_PATH")}
        os.environ.pop("RAY_AUTH_TOKEN", None)
        os.environ.pop("RAY_AUTH_TOKEN_PATH", None)
        os.environ.update(self.client_env())
        _reload_ray_auth()
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            _reload_ray_auth()

    def _ports(self) -> list[str]:
        return ["--dashboard-agent-listen-port", str(free_port()),
                "--dashboard-agent-grpc-port", str(free_port()),
                "--runtime-env-agent-port", str(free_port()),
                "--metrics-export-port", str(free_port()),
                "--node-manager-port", str(free_port()),
                "--object-manager-port", str(free_port())]

    def start(self) -> "LocalRayCluster":
        common = ["--num-cpus", str(self.cpus), "--object-store-memory", str(OBJECT_STORE_BYTES),
                  "--disable-usage-stats", "--block", "--node-ip-address", "127.0.0.1"]
        try:
            self._start_node(1, [RAY, "start", "--head", "--port", str(self.port), "--temp-dir",
                                 self.temp, "--include-dashboard", "false", "--node-name",
                                 self.names[0], "--dashboard-port", str(free_port())], common)
            for i, name in enumerate(self.names[1:], 2):
                self._start_node(i, [RAY, "start", "--address", self.address, "--node-name",
                                     name], common)
        except BaseException:
            self.stop()
            raise
        return self

    def _start_node(self, alive: int, argv: list[str], common: list[str]) -> None:
        """Start one node; retried: Ray gives a raylet 30 s to register, too little under load."""
        env = self.env()
        name = argv[argv.index("--node-name") + 1]
        for attempt in range(START_ATTEMPTS):
            proc = self._spawn([*argv, *self._ports(), *common], env)
            try:
                self.wait_for(alive, proc)
                return
            except RuntimeError:
                if attempt == START_ATTEMPTS - 1:
                    raise
                # a raylet that came up too late (for the head: its GCS too)
                for leftover in self.node_processes(name) if alive > 1 else self._ours():
                    leftover.kill()

    def _spawn(self, argv: list[str], env: dict) -> subprocess.Popen:
        log = open(Path(self.temp) / f"start-{len(self.procs)}.log", "wb")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
        self.procs.append(proc)
        return proc

    def wait_for(self, n: int, proc: subprocess.Popen, timeout: float = 180.0) -> None:
        """Until `n` nodes are alive (asked from a short-lived driver process)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = subprocess.run([sys.executable, "-c", _ALIVE, self.address],
                                 capture_output=True, text=True, env=self.env())
            if out.returncode == 0 and out.stdout.strip().isdigit() and int(out.stdout) >= n:
                return
            if proc.poll() is not None:
                raise RuntimeError(f"ray start exited {proc.returncode}: "
                                   + self.logs()[-3000:])
            time.sleep(1.0)
        raise TimeoutError(f"{n} Ray node(s) not alive after {timeout}s: " + self.logs()[-3000:])

    def logs(self) -> str:
        return "".join(p.read_text(errors="replace") for p in sorted(Path(self.temp).glob("start-*.log")))

    def node_processes(self, name: str) -> list[psutil.Process]:
        """The raylet of node `name` (its workers are its children)."""
        out = []
        for proc in psutil.process_iter(["cmdline"]):
            cmd = " ".join(proc.info["cmdline"] or [])
            if "raylet" in cmd and self.temp in cmd and f"--node-name={name}" in cmd:
                out.append(proc)
        return out

    def _ours(self) -> list[psutil.Process]:
        """Every process started for this cluster (their command lines name its temp dir)."""
        return [proc for proc in psutil.process_iter(["cmdline"])
                if self.temp in " ".join(proc.info["cmdline"] or [])]

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
        # whatever outlived its `ray start` (workers re-parented to init): ours by temp dir
        for proc in self._ours():
            try:
                proc.kill()
            except psutil.Error:
                pass
        shutil.rmtree(self.temp, ignore_errors=True)

    def __enter__(self) -> "LocalRayCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _reload_ray_auth() -> None:
    """Ray reads RAY_AUTH_MODE and the token once per process: make it read them again (as
    Ray itself does when `ray.init` turns token auth on)."""
    from ray._raylet import AuthenticationTokenLoader, Config

    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


_ALIVE = """
import sys, ray
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
print(sum(1 for n in ray.nodes() if n["Alive"]))
"""
