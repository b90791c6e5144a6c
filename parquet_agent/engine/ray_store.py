"""The one durable writer of a Ray run: the driver, reached through a mailbox actor.

Nodes never write files. A node's case calls `Mailbox.call(request)` and waits; the driver's
`DriverStore` threads take requests from the mailbox, apply them to the driver's `Run` (journal
appends, raw records: durable, fsynced, before the reply) and post the reply, which completes the
node's call. So a raw request is on the driver's disk before the node sends it to a provider, and
a response before the node parses it, exactly as in a local run.

Fencing: every dispatch of a case carries a lease (1, 2, ...). When the driver gives a case to
another node (its node died), it raises the case's lease first; a late write from the dead
node's lease is refused (`StaleLeaseError`), so a case's journal never interleaves two attempts.
The check and the write happen under the case's lock, so no write slips between them.

A machine fault on the driver (disk full, read-only folder, permission denied) is answered with
its errno, so the node's case stops as a local one does (an OSError, not a case failure), and is
kept in `fault`: the engine stops the run with it.

The mailbox actor runs on the driver's node (`ray_engine` pins it there) and holds no state worth
keeping: if it is lost, the cases in flight fail like a lost node's and are re-run.
"""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from collections import defaultdict
from typing import Any

from parquet_agent.errors import is_machine_fault

TAKE_BATCH = 64
TAKE_WAIT_S = 0.5


class StaleLeaseError(Exception):
    """A write for a case that has since been given to another node."""


class RunStoppingError(Exception):
    """A write that arrived after the run began to stop (a machine fault, Ctrl-C): the case is
    redone on resume, so nothing of it is recorded now (a cancelled case would otherwise record
    its cancellation as its own failure)."""


class Mailbox:
    """Ray async actor: pairs node calls with driver replies (no disk, no run state)."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue | None = None
        self._waiting: dict[int, asyncio.Future] = {}
        self._next = 0

    def _q(self) -> asyncio.Queue:
        if self._queue is None:  # created on the actor's event loop
            self._queue = asyncio.Queue()
        return self._queue

    async def call(self, request: tuple) -> tuple[bool, Any]:
        """From a node: wait for the driver's `(ok, value)` answer to `request`."""
        self._next += 1
        key = self._next
        future = asyncio.get_running_loop().create_future()
        self._waiting[key] = future
        await self._q().put((key, request))
        return await future

    async def take(self, max_items: int = TAKE_BATCH, wait_s: float = TAKE_WAIT_S) -> list:
        """From the driver: up to `max_items` requests, waiting at most `wait_s` for the first."""
        queue = self._q()
        try:
            first = await asyncio.wait_for(queue.get(), wait_s)
        except asyncio.TimeoutError:
            return []
        batch = [first]
        while len(batch) < max_items and not queue.empty():
            batch.append(queue.get_nowait())
        return batch

    async def reply(self, key: int, answer: tuple[bool, Any]) -> None:
        future = self._waiting.pop(key, None)
        if future is not None and not future.done():
            future.set_result(answer)

    def ping(self) -> bool:
        return True


class DriverStore:
    """The driver's side: threads that apply node requests to the run, under case leases."""

    def __init__(self, run: Any, mailbox: Any, threads: int = 4):
        self.run, self.mailbox = run, mailbox
        self._leases: dict[str, int] = {}
        self._locks: dict[str, threading.Lock] = defaultdict(threading.Lock)
        self._guard = threading.Lock()
        self._stop = threading.Event()
        self._refusing = threading.Event()
        self._apply_ms: list[float] = []
        self.fault: OSError | None = None  # the first machine fault a write met
        self._threads = [threading.Thread(target=self._serve, name=f"ray-store-{i}", daemon=True)
                         for i in range(threads)]

    def start(self) -> DriverStore:
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=TAKE_WAIT_S * 4)

    def refuse_writes(self) -> None:
        """From now on every request is refused (`RunStoppingError`)."""
        self._refusing.set()

    def lease(self, case_id: str) -> int:
        """A new lease for `case_id`: earlier leases' writes are refused from now on."""
        with self._lock_of(case_id):
            self._leases[case_id] = self._leases.get(case_id, 0) + 1
            return self._leases[case_id]

    def figures(self) -> dict[str, Any]:
        """Driver-side time to apply one request (ms): the disk part of the write round trip."""
        with self._guard:
            ms = list(self._apply_ms)
        return summarise_ms(ms)

    def _lock_of(self, case_id: str) -> threading.Lock:
        with self._guard:
            return self._locks[case_id]

    def _serve(self) -> None:
        import ray

        while not self._stop.is_set():
            try:
                batch = ray.get(self.mailbox.take.remote())
            except Exception:  # noqa: BLE001 - the mailbox is gone: nodes' calls fail with it
                if self._stop.wait(TAKE_WAIT_S):
                    return
                continue
            for key, request in batch:
                answer = self.apply(request)
                self.mailbox.reply.remote(key, answer)

    def apply(self, request: tuple) -> tuple[bool, Any]:
        """Apply one `(op, case_id, lease, args)`; `(True, value)` or `(False, error text)`."""
        op, case_id, lease, args = request
        t0 = time.perf_counter()
        try:
            with self._lock_of(case_id):
                if self._refusing.is_set():
                    raise RunStoppingError(f"{case_id}: the run is stopping")
                if self._leases.get(case_id) != lease:
                    raise StaleLeaseError(f"{case_id}: lease {lease} was withdrawn (the case "
                                          "was given to another node)")
                value = self._do(op, case_id, args)
        except Exception as exc:  # noqa: BLE001 - the node raises it in the case (recorded there)
            if is_machine_fault(exc):
                self.fault = self.fault or exc
                return False, ("OSError", str(exc)[:2000], (exc.errno, exc.strerror, exc.filename))
            return False, (type(exc).__name__, str(exc)[:2000])
        with self._guard:
            self._apply_ms.append((time.perf_counter() - t0) * 1000)
        return True, value

    def _do(self, op: str, case_id: str, args: tuple) -> Any:
        if op == "append":
            return self.run.journal(case_id).append_many(list(args[0]))
        if op == "raw":
            name, data = args
            if not name.startswith(f"{case_id}/"):  # a node writes only its own case's records
                raise ValueError(f"raw record {name!r} is outside case {case_id}")
            return self.run.raw.write(name, data)
        if op == "replay":
            return self.run.replay(case_id)
        if op == "case_events":
            return self.run.case_events(case_id, resolve=args[0])
        raise ValueError(f"unknown store operation {op!r}")


def summarise_ms(ms: list[float]) -> dict[str, Any]:
    """count / median / p95 / max of a list of milliseconds."""
    if not ms:
        return {"count": 0}
    ordered = sorted(ms)
    return {"count": len(ms), "median_ms": round(statistics.median(ordered), 3),
            "p95_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 3),
            "max_ms": round(ordered[-1], 3)}

