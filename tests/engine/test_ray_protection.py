"""What protects a Ray run (issue 24 item 1), on real local Ray clusters.

A head and a second node started with token authentication (tests/engine/ray_cluster.py: the
token in a 0600 file): another uid (`nobody`) cannot read the token and its `ray start
--address ...` without it is refused; the engine refuses a cluster that does not enforce token
auth unless `[engine] allow_unauthenticated = true` (and then records `auth: "none"`); with
`[engine] allowed_nodes`, an authenticated node not named gets no actor, no case and no key,
and is recorded as excluded in the manifest.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import psutil
import pytest

from parquet_agent.errors import EngineError
from parquet_agent.experiment.runner import Experiment
from parquet_agent.models.fakes import openai_server
from tests.engine.grid import GridScript, harness_answers, write_config

pytestmark = pytest.mark.ray
pytest.importorskip("ray", reason="Ray is not installed here: pip install 'parquet_agent[ray]' "
                                  "(.ci/run installs it, so CI never skips)")

from tests.engine.ray_cluster import LocalRayCluster

ENV = {"FAKE_OPENAI_KEY": "sk-test-protected"}
GRID = 12


def _engine(address: str, **extra: object) -> str:
    lines = ['kind = "ray"', f'address = "{address}"', "case_workers_per_node = 2"]
    for key, value in extra.items():
        if isinstance(value, bool):
            lines.append(f"{key} = {'true' if value else 'false'}")
        else:
            lines.append(f"{key} = {value!r}".replace("'", '"'))
    return "[engine]\n" + "\n".join(lines) + "\n"


def _other_uid_python() -> list[str]:
    """A Python with Ray that user `nobody` can run (this venv's, else the system's of the same
    version with this venv's packages on PYTHONPATH); skips when there is none."""
    if os.geteuid() != 0 or shutil.which("runuser") is None:
        pytest.skip("acting as another uid needs root and runuser")
    paths = os.pathsep.join(dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib",
                                                                             "platlib")))
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for python in (sys.executable, f"/usr/bin/{version}", f"/usr/local/bin/{version}"):
        cmd = ["runuser", "-u", "nobody", "--", "env", "-i", "PATH=/usr/bin:/bin",
               f"PYTHONPATH={paths}", python]
        probe = subprocess.run([*cmd, "-c", "import ray"], check=False, capture_output=True, timeout=60)
        if probe.returncode == 0:
            return cmd
    pytest.skip("user nobody can run no Python with this Ray (the venv's is under a private "
                "home and no system Python of the same version)")


def _alive(cluster: LocalRayCluster) -> list[str]:
    script = ("import sys, ray\nray.init(address=sys.argv[1], logging_level='ERROR', "
              "log_to_driver=False)\nprint(','.join(n['NodeName'] for n in ray.nodes() "
              "if n['Alive']))")
    out = subprocess.run([sys.executable, "-c", script, cluster.address], check=False, capture_output=True,
                         text=True, env=cluster.env(), timeout=120)
    return out.stdout.strip().split(",")


def test_another_uid_can_neither_read_the_token_nor_join_without_it(cluster):
    python = _other_uid_python()
    assert cluster.token_path.stat().st_mode & 0o077 == 0, "the token file is readable by others"
    read = subprocess.run(["runuser", "-u", "nobody", "--", "cat", str(cluster.token_path)],
                          check=False, capture_output=True, text=True)
    assert read.returncode != 0 and read.stdout == ""
    home = Path(tempfile.mkdtemp(prefix="raytn", dir="/tmp"))
    os.chown(home, pwd.getpwnam("nobody").pw_uid, -1)
    join = ("import sys\nfrom ray.scripts.scripts import main\nsys.argv = ['ray', 'start', "
            f"'--address', {cluster.address!r}, '--node-name', 'intruder', '--temp-dir', "
            f"{str(home / 't')!r}, '--num-cpus', '1', '--disable-usage-stats']\nmain()")
    try:
        out = subprocess.run([*python[:6], f"HOME={home}", "RAY_USAGE_STATS_ENABLED=0",
                              "RAY_gcs_server_port_wait_time_s=3", *python[6:], "-c", join],
                             check=False, capture_output=True, text=True, timeout=180)
        said = out.stdout + out.stderr
        assert out.returncode != 0, said[-3000:]
        assert "InvalidAuthToken" in said or "AuthenticationError" in said, said[-3000:]
        assert "intruder" not in _alive(cluster)
    finally:
        for proc in psutil.process_iter(["cmdline"]):
            if str(home) in " ".join(proc.info["cmdline"] or []):
                proc.kill()
        shutil.rmtree(home, ignore_errors=True)


