"""What runs on a Ray node: one long-lived `NodeWorker` actor with its own sandbox.

The actor checks its node's corpus against the run's frozen snapshot (content hashes) when it
starts, and only then opens `Tools` (fork server, result cache, data gate of
`data_workers_per_node`) over it. A node whose corpus differs opens nothing and refuses every case
(`NodeRefusedError` naming the node and the file); the driver records it and never uses it.

Cases run on the actor's threads (`max_concurrency = case_workers_per_node`) against a
`RemoteRun`: the Run's `journal` / `replay` / `raw` / `case_events`, each a call to the driver's
store through the mailbox (see `ray_store`), so nothing is written on the node. Credentials come
with each case call, only the variables the configured models name, and stay in memory.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

from parquet_agent.corpus.snapshot import CorpusSnapshot
from parquet_agent.memory import TreeMemory
from parquet_agent.tools import Tools


class NodeRefusedError(Exception):
    """This node's corpus differs from the run's snapshot: it takes no case."""


class RemoteStoreError(Exception):
    """The driver's store refused or failed a write (its message says which and why)."""


def corpus_problem(node: str, corpus: str, frozen: Mapping[str, Any]) -> tuple[str | None, Any]:
    """(None, snapshot now) when `corpus` holds the frozen snapshot's files unchanged; else a
    message naming the node and each differing file."""
    try:
        now = CorpusSnapshot.take(corpus)
    except Exception as exc:  # noqa: BLE001 - a missing folder is a refusal, with its reason
        return f"node {node}: cannot read its corpus {corpus} ({exc})", None
    check = CorpusSnapshot.from_json(dict(frozen), corpus).diff(now)
    if check.ok:
        return None, now
    return (f"node {node}: its corpus {corpus} differs from the run's snapshot: "
            f"{check.describe()}"), None


class NodeWorker:
    """The Ray actor class (wrapped with `ray.remote` by the engine)."""

    def __init__(self, name: str, corpus: str, frozen_snapshot: Mapping[str, Any], cache: str,
                 data_workers: int, skip_index: bool = True):
        import os

        import ray

        self.name, self.corpus = name, corpus
        self.node_id = ray.get_runtime_context().get_node_id()
        self.pid = os.getpid()
        self.problem, snapshot = corpus_problem(name, corpus, frozen_snapshot)
        self.reader: Tools | None = None
        if self.problem is None:
            self.reader = Tools.open(corpus, "sql+stream", cache=cache,
                                     data_workers=data_workers, snapshot=snapshot,
                                     skip_index=skip_index)
        self._parts: dict[tuple, Any] = {}
        self._lock = threading.Lock()
        self.memory = TreeMemory()  # this actor, its fork server and workers
        self.memory.start()

    def info(self) -> dict[str, Any]:
        out = {"name": self.name, "node_id": self.node_id, "pid": self.pid,
               "corpus": self.corpus, "refused": self.problem}
        if self.reader is not None:
            cgroup = self.reader.sandbox_info()["cgroup"]
            out["sandbox_mode"] = f"{self.reader.sandbox_mode}; cgroup {cgroup}"
        return out

    def run_case(self, mailbox: Any, plan: Any, env: Mapping[str, str],
                 item: tuple[str, str, str], case_id: str, lease: int) -> dict[str, Any]:
        """Run one case against the driver's store; its cost and the write round trips."""
        if self.problem is not None:
            raise NodeRefusedError(self.problem)
        parts = self._parts_for(plan, env)
        run = RemoteRun(mailbox, case_id, lease)
        t0 = time.perf_counter()
        cost = plan.run_case(parts, run, item, node=self.name)
        return {"cost": cost, "node": self.name, "wall_ms": (time.perf_counter() - t0) * 1000,
                "write_ms": run.write_ms, "peak_pss": self.memory.peak}

    def _parts_for(self, plan: Any, env: Mapping[str, str]) -> Any:
        key = (plan.session, plan.manifest_hash)
        with self._lock:  # models and tool views once per session, shared by the threads
            if key not in self._parts:
                self._parts = {key: plan.open_parts(self.reader, dict(env))}
            return self._parts[key]

    def close(self) -> None:
        self.memory.stop()
        if self.reader is not None:
            self.reader.close()
            self.reader = None


class RemoteRun:
    """The parts of `Run` a case uses, each forwarded to the driver and awaited."""

    def __init__(self, mailbox: Any, case_id: str, lease: int):
        self.mailbox, self.case_id, self.lease = mailbox, case_id, lease
        self.raw = _RemoteSink(self)
        self.write_ms: list[float] = []

    def call(self, op: str, *args: Any) -> Any:
        import ray

        t0 = time.perf_counter()
        ok, value = ray.get(self.mailbox.call.remote((op, self.case_id, self.lease, args)))
        self.write_ms.append((time.perf_counter() - t0) * 1000)
        if not ok:
            kind, message, *fault = value
            if fault:  # the driver's disk is full, read-only, ...: stop as a local case does
                raise OSError(*fault[0])
            raise RemoteStoreError(f"the driver's store refused {op} for {self.case_id}: "
                                   f"{kind}: {message}")
        return value

    def journal(self, case_id: str) -> _RemoteJournal:
        self._own(case_id)
        return _RemoteJournal(self)

    def replay(self, case_id: str) -> Any:
        self._own(case_id)
        return self.call("replay")

    def case_events(self, case_id: str, *, resolve: bool = True) -> Any:
        self._own(case_id)
        return self.call("case_events", resolve)

    def _own(self, case_id: str) -> None:
        if case_id != self.case_id:
            raise RemoteStoreError(f"a node running {self.case_id} asked for {case_id}")


class _RemoteJournal:
    def __init__(self, run: RemoteRun):
        self.run = run

    def append(self, payload: Any) -> Any:
        return self.append_many([payload])[0]

    def append_many(self, payloads: list[Any]) -> list[Any]:
        return self.run.call("append", list(payloads))


class _RemoteSink:
    """`RawSink`: returns once the bytes are durable in the driver's raw store."""

    def __init__(self, run: RemoteRun):
        self.run = run

    def write(self, name: str, data: bytes) -> str:
        return self.run.call("raw", name, bytes(data))
