"""The Ray engine: one experiment's cases across a Ray cluster's nodes, one run folder.

    [engine]
    kind = "ray"
    address = "auto"          # an existing cluster (`ray start --head` ...); never starts one

`RayEngine.start` connects to the cluster, starts one `NodeWorker` actor per chosen node (pinned
there, `max_concurrency = case_workers_per_node`), and waits for each to check its corpus against
the run's snapshot. Refused nodes are recorded (`describe()["refused"]`) and never used; no usable
node is an `EngineError` naming each node and why.

`run_cases` is the case loop: it keeps up to `case_workers_per_node` cases in flight per node,
calls `before_case` before each dispatch and `after_case` after each result, on the driver (as
the local engine does: the corpus check and the circuit breaker), and serves every
journal append and raw record of the nodes on the driver (`ray_store.DriverStore`). When a node's
actor or worker process dies mid-case, the case's lease is withdrawn (its late writes are refused),
`case_failed` (`NodeLost`, retryable) is journaled, and the case is given to another node, where
it replays its saved turns and tool results from the journal, and a response already durable in
the driver's raw store but not yet journaled from that record (`store.unclaimed`): no successful
model call is made twice. A node lost just after its case's `case_finished` was durable has
finished that case: it counts as done (at the cost its journal recorded), not lost. A lost actor
is restarted by Ray once; if it comes back (its corpus checked again) it takes cases again,
otherwise it is dropped.

Before any node is used, the engine checks what protects the run (`engine.ray_guard`): a cluster
that does not enforce Ray's token authentication is refused unless `[engine]
allow_unauthenticated = true`, and only the nodes `[engine] allowed_nodes` names (all alive nodes
when it is absent, with a warning) get an actor, cases and credentials; `describe()["protection"]`
records both in the manifest.

What stays on the driver: the run folder (manifest, journals, raw store, ledger, exports), the
health checks, the corpus drift checks and the progress bar. Nodes get the config, questions and
scopes (a `CasePlan`), and only the credentials the configured models name, in memory.
"""

from __future__ import annotations

import os
import sys
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from parquet_agent.engine import ray_guard
from parquet_agent.engine.ray_guard import Protection
from parquet_agent.engine.ray_node import NodeWorker
from parquet_agent.engine.ray_store import DriverStore, Mailbox, summarise_ms
from parquet_agent.errors import EngineError
from parquet_agent.analysis.fold import fold_case
from parquet_agent.transcript import CaseFailed

START_TIMEOUT_S = 300.0  # a node hashes its whole corpus before it says it is ready
PROBE_TIMEOUT_S = 60.0


@dataclass
class _Node:
    """The driver's view of one node actor."""

    actor: Any
    info: dict[str, Any]
    capacity: int
    busy: int = 0
    state: str = "ready"  # ready | probing | lost
    done: int = 0
    case_ms: float = 0.0
    write_ms: list[float] = field(default_factory=list)
    lost: int = 0
    peak_pss: int = 0  # bytes: the node actor's process tree, as it last reported it

    @property
    def label(self) -> str:
        return f"{self.info['name']}/{self.info['node_id'][:8]}"


def credentials(config: Any, env: Mapping[str, str] | None) -> dict[str, str]:
    """Only the variables the configured models and judge name (never the whole env)."""
    source = os.environ if env is None else env
    names = {s.api_key_env for s in (*config.models, config.judge) if s.api_key_env}
    return {n: source[n] for n in sorted(names) if n in source}