def test_a_cluster_without_token_auth_is_refused_unless_the_config_says_so(cluster, corpus,
                                                                           tmp_path):
    """Refused whether the driver holds a token (the probe finds the cluster open) or not (it
    connected without one); with the opt-in, a driver without token mode runs there."""
    script = GridScript(harness_answers(corpus))
    with LocalRayCluster(1, names=["open-0"], auth=False) as open_cluster, \
            openai_server(script) as server:
        config = write_config(tmp_path / "open.toml", corpus, tmp_path / "runs", server.url,
                              engine=_engine(open_cluster.address))
        messages = []
        with pytest.raises(EngineError) as err:  # this driver holds the other cluster's token
            Experiment.from_toml(config, env=ENV, progress=False).run(tmp_path / "runs" / "no")
        messages.append(str(err.value))
        with open_cluster.as_driver():  # a driver without token mode
            with pytest.raises(EngineError) as err:
                Experiment.from_toml(config, env=ENV, progress=False).run(tmp_path / "runs" / "n2")
            messages.append(str(err.value))
            opted = write_config(tmp_path / "opted.toml", corpus, tmp_path / "runs", server.url,
                                 engine=_engine(open_cluster.address, allow_unauthenticated=True))
            run = Experiment.from_toml(opted, env=ENV, progress=False).run(
                tmp_path / "runs" / "yes")
    for message in messages:
        assert "does not enforce token authentication" in message
        assert "RAY_AUTH_MODE=token" in message and "allow_unauthenticated = true" in message
    assert run.verify().ok and len(run.completed_cases()) == GRID
    protection = run.manifest["engine"]["protection"]
    assert protection["auth"] == "none" and "warning_auth" in protection
    assert protection["allowed_nodes"] is None and "warning" in protection


def test_a_node_not_allowed_gets_no_case_and_no_key(cluster, corpus, tmp_path):
    script = GridScript(harness_answers(corpus))
    with openai_server(script) as server:
        config = write_config(tmp_path / "allowed.toml", corpus, tmp_path / "runs", server.url,
                              engine=_engine(cluster.address, allowed_nodes=["node-0"]))
        run = Experiment.from_toml(config, env=ENV, progress=False).run(tmp_path / "runs" / "a")
    assert run.verify().ok
    started = {e.data.get("node") for evs in run.all_events().values() for e in evs
               if e.event == "case_started"}
    assert started == {"node-0"} and len(run.completed_cases()) == GRID
    engine = run.manifest["engine"]
    assert [n["name"] for n in engine["nodes"]] == ["node-0"]
    protection = engine["protection"]
    assert protection["auth"] == "token" and protection["allowed_nodes"] == ["node-0"]
    assert [x.split("/")[0] for x in protection["excluded_nodes"]] == ["node-1"]
    assert [x.split("/")[0] for x in protection["used_nodes"]] == ["node-0"]
    assert "warning" not in protection and "warning_auth" not in protection
    # the cluster's own record: no NodeWorker (the only holder of keys) was ever placed on node-1
    node_1 = protection["excluded_nodes"][0].split("/")[1]
    placed = _actor_nodes(cluster)
    assert placed.get("NodeWorker") and node_1 not in placed["NodeWorker"], placed


def _actor_nodes(cluster: LocalRayCluster) -> dict[str, set[str]]:
    """Each actor class the cluster ever ran -> the node ids it was placed on (GCS's table)."""
    script = ("import sys, json, ray\nfrom ray._private import state\n"
              "ray.init(address=sys.argv[1], logging_level='ERROR', log_to_driver=False)\n"
              "out = {}\nfor a in state.state.actor_table(None).values():\n"
              "    out.setdefault(a['ActorClassName'], []).append(a['Address']['NodeID'])\n"
              "print(json.dumps(out))")
    out = subprocess.run([sys.executable, "-c", script, cluster.address], check=False, capture_output=True,
                         text=True, env=cluster.env(), timeout=120)
    return {k: set(v) for k, v in json.loads(out.stdout.strip().splitlines()[-1]).items()}


def test_allowed_nodes_naming_no_alive_node_is_refused(cluster, corpus, tmp_path):
    with openai_server(GridScript(harness_answers(corpus))) as server:
        config = write_config(tmp_path / "none.toml", corpus, tmp_path / "runs", server.url,
                              engine=_engine(cluster.address, allowed_nodes=["gpu-z"]))
        with pytest.raises(EngineError) as err:
            Experiment.from_toml(config, env=ENV, progress=False).run(tmp_path / "runs" / "z")
    assert "gpu-z" in str(err.value) and "node-0/" in str(err.value)
