"""What the fork server's children inherit: built once in the server, before it serves.

`prepare(config, files)` parses the snapshot files' footers, builds the lookup structures
(`lookup.py`), opens the skipping index and two already-locked DuckDB connections, and warms the
read path, so that every child forked from the server (`server.py`) gets all of it copy-on-write
instead of paying for it per call. Everything here keeps the server single-threaded: fork from a
threaded process is unsafe.
"""

from __future__ import annotations

import ctypes
import dataclasses
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: DuckDB is imported where it connects
    import duckdb


def prepare(config: dict, files: dict[str, int]):  # pragma: no cover - runs in the server
    """Everything children inherit: parsed footers, lookup structures, a pristine connection."""
    import pyarrow.parquet as pq

    from parquet_agent.tools.lookup import HEADER_COLUMNS, INDEX_COLUMNS, HeaderSearch, RowIndex
    from parquet_agent.tools.render import OutputLimits
    from parquet_agent.tools.gate import parse_select
    from parquet_agent.tools.sandbox import SandboxLimits, connect_corpus, connect_locked, fd_path
    from parquet_agent.tools.worker import Context

    limits = SandboxLimits(**config["limits"])
    metadata = {name: pq.read_metadata(fd_path(fd)) for name, fd in files.items()}
    row_index = header_search = None
    if config.get("index_path"):
        row_index = RowIndex(_read(config["index_path"], INDEX_COLUMNS))
    if config.get("headers_path"):
        header_search = HeaderSearch(_read(config["headers_path"], HEADER_COLUMNS))
    skip, skip_status = _open_skip(config, metadata)
    _warm_up(files, metadata)
    _release_freed_memory()
    # Two locked DuckDB connections, made once here and copied into every child by fork: one
    # reads exactly the snapshot files through the view `filings`, one reads no file at all
    # (scoped queries run over a registered one-row table). A child's own connect, views, SETs
    # and lock cost ~15-25 ms of CPU per call; the copies cost nothing. Safe because each child
    # gets a private copy of a pristine, already-locked database (nothing carries from one call
    # to the next), the server runs only a fixed warm-up statement on them, and with threads=1
    # and async_threads=0 DuckDB starts no thread (checked: fork from a threaded process is
    # not safe, so with any extra thread the children connect themselves).
    paths = [fd_path(fd) for fd in files.values()]
    views = _views(config, files)
    # None below: the children connect themselves
    corpus_con: duckdb.DuckDBPyConnection | None = connect_corpus(paths, limits, views)
    empty_con: duckdb.DuckDBPyConnection | None = connect_locked([], {}, limits)
    for con in (corpus_con, empty_con):  # warm the parser and json_serialize_sql once
        if con is not None:
            con.execute(parse_select(con, "SELECT 1")).fetchall()
    if len(os.listdir("/proc/self/task")) != 1:
        for con in (corpus_con, empty_con):
            if con is not None:
                con.close()
        corpus_con = empty_con = None
    ctx = Context(
        files=files,
        limits=limits,
        output=OutputLimits(**config["output"]),
        drop_to=tuple(config["drop_to"]) if config.get("drop_to") else None,
        metadata=metadata,
        row_index=row_index,
        header_search=header_search,
        skip=skip,
        skip_status=skip_status,
        corpus_con=corpus_con,
        empty_con=empty_con,
        root=os.path.dirname(config["files"][0]["path"]) if config["files"] else None,
        views=views,
    )
    if corpus_con is not None and not _corpus_con_works_in_child(ctx):
        # DuckDB canonicalises /proc/self/fd/N to the file's real path when it can. When the
        # worker uid cannot traverse the corpus folder (e.g. a 0700 parent such as /root, as
        # root), the child sees another path than the server did and the server's allow-list
        # refuses it. The child then locks an inherited, not yet locked copy itself, before any
        # agent SQL (`worker._sql`): three SETs instead of a new database, views and lock per
        # call (a new connection made unscoped `sql` ~3x slower there, issue 14).
        corpus_con.close()
        unlocked = connect_corpus(paths, limits, views, locked=False)
        unlocked.execute("SELECT 1").fetchall()
        ctx = dataclasses.replace(ctx, corpus_con=unlocked, corpus_con_locked=False)
        if not _corpus_con_works_in_child(ctx):
            unlocked.close()
            ctx = dataclasses.replace(ctx, corpus_con=None)
    return ctx


def _views(config: dict, files: dict[str, int]) -> dict[str, str] | None:  # pragma: no cover
    """The config's `views` (name -> file names) as SELECTs, or None for the corpus' `filings`."""
    from parquet_agent.tools.sandbox import dataset_views, fd_path

    if not config.get("views"):
        return None
    return dataset_views({name: fd_path(fd) for name, fd in files.items()}, config["views"])


def _warm_up(files: dict[str, int], metadata: dict) -> None:  # pragma: no cover - in the server
    """Run the read path once so that lazy initialisation (codecs, kernels, allocator arenas)
    happens here, once, instead of in every forked child."""
    import duckdb
    import pyarrow.parquet as pq

    from parquet_agent.tools.sandbox import fd_path

    name, fd = next(iter(files.items()))
    if metadata[name].num_row_groups == 0:
        return
    handle = pq.ParquetFile(fd_path(fd), metadata=metadata[name], pre_buffer=False)
    row = handle.read_row_group(0, use_threads=False).slice(0, 1)
    con = duckdb.connect(":memory:", config={"threads": 1, "async_threads": 0})
    con.register("filing", row)
    con.execute("SELECT * FROM filing").fetchall()
    con.close()


def _corpus_con_works_in_child(ctx) -> bool:  # pragma: no cover - runs in the server
    from parquet_agent.tools.sandbox import harden

    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            harden(set(ctx.files.values()), ctx.limits, ctx.drop_to)
            from parquet_agent.tools.worker import corpus_connection

            view = next(iter(ctx.views)) if ctx.views else "filings"
            corpus_connection(ctx).execute(f"SELECT count(*) FROM (SELECT 1 FROM {view} LIMIT 1)").fetchall()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def _open_skip(config: dict, metadata: dict):  # pragma: no cover - runs in the server
    """(SkipIndex or None, status): only for files of one schema (the candidate rows are one
    table) and an index built for this snapshot (the facade checked; checked again here)."""
    from parquet_agent.corpus.skipindex import SkipIndex
    from parquet_agent.errors import StaleIndexError

    status = config.get("skip_status") or "no skipping index"
    if not config.get("skip"):
        return None, status
    schemas = {meta.schema.to_arrow_schema().to_string() for meta in metadata.values()}
    if len(schemas) != 1:
        return None, "the corpus files differ in schema: whole-corpus queries are scans"
    try:
        skip = SkipIndex.open(config["skip"]["folder"], config["skip"]["snapshot_id"])
    except StaleIndexError as exc:
        return None, f"stale: {exc}"
    if set(skip.pages.column("file").unique().to_pylist()) - set(metadata):
        return None, "the skipping index names files outside this snapshot"
    return skip, "ok"


def _read(path: str, columns: tuple[str, ...]):  # pragma: no cover - runs in the server
    import pyarrow.parquet as pq

    # No Arrow thread pools: the server must stay single-threaded to fork safely (measured:
    # pq.read_table starts a thread even with use_threads=False; ParquetFile.read does not).
    return pq.ParquetFile(path, pre_buffer=False).read(columns=list(columns), use_threads=False)


def _release_freed_memory() -> None:
    # The lookup build frees large temporaries; give them back to the OS so every forked child
    # does not carry them (measured at full scale: server RSS 408 -> 276 MiB).
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        pass
