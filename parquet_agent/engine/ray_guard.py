"""What protects a Ray run: the cluster's token authentication and the nodes allowed its cases.

    auth = cluster_auth(ray)                      # after ray.init: "token" | "none" | "unknown"
    check_auth(engine_config, auth)               # EngineError unless "token" or opted out
    chosen, excluded = allowed(alive, engine_config)
    Protection(auth, allowed_nodes, excluded).to_dict()   # manifest `engine.protection`

How the cluster's auth is decided (`cluster_auth`): a driver whose own Ray runs without token
auth (`RAY_AUTH_MODE` is not `token`) and still connected proves the cluster lets anyone in:
"none". A driver in token mode proves nothing (a cluster without auth ignores the token), so a
short-lived probe process with no token at all (`RAY_AUTH_MODE=disabled`, no
`RAY_AUTH_TOKEN`/`RAY_AUTH_TOKEN_PATH`, an empty HOME so no `~/.ray/auth_token`) asks the
cluster's GCS for its cluster id: refused with Ray's `AuthenticationError` -> "token"; answered
-> "none"; anything else (unreachable, a timeout) -> "unknown", which is refused like "none".
Limits: the probe asks the GCS only (each raylet is assumed to run with the cluster's mode, as
Ray requires); it checks the moment the run starts, not later; it cannot tell a strong token
from a weak one, nor whether the token file is readable by other users.

Allowed nodes (`allowed`): a node is allowed when its name (`ray start --node-name`) or its id
is listed. A name is claimed by the node itself, so two alive nodes claiming one allowed name
are an error (one of them may be an impostor that holds the token). Without the list every
alive node is used and the protection carries a warning: any node that joins gets cases and
keys.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from parquet_agent.engine.config import EngineConfig
from parquet_agent.errors import EngineError

PROBE_TIMEOUT_S = 60.0
NO_LIST_WARNING = ("[engine] allowed_nodes is not set: every alive node of the cluster gets "
                   "cases and the models' API keys, including any node that joins it")
_TOKEN_VARS = ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")

# run with no token: prints "refused" (the GCS demands one), "open", or "error: ..."
_PROBE = """
import sys
from ray._raylet import GcsClient
try:
    GcsClient(address=sys.argv[1]).internal_kv_get(b"parquet-agent-probe", None, timeout=10)
except Exception as exc:
    print("refused" if type(exc).__name__ == "AuthenticationError" else f"error: {exc}"[:300])
else:
    print("open")
"""


@dataclass(frozen=True)
class Protection:
    """What protected a Ray run (the manifest's `engine.protection`)."""

    auth: str  # "token" | "none" | "unknown"
    allowed_nodes: tuple[str, ...] | None  # as configured; None: every alive node
    used: tuple[str, ...]  # "name/id" of each node given cases
    excluded: tuple[str, ...]  # "name/id" of each alive node not allowed

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "auth": self.auth,
            "allowed_nodes": list(self.allowed_nodes) if self.allowed_nodes is not None else None,
            "used_nodes": list(self.used), "excluded_nodes": list(self.excluded)}
        if self.allowed_nodes is None:
            out["warning"] = NO_LIST_WARNING
        if self.auth != "token":
            out["warning_auth"] = ("the cluster does not enforce token authentication "
                                   "([engine] allow_unauthenticated = true)")
        return out


def driver_mode() -> str:
    """This process's Ray authentication mode: "token" or "disabled" (process-wide, read from
    RAY_AUTH_MODE when Ray's config was loaded)."""
    raylet: Any = importlib.import_module("ray._raylet")  # compiled: no stubs
    mode = raylet.get_authentication_mode()
    return "token" if mode == raylet.AuthenticationMode.TOKEN else "disabled"


def probe_gcs(address: str, timeout: float = PROBE_TIMEOUT_S) -> str:
    """Ask the GCS at `address` for a key with no token: "token" | "none" | "unknown"."""
    env = {k: v for k, v in os.environ.items() if k not in _TOKEN_VARS}
    with tempfile.TemporaryDirectory(prefix="pa-ray-probe-") as home:
        env.update(RAY_AUTH_MODE="disabled", HOME=home, RAY_USAGE_STATS_ENABLED="0")
        try:
            out = subprocess.run([sys.executable, "-c", _PROBE, address], env=env, check=False,
                                 capture_output=True, text=True, timeout=timeout, cwd=home)
        except subprocess.TimeoutExpired:
            return "unknown"
    answer = out.stdout.strip().splitlines()[-1:] or [""]
    return {"refused": "token", "open": "none"}.get(answer[0], "unknown")


def cluster_auth(ray: Any) -> str:
    """Whether the connected cluster enforces token authentication (see the module doc)."""
    if driver_mode() != "token":
        return "none"  # we connected without a token: so can anyone
    try:
        address = ray.get_runtime_context().gcs_address
    except Exception:  # noqa: BLE001 - e.g. a Ray Client driver: not checked, so not trusted
        return "unknown"
    return probe_gcs(address) if address else "unknown"


def check_auth(ec: EngineConfig, auth: str) -> None:
    """Refuse a cluster that does not enforce token auth unless the config opts out."""
    if auth == "token" or ec.allow_unauthenticated:
        return
    what = ("does not enforce token authentication" if auth == "none" else
            "could not be checked for token authentication (the probe got no clear answer)")
    raise EngineError(
        f"the Ray cluster at {ec.address!r} {what}: any user who can reach its ports can join "
        "as a node, receive cases with the models' API keys, and run code as the cluster's "
        "user. Restart it with token authentication (RAY_AUTH_MODE=token and "
        "RAY_AUTH_TOKEN_PATH=<a file only its owner can read>, on the head, every node and "
        "this driver; see docs/ray.md), or set [engine] allow_unauthenticated = true to run "
        "on it anyway")


def allowed(alive: Sequence[Mapping[str, Any]],
            ec: EngineConfig) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """The alive nodes this run may use, and those it must not (named in the manifest)."""
    names: tuple[str, ...] | None = ec.allowed_nodes
    if names is None:
        return list(alive), []
    wanted = set(names)
    chosen = [n for n in alive if n.get("NodeName") in wanted or n["NodeID"] in wanted]
    excluded = [n for n in alive if n not in chosen]
    claims: dict[str, list[str]] = {}
    for n in chosen:
        if n.get("NodeName") in wanted and n["NodeID"] not in wanted:
            claims.setdefault(n["NodeName"], []).append(n["NodeID"])
    twice = {name: ids for name, ids in claims.items() if len(ids) > 1}
    if twice:
        said = "; ".join(f"{name!r}: {', '.join(ids)}" for name, ids in sorted(twice.items()))
        raise EngineError(f"[engine] allowed_nodes: more than one alive node claims the name "
                          f"({said}); a node names itself, so one may be an impostor: list "
                          "the node ids you trust instead")
    if not chosen:
        seen = ", ".join(label(n) for n in alive) or "none"
        raise EngineError(f"[engine] allowed_nodes = {list(names)}: no alive node of the Ray "
                          f"cluster at {ec.address!r} is named there (alive: {seen})")
    return chosen, excluded


def label(node: Mapping[str, Any]) -> str:
    return f"{node.get('NodeName') or node.get('NodeManagerAddress')}/{node['NodeID']}"