class RayEngine:
    def __init__(self, ray: Any, config: Any, nodes: list[_Node], refused: list[dict],
                 mailbox: Any, env: Mapping[str, str] | None, started_ray: bool,
                 protection: Protection):
        self.ray, self.config, self.nodes, self.refused = ray, config, nodes, refused
        self.mailbox, self.env, self.started_ray = mailbox, env, started_ray
        self.protection = protection
        self._store_figures: dict[str, Any] = {}
        self._wall_s = 0.0

    # -- start ----------------------------------------------------------------------------------

    @classmethod
    def start(cls, config: Any, snapshot: Any, *, env: Mapping[str, str] | None = None) -> RayEngine:
        try:
            import ray
        except ModuleNotFoundError:
            raise EngineError("[engine] kind = \"ray\" needs Ray on this machine and every node: "
                              "pip install 'parquet_agent[ray]'") from None
        ec = config.engine
        started = not ray.is_initialized()
        if started:
            try:
                ray.init(address=ec.address, logging_level="WARNING", log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise EngineError(f"no Ray cluster at address {ec.address!r} ({exc}); start one "
                                  "with `ray start --head` (see docs/ray.md)") from exc
        try:
            auth = ray_guard.cluster_auth(ray)
            ray_guard.check_auth(ec, auth)
            return cls._start_nodes(ray, config, snapshot, env, started, auth)
        except BaseException:
            if started:
                ray.shutdown()
            raise

    @classmethod
    def _start_nodes(cls, ray: Any, config: Any, snapshot: Any, env: Any,
                     started: bool, auth: str) -> RayEngine:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        ec = config.engine
        alive = sorted((n for n in ray.nodes() if n.get("Alive")),
                       key=lambda n: (n.get("NodeName", ""), n["NodeID"]))
        usable, excluded = ray_guard.allowed(alive, ec)
        if ec.nodes is not None and len(usable) < ec.nodes:
            raise EngineError(f"[engine] nodes = {ec.nodes}, but the Ray cluster at "
                              f"{ec.address!r} has {len(usable)} alive node(s) it may use")
        chosen = usable[: ec.nodes] if ec.nodes is not None else usable
        here = ray.get_runtime_context().get_node_id()
        mailbox = ray.remote(Mailbox).options(
            num_cpus=0, max_concurrency=10_000,
            scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False)).remote()
        frozen = snapshot.to_json()
        actors = []
        for n in chosen:
            name = n.get("NodeName") or n["NodeManagerAddress"]
            corpus = ec.corpus_for(name, str(config.corpus))
            actor = ray.remote(NodeWorker).options(
                num_cpus=0, max_concurrency=ec.case_workers_per_node, max_restarts=1,
                max_task_retries=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False),
            ).remote(name, corpus, frozen, config.limits.cache, ec.data_workers_per_node,
                      config.limits.skip_index)
            actors.append((n, name, corpus, actor))
        nodes, refused = [], []
        for n, name, corpus, actor in actors:
            try:
                info = ray.get(actor.info.remote(), timeout=START_TIMEOUT_S)
            except Exception as exc:  # noqa: BLE001 - recorded: the node is not used
                info = {"name": name, "node_id": n["NodeID"], "corpus": corpus,
                        "refused": f"node {name}: its actor did not start ({exc})"}
            if info.get("refused"):
                refused.append({k: info.get(k) for k in ("name", "node_id", "corpus", "refused")})
                ray.kill(actor)
                continue
            nodes.append(_Node(actor, info, ec.case_workers_per_node))
        if not nodes:
            ray.kill(mailbox)
            reasons = "\n".join(f"  - {r['refused']}" for r in refused) or "  (no alive node)"
            raise EngineError(f"no Ray node can run this experiment:\n{reasons}")
        used = tuple(f"{n.info['name']}/{n.info['node_id']}" for n in nodes)
        protection = Protection(auth, ec.allowed_nodes, used,
                                tuple(ray_guard.label(n) for n in excluded))
        for warning in (v for k, v in protection.to_dict().items() if k.startswith("warning")):
            print(f"parquet-agent: WARNING: {warning}", file=sys.stderr, flush=True)
        return cls(ray, config, nodes, refused, mailbox, env, started, protection)

    def describe(self) -> dict[str, Any]:
        ec = self.config.engine
        return {"kind": "ray", "address": ec.address,
                "case_workers_per_node": ec.case_workers_per_node,
                "data_workers_per_node": ec.data_workers_per_node,
                "nodes": [{k: n.info.get(k) for k in ("name", "node_id", "corpus", "sandbox_mode")}
                          for n in self.nodes],
                "refused": list(self.refused), "protection": self.protection.to_dict()}

    def figures(self) -> dict[str, Any]:
        """Per-node throughput and the driver write round trip of the last `run_cases`."""
        minutes = self._wall_s / 60 if self._wall_s else None
        per_node = {n.label: {"cases": n.done, "case_s": round(n.case_ms / 1000, 3),
                              "cases_per_min": round(n.done / minutes, 2) if minutes else None,
                              "lost": n.lost, "write_round_trip": summarise_ms(n.write_ms),
                              "peak_pss_bytes": n.peak_pss}
                    for n in self.nodes}
        every = [ms for n in self.nodes for ms in n.write_ms]
        return {"kind": "ray", "wall_s": round(self._wall_s, 3), "nodes": per_node,
                # each node's peak, summed (an upper bound: the peaks need not coincide)
                "nodes_peak_pss_bytes": sum(n.peak_pss for n in self.nodes),
                "write_round_trip": summarise_ms(every), "driver_apply": self._store_figures}

    # -- the case loop ----------------------------------------------------------------------------

    def run_cases(self, run: Any, plan: Any, parts: Any, todo: list[tuple[str, str, str]], *,
                  before_case: Any, after_case: Any, progress: Any) -> None:
        from parquet_agent.transcript.events import case_id

        ray = self.ray
        store = DriverStore(run, self.mailbox).start()
        plan_ref = ray.put(plan)
        env = credentials(plan.config, self.env)
        queue = deque(todo)
        inflight: dict[Any, tuple] = {}  # ref -> (item, case id, node)
        probes: dict[Any, _Node] = {}
        avoid: dict[str, str] = {}  # case id -> the node it was lost on
        t0 = time.perf_counter()
        try:
            while queue or inflight or probes:
                self._dispatch(queue, inflight, avoid, store, plan_ref, env, before_case, case_id)
                if not inflight and not probes:
                    if not queue:  # the rest was not started (an open circuit breaker)
                        break
                    raise EngineError("every Ray node was lost; finish the run with --resume "
                                      f"once nodes are back ({len(queue)} case(s) left)")
                ready, _ = ray.wait([*inflight, *probes], num_returns=1, timeout=1.0)
                if store.fault is not None:  # the driver's disk is full, read-only, ...
                    raise store.fault
                for ref in ready:
                    if ref in probes:
                        self._probed(probes.pop(ref), ref)
                        continue
                    item, cid, node = inflight.pop(ref)
                    node.busy -= 1
                    result = self._result(ref, run, store, node, cid, probes)
                    if result is None:  # the node was lost: run the case elsewhere
                        avoid[cid] = node.label
                        queue.appendleft(item)
                        continue
                    node.done += 1
                    node.case_ms += result["wall_ms"]
                    node.write_ms += result["write_ms"]
                    node.peak_pss = max(node.peak_pss, result.get("peak_pss") or 0)
                    after_case(item)
                    progress.update(cost=result["cost"])
        finally:
            self._wall_s = time.perf_counter() - t0
            store.refuse_writes()  # cases cut off now are redone on resume, not recorded failed
            for ref in inflight:  # an interrupt or a fault: the nodes stop with the run
                ray.cancel(ref, force=False)
            store.stop()
            self._store_figures = store.figures()

    def _dispatch(self, queue, inflight, avoid, store, plan_ref, env, before_case,
                  case_id) -> None:
        ready = [n for n in self.nodes if n.state == "ready"]
        while queue:
            free = sorted((n for n in ready if n.busy < n.capacity), key=lambda n: n.busy)
            if not free:
                return
            item = queue[0]
            cid = case_id(*item)
            # a case lost on a node goes to another one when there is another
            node = next((n for n in free if n.label != avoid.get(cid)), free[0])
            queue.popleft()
            if not before_case(item):  # not started: the case stays resumable
                continue
            lease = store.lease(cid)
            ref = node.actor.run_case.remote(self.mailbox, plan_ref, env, item, cid, lease)
            inflight[ref] = (item, cid, node)
            node.busy += 1

    def _result(self, ref, run, store, node: _Node, cid: str, probes) -> dict | None:
        from ray.exceptions import RayActorError, RayTaskError, WorkerCrashedError

        try:
            return self.ray.get(ref)
        except RayTaskError as exc:  # an error the case code did not record: stop, as locally
            if store.fault is not None:  # the case stopped on the driver's machine fault
                raise store.fault from None
            raise exc.as_instanceof_cause() from None
        except (RayActorError, WorkerCrashedError) as exc:
            lease = store.lease(cid)  # the lost attempt's late writes are refused from now on
            if node.state == "ready":  # its actor died: no case for it until it is back, checked
                node.state = "probing"
                probes[node.actor.info.remote()] = node
            if cid in run.completed_cases():
                # the node died after its case_finished was durable: the case is done (a re-run
                # would finish it a second time), at the cost its journal recorded; not lost
                view = fold_case(cid, run.case_events(cid, resolve=False))
                return {"cost": view.cost["usd"], "wall_ms": 0.0, "write_ms": []}
            node.lost += 1
            store.apply(("append", cid, lease, ([CaseFailed(
                "NodeLost", f"node {node.label} was lost mid-case ({type(exc).__name__}); the "
                "case is re-run on another node from its journal", True)],)))
            return None

    def _probed(self, node: _Node, ref: Any) -> None:
        try:
            info = self.ray.get(ref, timeout=PROBE_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - the actor did not come back: drop the node
            node.state = "lost"
            return
        if info.get("refused"):
            self.refused.append({k: info.get(k) for k in ("name", "node_id", "corpus", "refused")})
            node.state = "lost"
            return
        node.info, node.state = info, "ready"

    def close(self) -> None:
        ray = self.ray
        try:
            ray.get([n.actor.close.remote() for n in self.nodes if n.state == "ready"],
                    timeout=30)
        except Exception:  # noqa: BLE001 - killed below either way
            pass
        for n in self.nodes:
            ray.kill(n.actor)
        ray.kill(self.mailbox)
        if self.started_ray:
            ray.shutdown()
