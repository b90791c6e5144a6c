"""One tool call inside a sandboxed worker child: run it, answer with one JSON frame, exit.

`run_child(job, result_fd, ctx)` is what the fork server calls in a fresh child. It hardens the
process (`sandbox.harden`), runs the job and writes `{"ok", "output", "truncated"}` or
`{"ok": false, "error": {"kind", "message"}}` to `result_fd`, then `os._exit`s: no state carries
from one call to the next. Error messages never show host paths: descriptor paths are mapped
back to corpus file names.

Jobs: `sql` (over `filings`, or over the one-row `filing` when scoped), `read_filing`,
`search_headers`, and `probe` (test/benchmark only: a trivial SELECT).
"""

from __future__ import annotations

import os
import re
import resource
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from parquet_agent.corpus.pages import PageFormatError, column_format, read_cell
from parquet_agent.corpus.skipindex import SkipIndex
from parquet_agent.tools.gate import VIEWS, GateRejection, first_line, parse_select
from parquet_agent.tools.lookup import HeaderSearch, RowIndex, RowLocation
from parquet_agent.tools.pruned import CandidateReader, SkipReport, pruned_filings
from parquet_agent.tools.render import OutputLimits, bound_rows, jsonable
from parquet_agent.tools.sandbox import (
    SandboxLimits,
    Watchdog,
    connect_corpus,
    connect_locked,
    fd_path,
    harden,
    lock,
)
from parquet_agent.tools.windows import match_windows
from parquet_agent.tools.wire import read_frame, write_frame

SCAN_ADVICE = (
    "Whole-corpus scans of parsed_md cannot finish within the per-call budget. Narrow first by "
    "metadata (year, month, accession, file_stem, char_count) or with search_headers, scope to "
    "one filing with file_stem, and prefer contains(parsed_md, 'Exact Text') (about 2.5x faster "
    "than ILIKE) or regexp_matches(parsed_md, 'x', 'i') over ILIKE."
)
_FD_PATH = re.compile(r"/proc/(?:self|\d+)/fd/(\d+)")


