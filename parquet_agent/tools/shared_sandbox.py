"""`SharedSandbox`: the processes, result cache and data-worker gate behind every `Tools` view.

`Tools.open(...)` makes one and owns it; `tools.for_strategy(s)` and `tools.scoped(...)` are views
over the same one, so one fork server serves a whole experiment and "at most `data_workers` data
calls at once" holds across strategies. Its public facts are read-only: `server_pid`,
`server_running`, `starts` (how many fork servers it has started: a crash costs one more),
`mode` (which kernel layers confine the workers), `index_status`, `info()` (for run manifests).
"""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import Any

from parquet_agent.corpus.index import CorpusIndex, index_exists
from parquet_agent.corpus.skipindex import SkipIndex, skip_index_exists
from parquet_agent.corpus.snapshot import CorpusSnapshot
from parquet_agent.errors import SandboxUnavailable, StaleIndexError, UsageError
from parquet_agent.tools.cache import ResultCache
from parquet_agent.tools.pool import Answer, WorkerPool
from parquet_agent.tools.render import OutputLimits
from parquet_agent.tools.sandbox import (
    NOBODY,
    UNPROTECTED_ADVICE,
    Capabilities,
    SandboxLimits,
    cgroup_status,
)
from parquet_agent.tools.specs import TOOL_VERSION


class SharedSandbox:
    """One corpus's fork server (`pool.WorkerPool`), result cache and data gate.

    `load_headers` decides whether the server loads the header-search table (only strategies
    that offer `search_headers` need it). Closing it stops the server; a sandbox dropped without
    `close()` (a notebook cell re-run) still stops its server when it is collected."""

    def __init__(self, snapshot: CorpusSnapshot, corpus_dir: Path, *, cache: str,
                 data_workers: int, limits: SandboxLimits, output_limits: OutputLimits,
                 load_headers: bool, capabilities: Capabilities, skip_index: bool = True,
                 allow_unprotected: bool = False):
        if cache not in ("on", "off"):
            raise UsageError(f"cache must be 'on' or 'off', not {cache!r}")
        self.snapshot = snapshot
        self.limits = limits
        self.output_limits = output_limits
        self.cache = ResultCache(enabled=cache == "on")
        self.index_status, index_path, headers_path = _find_index(corpus_dir, snapshot)
        self.skip_status = _skip_status(corpus_dir, snapshot, skip_index)
        self.mode = capabilities.mode()
        # With neither the uid drop nor Landlock, nothing in the kernel keeps a worker from
        # emptying a corpus file: refuse to start unless the caller accepted that explicitly.
        if not capabilities.protects_corpus:
            if not allow_unprotected:
                raise SandboxUnavailable(
                    "the tools will not start: the sandbox cannot protect the corpus files here "
                    "(not root, so workers keep your uid, and this kernel has no Landlock, so "
                    f"nothing refuses their writes). To run anyway, {UNPROTECTED_ADVICE}.")
            self.mode = "UNPROTECTED (allowed explicitly): " + self.mode
        drop_to = (NOBODY, NOBODY) if capabilities.root else None
        config = {
            "files": [{"name": f.name, "path": str(p)}
                      for f, p in zip(snapshot.files, snapshot.paths(corpus_dir))],
            "index_path": index_path,
            "headers_path": headers_path if load_headers else None,
            "skip": {"folder": str(corpus_dir), "snapshot_id": snapshot.snapshot_id}
            if self.skip_status == "ok" else None,
            "skip_status": self.skip_status,
            "limits": limits.to_json(),
            "output": output_limits.__dict__,
            "drop_to": list(drop_to) if drop_to else None,
        }
        # The server kills a child at wall_seconds + 2 s; waiting longer than this for an answer
        # means the server itself is stuck, which is then reported as worker_crashed.
        answer_timeout = limits.wall_seconds + 30.0
        self._pool = WorkerPool(config, data_workers=data_workers, answer_timeout_s=answer_timeout)
        self._finalizer = weakref.finalize(self, self._pool.close)

    # -- read-only facts --------------------------------------------------------------------------

    @property
    def server_pid(self) -> int | None:
        """The running fork server's pid (None once closed)."""
        return self._pool.server_pid

    @property
    def server_running(self) -> bool:
        """Whether the fork server is alive now (the next call starts a new one if not)."""
        return self._pool.server_running

    @property
    def starts(self) -> int:
        """How many fork servers this sandbox has started (1 until one dies)."""
        return self._pool.starts

    def info(self) -> dict[str, Any]:
        """What the sandbox is, for run manifests."""
        return {
            "mode": self.mode,
            "cgroup": cgroup_status(),
            "limits": self.limits.to_json(),
            "output_limits": dict(self.output_limits.__dict__),
            "index": self.index_status,
            "skip_index": self.skip_status,
            "server": dict(self._pool.server_info),
            "tool_version": TOOL_VERSION,
        }

    # -- use ----------------------------------------------------------------------------------------

    def run(self, tool: str, args: dict) -> Answer:
        """One call in a fresh sandboxed child (waits for a data-worker slot)."""
        return self._pool.run(tool, args)

    def close(self) -> None:
        self._finalizer()


def _skip_status(corpus_dir: Path, snapshot: CorpusSnapshot, enabled: bool) -> str:
    """"ok" when the data-skipping index can be used, else why whole-corpus queries are scans.
    Never an error: a missing or stale skipping index only costs speed."""
    if not enabled:
        return "disabled (skip_index = false)"
    if not skip_index_exists(corpus_dir):
        return f"missing: build it with `parquet-agent corpus index {corpus_dir} --skip-only`"
    try:
        SkipIndex.check(corpus_dir, snapshot.snapshot_id)
    except StaleIndexError as exc:
        return f"stale: {exc}"
    return "ok"


def _find_index(corpus_dir: Path, snapshot: CorpusSnapshot) -> tuple[str, str | None, str | None]:
    """(status, index.parquet path, headers.parquet path) of the sidecar index, if there is one.

    A stale index raises StaleIndexError (from `CorpusIndex.open`); a missing one is allowed:
    scoped reads then prune by statistics and `search_headers` answers `not_found`.
    """
    if not index_exists(corpus_dir):
        return "missing", None, None
    index = CorpusIndex.open(corpus_dir, snapshot)
    headers = index.headers_path if index.headers_path.is_file() else None
    return "ok", str(index.index_path), str(headers) if headers else None