class JobError(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass(frozen=True)
class Context:
    """What a child inherits from the fork server (built there once, before any fork)."""

    files: dict[str, int]  # corpus file name -> inherited read-only descriptor
    limits: SandboxLimits
    output: OutputLimits
    drop_to: tuple[int, int] | None
    metadata: dict[str, pq.FileMetaData] = field(default_factory=dict)  # parsed footers
    row_index: RowIndex | None = None
    header_search: HeaderSearch | None = None
    skip: SkipIndex | None = None  # the data-skipping index over parsed_md pages
    skip_status: str = "no skipping index"  # why `skip` is None
    # Locked connections made by the server (see server.py); None: each child connects itself.
    corpus_con: duckdb.DuckDBPyConnection | None = None  # reads exactly the snapshot files
    corpus_con_locked: bool = True  # False: the child locks it itself (`corpus_connection`)
    empty_con: duckdb.DuckDBPyConnection | None = None  # reads no file
    root: str | None = None  # the corpus folder on the host: never shown to the agent
    views: dict[str, str] | None = None  # name -> SELECT instead of `filings` (audits)

    def fd_names(self) -> dict[int, str]:
        return {fd: name for name, fd in self.files.items()}


def run_child(job: dict, result_fd: int, ctx: Context) -> None:  # pragma: no cover - in a child
    """Harden this fresh child, run `job`, answer, exit."""
    try:
        harden({result_fd, *ctx.files.values()}, ctx.limits, ctx.drop_to)
    except BaseException as exc:  # noqa: BLE001 - the child must always answer
        _answer(result_fd, _error("worker_crashed", f"{type(exc).__name__}: {exc}", ctx))
    _serve(job, result_fd, ctx)


def run_spare(job_fd: int, result_fd: int, ctx: Context) -> None:  # pragma: no cover - in a child
    """A pre-forked child: harden while no job exists yet, then wait for exactly one job on
    `job_fd`, run it, answer and exit. Forking and hardening happen between calls, off the
    call's own time; isolation is the same as `run_child` (one pristine child per call)."""
    try:
        harden({job_fd, result_fd, *ctx.files.values()}, ctx.limits, ctx.drop_to)
        job = read_frame(os.fdopen(job_fd, "rb", buffering=0, closefd=False))
    except BaseException:  # noqa: BLE001 - a spare that cannot start is replaced by the server
        os._exit(71)
    if job is None:  # the server is gone or retired this spare
        os._exit(0)
    _serve(job, result_fd, ctx)


def _serve(job: dict, result_fd: int, ctx: Context) -> None:  # pragma: no cover - in a child
    try:
        watchdog = Watchdog(ctx.limits)
        watchdog.mark("harden")
        answer = _run(job, ctx, watchdog)
        answer["phases_ms"] = watchdog.phases
    except BaseException as exc:  # noqa: BLE001 - the child must always answer
        answer = _error("worker_crashed", f"{type(exc).__name__}: {exc}", ctx)
    _answer(result_fd, answer)


def _answer(result_fd: int, answer: dict) -> None:  # pragma: no cover - in a child
    """Write the answer as one length-prefixed frame with this process's own resource use,
    then exit: the server forwards a whole frame at once, without waiting for the exit."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    answer["peak_rss_bytes"] = int(usage.ru_maxrss) * 1024
    answer["cpu_s"] = round(usage.ru_utime + usage.ru_stime, 4)
    write_frame(result_fd, answer)
    os._exit(0)


def _run(job: dict, ctx: Context, watchdog: Watchdog) -> dict:
    try:
        output, truncated, skip = _dispatch(job["tool"], job["args"], ctx, watchdog)
        answer = {"ok": True, "output": output, "truncated": truncated}
        if skip is not None:  # for the record, never the model: outputs stay comparable
            answer["skip_index"] = skip.to_json()
        return answer
    except (JobError, GateRejection) as exc:
        return _error(exc.kind, exc.message, ctx)
    except duckdb.InterruptException:
        return _limit_error(watchdog.reason or "timeout", ctx)
    except (duckdb.OutOfMemoryException, MemoryError) as exc:
        return _error(
            "memory",
            f"the query ran out of its {ctx.limits.memory_limit} memory limit ({first_line(exc)}). "
            "Return fewer or smaller values: aggregate, LIMIT, select substr(parsed_md, ...) "
            "instead of whole cells, avoid sorting or DISTINCT over parsed_md.",
            ctx,
        )
    except duckdb.PermissionException:
        return _error(
            "forbidden",
            "only the corpus files of this snapshot are readable, through the view `filings` "
            "(or `filing` when scoped with file_stem); other files, directories, URLs and "
            "extensions are not accessible.",
            ctx,
        )
    except duckdb.Error as exc:
        if "bad allocation" in str(exc) or "Failed to allocate" in str(exc):
            return _error("memory", f"the query ran out of memory ({first_line(exc)}).", ctx)
        return _error("sql", _sql_message(exc, job), ctx)


def _limit_error(reason: str, ctx: Context) -> dict:
    if reason == "cpu":
        msg = f"the call used its {ctx.limits.cpu_seconds:g} CPU-second budget and was stopped. "
    else:
        msg = f"the call ran past its {ctx.limits.wall_seconds:g} s wall-clock limit and was stopped. "
    return _error(reason, msg + SCAN_ADVICE, ctx)


def _error(kind: str, message: str, ctx: Context) -> dict:
    return {"ok": False, "error": {"kind": kind, "message": sanitize(message, ctx.fd_names(), ctx.root)}}


def sanitize(message: str, fd_names: dict[int, str], root: str | None = None) -> str:
    """Map descriptor paths back to corpus file names, drop the host folder; cap the length.

    DuckDB resolves /proc/self/fd/N to the real path where it can, so both forms can appear.
    """
    message = _FD_PATH.sub(lambda m: fd_names.get(int(m.group(1)), "<not allowed>"), message)
    if root:
        message = message.replace(root.rstrip("/") + "/", "").replace(root, "<corpus>")
    return message[:2000]


def _sql_message(exc: duckdb.Error, job: dict) -> str:
    text = "\n".join(str(exc).strip().splitlines()[:6])
    scoped = job["tool"] == "sql" and job["args"].get("file_stem")
    if scoped and "filings" in text:
        text += "\n(With file_stem set, the query runs over the one-row view `filing`, not `filings`.)"
    return text


# -- the jobs ---------------------------------------------------------------------------------


def _dispatch(tool: str, args: dict, ctx: Context, watchdog: Watchdog
              ) -> tuple[Any, Any, SkipReport | None]:
    """(output, what the limits cut or None, the skip index's report or None) of one job."""
    if tool == "sql":
        return _sql(args["query"], args.get("file_stem"), ctx, watchdog, args.get("scope"))
    if tool == "read_filing":
        return (*_read_filing(ctx, watchdog, **args), None)
    if tool == "search_headers":
        return (*_search_headers(ctx, watchdog, **args), None)
    if tool == "probe":
        [(answer,)] = _empty_con(ctx).execute("SELECT 42").fetchall()  # one row
        return answer, None, None
    raise JobError("unknown_tool", f"no such job {tool!r}")


def _corpus_paths(ctx: Context) -> list[str]:
    return [fd_path(fd) for fd in ctx.files.values()]


def _sql(query: str, file_stem: str | None, ctx: Context, watchdog: Watchdog,
         scope: list[str] | None = None) -> tuple[Any, Any, SkipReport | None]:
    skip = None  # a SkipReport for whole-corpus queries
    if file_stem is None and scope is not None:
        # only the scoped rows exist for this query: read by pyarrow, registered in a
        # connection that can read no file (no table function can reach the other rows)
        groups: dict = {}  # (file, row group) -> table: stems often share a row group
        rows = [_locate_row(stem, None, ctx, groups) for stem in scope]
        watchdog.mark("locate")
        con = _empty_con(ctx)
        con.register("filings", pa.concat_tables(rows))
    elif file_stem is None:
        con, skip = _whole_corpus(query, ctx)
        watchdog.mark("prune")
    else:
        row = _locate_row(file_stem, None, ctx)
        watchdog.mark("locate")
        con = _empty_con(ctx)  # the agent's query can read no file at all
        con.register("filing", row)
    watchdog.watch(con)
    watchdog.mark("connect")
    statement = parse_select(con, query, VIEWS | frozenset(ctx.views or ()))
    watchdog.mark("gate")
    cursor = con.execute(statement)
    columns = [str(d[0]) for d in cursor.description]
    rows = _fetch(cursor, ctx.output.max_rows + 1)
    watchdog.mark("query")
    columns, bounded, truncated = bound_rows(columns, rows, ctx.output)
    output = {"columns": columns, "rows": bounded, "row_count": len(bounded)}
    if file_stem is not None:
        output["scoped_to"] = file_stem
    if truncated:
        output["truncated"] = truncated
    return output, truncated, skip


def _whole_corpus(query: str, ctx: Context) -> tuple[duckdb.DuckDBPyConnection, SkipReport]:
    """The connection to run a whole-corpus query on: one where `filings` holds only the rows of
    the pages the skipping index cannot rule out (`pruned.py`), or else the scanning one."""
    scan = corpus_connection(ctx)
    if ctx.views is not None:  # the audit's own views: no `filings` to stand in for
        return scan, SkipReport(False, "custom views: scanned")
    if ctx.skip is None:
        return scan, SkipReport(False, ctx.skip_status)
    try:
        table, report = pruned_filings(scan, query, ctx.skip, CandidateReader(ctx.files, ctx.metadata))
    except RecursionError:  # a tree too deep to read: scanned, and the gate then refuses it (`sql`)
        return scan, SkipReport(False, "query too deeply nested to prune: scanned", ctx.skip.count)
    except (MemoryError, PageFormatError, duckdb.Error, OSError, pa.ArrowException) as exc:  # never worse than a scan
        return scan, SkipReport(False, f"candidate read failed ({type(exc).__name__}): scanned", ctx.skip.count)
    if table is None:
        return scan, report
    con = _empty_con(ctx)  # reads no file: `filings` is exactly the candidate rows
    con.register("filings", table)
    return con, report


def _fetch(cursor: duckdb.DuckDBPyConnection, count: int) -> list[tuple]:
    """At most `count` result rows as Python values. A value Python cannot hold (an INTERVAL
    of 10^8 years overflows a timedelta) is a `sql` error that says what to do."""
    try:
        return cursor.fetchmany(count)
    except (OverflowError, ValueError, ArithmeticError) as exc:
        raise JobError("sql", f"a result value cannot be returned ({type(exc).__name__}: {exc}); "
                              "cast it to VARCHAR (value::VARCHAR) or narrow its range.") from exc


def corpus_connection(ctx: Context) -> duckdb.DuckDBPyConnection:
    """The locked connection over the snapshot files: the one inherited from the server, locked
    here first when the server could not lock it for this uid, else a new one."""
    if ctx.corpus_con is None:
        return connect_corpus(_corpus_paths(ctx), ctx.limits, ctx.views)
    if not ctx.corpus_con_locked:
        lock(ctx.corpus_con, _corpus_paths(ctx))
    return ctx.corpus_con


def _empty_con(ctx: Context) -> duckdb.DuckDBPyConnection:
    return ctx.empty_con if ctx.empty_con is not None else connect_locked([], {}, ctx.limits)


def _locate_row(file_stem: str, columns: list[str] | None, ctx: Context,
                groups: dict | None = None) -> pa.Table:
    """The one source row of `file_stem`, read with pyarrow (the agent's DuckDB reads no file).

    With the sidecar index: a binary search in the server-built `RowIndex`, then `parsed_md`
    from the one data page that holds it and the small columns from the row group. Without it:
    min/max statistics on the sorted `file_stem` column prune the row groups, as DuckDB's own
    pruning would, and the row group is read. Files are opened through /proc/self/fd paths (a
    new open file description, so concurrent workers never share a file offset).
    """
    if ctx.row_index is not None:
        found = ctx.row_index.locate(file_stem)
        if found is None:
            raise JobError("not_found", _not_found(file_stem))
        if found.file not in ctx.files:
            raise JobError("not_found", f"the index points {file_stem!r} at {found.file!r}, which is not in this snapshot; rebuild the index")
        row = _read_row(found, columns, ctx, {} if groups is None else groups)
        if row.num_rows != 1 or row.column("file_stem")[0].as_py() != file_stem:
            raise JobError("not_found", f"the index entry for {file_stem!r} is stale; rebuild the index")
        return row
    for file in ctx.files:
        handle = _parquet(file, ctx)
        at = _find(handle, file_stem)
        if at is not None:
            return handle.read_row_group(at[0], columns=columns, use_threads=False).slice(at[1], 1)
    raise JobError("not_found", _not_found(file_stem))


def _read_row(found: RowLocation, columns: list[str] | None, ctx: Context, groups: dict) -> pa.Table:
    """One indexed row; `groups` caches the row-group reads that several rows can share."""
    handle = _parquet(found.file, ctx)
    names = list(columns or handle.schema_arrow.names)
    page = found.page if "parsed_md" in names else None
    by_page = page is not None
    if page is not None:
        try:
            text = _read_text(found, page, handle, ctx)
        except PageFormatError:
            by_page = False  # the row group has it too
    read = [n for n in names if n != "parsed_md"] if by_page else names
    key = (found.file, found.row_group, tuple(read))
    if key not in groups:
        groups[key] = handle.read_row_group(found.row_group, columns=read, use_threads=False)
    row = groups[key].slice(found.row_in_group, 1)
    if not by_page:
        return row
    field = handle.schema_arrow.field("parsed_md")
    return row.add_column(names.index("parsed_md"), field, pa.array([text], field.type))


def _read_text(found: RowLocation, page: tuple[int, int, int], handle: pq.ParquetFile,
               ctx: Context) -> str | None:
    """`parsed_md` of an indexed row, decompressing only its data `page` (`corpus/pages.py`)."""
    column = handle.schema_arrow.get_field_index("parsed_md")
    codec, nullable = column_format(handle.metadata, found.row_group, column)
    offset, size, row_in_page = page
    value = read_cell(ctx.files[found.file], offset, size, row_in_page, codec=codec, nullable=nullable)
    return None if value is None else value.decode("utf-8")


def _parquet(file: str, ctx: Context) -> pq.ParquetFile:
    # pre_buffer=False: no Arrow I/O thread; one row group of a local file gains nothing from it
    return pq.ParquetFile(fd_path(ctx.files[file]), metadata=ctx.metadata.get(file), pre_buffer=False)


def _find(handle: pq.ParquetFile, file_stem: str) -> tuple[int, int] | None:
    """(row group, row in group) of the first row whose file_stem equals `file_stem`."""
    column = handle.schema_arrow.get_field_index("file_stem")
    meta = handle.metadata
    for group in range(meta.num_row_groups):
        stats = meta.row_group(group).column(column).statistics
        if stats is not None and stats.has_min_max and not (stats.min <= file_stem <= stats.max):
            continue
        stems = handle.read_row_group(group, columns=["file_stem"], use_threads=False).column(0)
        position = pc.index(stems, file_stem).as_py()
        if position >= 0:
            return group, position
    return None


def not_found_answer(file_stem: str, ctx: Context) -> dict:
    """The answer to a call naming a file_stem this corpus does not have (the fork server gives
    it without a child when its row index says so)."""
    return _error("not_found", _not_found(file_stem), ctx)


def _not_found(file_stem: str) -> str:
    return (
        f"no filing with file_stem {file_stem!r} in this corpus. file_stem is the accession "
        "number; find it with search_headers or sql over `filings`."
    )


def _read_filing(
    ctx: Context, watchdog: Watchdog, file_stem: str, start: int, max_chars: int, pattern: str | None
) -> tuple[Any, Any]:
    row = _locate_row(file_stem, ["file_stem", "parsed_md"], ctx)
    watchdog.mark("locate")
    text = row.column("parsed_md")[0].as_py() or ""
    length = len(text)
    base = {"source_id": f"filing:{file_stem}", "file_stem": file_stem, "char_count": length}
    if start > length:
        raise JobError("validation", f"start={start} is past the end of the filing ({length} characters)")
    if pattern is None:
        end = min(length, start + max_chars)
        out = {**base, "start": start, "end": end, "text": text[start:end]}
        out["next_start"] = end if end < length else None
        truncated = {"next_start": end, "remaining_chars": length - end} if end < length else None
        return out, truncated
    return match_windows(text, base, start, max_chars, pattern)


def _search_headers(ctx: Context, watchdog: Watchdog, query: str, page: int, page_size: int,
                    scope: list[str] | None = None) -> tuple[Any, Any]:
    if ctx.header_search is None:
        raise JobError(
            "not_found",
            "this corpus has no header index (_index/headers.parquet), so search_headers is "
            "unavailable; use sql over `filings` (e.g. contains(parsed_md, 'Name') on a narrowed "
            "set of rows), or ask the operator to run `parquet-agent corpus index DIR`.",
        )
    total, rows = ctx.header_search.search(query, page, page_size, allowed=scope)
    return _page(query, page, page_size, total, rows)


def _page(query: str, page: int, page_size: int, total: int, rows: list) -> tuple[Any, Any]:
    results = [{k: jsonable(v) for k, v in row.items()} for row in rows]
    pages = (total + page_size - 1) // page_size
    output = {
        "query": query,
        "total": total,
        "page": page,
        "page_size": page_size,
        "pages": pages,
        "results": results,
    }
    if page > pages and total:
        output["note"] = f"page {page} is past the last page ({pages})"
    truncated = {"more_pages": True, "next_page": page + 1} if page < pages else None
    return output, truncated
