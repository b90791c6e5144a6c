"""Hostile input against real workers and real DuckDB: every attack gets a clear error kind and
message, nothing outside the snapshot is read, nothing is written anywhere, and the next call
works. The same spirit applies to every argument of every tool, not only SQL."""

from __future__ import annotations

import json
import os
import time

import pytest

from tests.tools.conftest import file_hashes, is_root, report_from_child, stem


def landlock_available() -> bool:
    from parquet_agent.tools.sandbox import landlock_abi

    return landlock_abi() > 0


def healthy(tools) -> None:
    result = tools.call("sql", query="SELECT count(*) AS n FROM filings")
    assert result.ok, result.error
    assert result.output["rows"] == [[60]]


@pytest.fixture(scope="module")
def guard(corpus_dir):
    """Fails the module if any file under the corpus root (or its parent) changed or appeared."""
    root = corpus_dir.parent
    before = file_hashes(root)
    yield root
    assert file_hashes(root) == before


SQL_ATTACKS = {
    "read_csv other file": ("SELECT * FROM read_csv('{root}/secret.csv')", "sql"),
    "read_text /etc/passwd": ("SELECT * FROM read_text('/etc/passwd')", "sql"),
    "read_blob environ": ("SELECT * FROM read_blob('/proc/self/environ')", "sql"),
    "read_text stdin fd": ("SELECT * FROM read_text('/proc/self/fd/0')", "sql"),
    "glob root": ("SELECT * FROM glob('/**')", "sql"),
    "glob corpus dir": ("SELECT * FROM glob('{root}/corpus/*')", "sql"),
    "read_parquet other path": ("SELECT count(*) FROM read_parquet('{root}/outside.parquet')", "sql"),
    "read_parquet traversal": ("SELECT count(*) FROM read_parquet('{root}/corpus/../outside.parquet')", "sql"),
    "parquet_metadata other": ("SELECT * FROM parquet_metadata('{root}/outside.parquet')", "sql"),
    "replacement scan": ("SELECT * FROM '{root}/outside.parquet'", "sql"),
    "https": ("SELECT * FROM read_parquet('https://example.com/x.parquet')", "sql"),
    "copy to file": ("COPY (SELECT 1) TO '{root}/out.csv'", "forbidden"),
    "copy over corpus": ("COPY (SELECT 1) TO '/proc/self/fd/3' (FORMAT parquet, USE_TMP_FILE false)", "forbidden"),
    "export": ("EXPORT DATABASE '{root}/exp'", "forbidden"),
    "attach file": ("ATTACH '{root}/evil.duckdb'", "forbidden"),
    "attach memory": ("ATTACH ':memory:' AS m", "forbidden"),
    "install": ("INSTALL httpfs", "forbidden"),
    "load": ("LOAD httpfs", "forbidden"),
    "set": ("SET enable_external_access = true", "forbidden"),
    "reset": ("RESET lock_configuration", "forbidden"),
    "pragma": ("PRAGMA memory_limit = '16GB'", "forbidden"),
    "set variable": ("SET VARIABLE x = 1", "forbidden"),
    "create": ("CREATE TABLE t AS SELECT 1", "forbidden"),
    "create or replace view": ("CREATE OR REPLACE VIEW filings AS SELECT 1", "forbidden"),
    "insert": ("INSERT INTO filings VALUES (1)", "forbidden"),
    "update": ("UPDATE filings SET year = 1", "forbidden"),
    "delete": ("DELETE FROM filings", "forbidden"),
    "cte copy over corpus": (
        "WITH x AS (COPY (SELECT 1) TO '/proc/self/fd/3' (FORMAT parquet, USE_TMP_FILE false)) SELECT 1",
        "forbidden"),
    "cte copy to file": ("WITH x AS (COPY (SELECT 1) TO '{root}/cte.csv') SELECT 1", "forbidden"),
    "cte delete": ("WITH x AS (DELETE FROM filings RETURNING *) SELECT * FROM x", "forbidden"),
    "cte insert": ("WITH x AS (INSERT INTO filings SELECT * FROM filings RETURNING *) SELECT 1", "forbidden"),
    "explain analyze": ("EXPLAIN ANALYZE SELECT * FROM filings", "forbidden"),
    "pivot": ("PIVOT filings ON month USING count(*)", "forbidden"),
    "two statements": ("SELECT 1; SELECT 2", "forbidden"),
    "statement after comment": ("SELECT 1 -- harmless\n; DROP VIEW filings", "forbidden"),
    "query() smuggling": ("SELECT * FROM query('CREATE TABLE t AS SELECT 1')", "sql"),
    "getenv": ("SELECT getenv('HOME')", "sql"),
    "settings probe": ("SELECT current_setting('allowed_paths')", "sql"),
    "settings table": ("SELECT * FROM duckdb_settings()", "sql"),
    "secrets": ("SELECT * FROM duckdb_secrets()", "sql"),
}


@pytest.mark.parametrize("sql,kind", SQL_ATTACKS.values(), ids=SQL_ATTACKS.keys())
def test_sql_attack_is_refused_and_next_call_works(tools, guard, sql, kind):
    result = tools.call("sql", query=sql.format(root=guard))
    if kind is None:
        assert result.ok and result.output["rows"] == []
    else:
        assert not result.ok, result.output
        assert result.error.kind == kind, result.error
        assert len(result.error.message) > 20
        assert str(guard) not in result.error.message  # no host paths in messages
    healthy(tools)


def worker_reaches(path) -> bool:
    """Whether a worker's uid can traverse to `path`: as root the worker is nobody (the test
    folders are 0700); otherwise it keeps the caller's uid, which made the folder."""
    return not is_root() or all(os.stat(p).st_mode & 0o001 for p in [path, *path.parents])


def test_a_corpus_file_by_host_path_is_refused_or_is_that_same_file(tools, guard):
    # DuckDB resolves the allow-listed /proc/self/fd/N to the file's real path where the worker
    # can reach it (always without root, and as root over a traversable folder), so the host
    # path then names the same allowed snapshot file; it never opens anything else (see the
    # "other path" and "traversal" attacks), and a refusal never shows the host folder.
    # The gate now refuses every file reader by name (the view is the only way in).
    result = tools.call("sql", query=f"SELECT count(*) FROM read_parquet('{guard}/corpus/2025-01.parquet')")
    assert not result.ok and result.error.kind == "sql", result.output
    assert "read_parquet()" in result.error.message and str(guard) not in result.error.message
    healthy(tools)


def test_scoped_query_reads_no_file(tools, guard):
    # With file_stem the agent's connection may read nothing, not even the corpus files.
    result = tools.call("sql", query="SELECT count(*) FROM read_parquet('/proc/self/fd/3')", file_stem=stem(3))
    assert not result.ok and result.error.kind == "sql" and "read_parquet()" in result.error.message
    result = tools.call("sql", query="SELECT count(*) FROM filings", file_stem=stem(3))
    assert not result.ok and result.error.kind == "sql"
    assert "`filing`" in result.error.message


def test_host_paths_are_not_revealed(tools, guard):
    for sql in [
        "SELECT DISTINCT filename FROM read_parquet((SELECT list(DISTINCT filename) FROM filings))",
        "SELECT * FROM duckdb_databases()",
        "SELECT file_name FROM parquet_metadata('/proc/self/fd/3')",
    ]:
        result = tools.call("sql", query=sql)
        assert str(guard) not in result.model_text()


def test_memory_bomb_is_a_memory_error(tools, guard):
    for sql in [
        "SELECT count(*) FROM range(100000000) a, range(100000000) b WHERE a.range = b.range",
        "SELECT list(range) FROM range(300000000)",
        "SELECT length(repeat('x', 2147483647))",
        "SELECT string_agg(parsed_md, '') FROM (SELECT parsed_md FROM filings, range(20000))",
    ]:
        result = tools.call("sql", query=sql)
        assert not result.ok and result.error.kind == "memory", (sql, result.error)
        assert "memory" in result.error.message
    healthy(tools)


def test_cpu_spin_is_stopped_with_advice(tight_tools, guard):
    started = time.monotonic()
    result = tight_tools.call("sql", query="SELECT count(*) FROM range(1000000000000) t WHERE hash(t.range) = 7")
    assert not result.ok and result.error.kind in {"cpu", "timeout"}, result.error
    assert "contains" in result.error.message  # steers the agent to cheaper text search
    assert time.monotonic() - started < 8
    healthy(tight_tools)


def test_endless_recursive_cte_is_stopped(tight_tools, guard):
    result = tight_tools.call(
        "sql", query="WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT max(n) FROM r"
    )
    assert not result.ok and result.error.kind in {"cpu", "timeout", "memory"}, result.error
    healthy(tight_tools)


def test_huge_result_sets_and_cells_are_bounded(tools, guard):
    result = tools.call("sql", query="SELECT range FROM range(100000000)")
    assert result.ok
    assert len(result.output["rows"]) == 200 and result.truncated["more_rows"] is True
    result = tools.call("sql", query="SELECT repeat('ab', 5000000) AS big, 1 AS small")
    assert result.ok
    cell = result.output["rows"][0][0]
    assert len(cell) < 2100 and "cut" in cell and result.truncated["cells_cut"] == 1
    result = tools.call("sql", query="SELECT parsed_md FROM filings")
    assert result.ok and len(result.model_text()) < 40_000
    assert result.truncated["stopped_at_total_chars"] == 30_000


BAD_CALLS = {
    "unknown tool": ("drop_everything", {}, "unknown_tool"),
    "tool name not a string": (["sql"], {}, "unknown_tool"),
    "arguments not an object": ("sql", ["SELECT 1"], "validation"),
    "arguments invalid JSON text": ("sql", '{"query": ', "validation"),
    "arguments invalid UTF-8 bytes": ("sql", b'{"query": "SELECT \xff"}', "validation"),
    "missing query": ("sql", {}, "validation"),
    "unknown argument": ("sql", {"query": "SELECT 1", "mode": "write"}, "validation"),
    "query wrong type": ("sql", {"query": 42}, "validation"),
    "query NUL": ("sql", {"query": "SELECT 1\x00; DROP VIEW filings"}, "validation"),
    "query lone surrogate": ("sql", {"query": "SELECT '\ud800'"}, "validation"),
    "tool name lone surrogate": ("sql\ud800", {}, "unknown_tool"),
    "argument name lone surrogate": ("sql", {"query": "SELECT 1", "\udc80x": 1}, "validation"),
    "query too long": ("sql", {"query": "SELECT 1" + " " * 30_000}, "validation"),
    "file_stem traversal": ("sql", {"query": "SELECT 1", "file_stem": "../../etc/passwd"}, "validation"),
    "file_stem quote": ("read_filing", {"file_stem": "x' OR '1'='1"}, "validation"),
    "file_stem not a string": ("read_filing", {"file_stem": 12345}, "validation"),
    "file_stem unknown": ("read_filing", {"file_stem": "9999999999-25-999999"}, "not_found"),
    "file_stem like pattern": ("read_filing", {"file_stem": "0000001003-25-%"}, "validation"),
    "start negative": ("read_filing", {"file_stem": stem(1), "start": -1}, "validation"),
    "start as string": ("read_filing", {"file_stem": stem(1), "start": "0"}, "validation"),
    "start as bool": ("read_filing", {"file_stem": stem(1), "start": True}, "validation"),
    "start past end": ("read_filing", {"file_stem": stem(1), "start": 10_000_000}, "validation"),
    "max_chars huge": ("read_filing", {"file_stem": stem(1), "max_chars": 10**9}, "validation"),
    "max_chars zero": ("read_filing", {"file_stem": stem(1), "max_chars": 0}, "validation"),
    "pattern NUL": ("read_filing", {"file_stem": stem(1), "pattern": "a\x00b"}, "validation"),
    "pattern too long": ("read_filing", {"file_stem": stem(1), "pattern": "a" * 500}, "validation"),
    "search query empty": ("search_headers", {"query": ""}, "validation"),
    "search page zero": ("search_headers", {"query": "x", "page": 0}, "validation"),
    "search page_size huge": ("search_headers", {"query": "x", "page_size": 100000}, "validation"),
    "search page float": ("search_headers", {"query": "x", "page": 1.5}, "validation"),
    "search query NUL": ("search_headers", {"query": "Contoso\x00"}, "validation"),
    "describe with arguments": ("describe_corpus", {"path": "/etc"}, "validation"),
}


@pytest.mark.parametrize("name,arguments,kind", BAD_CALLS.values(), ids=BAD_CALLS.keys())
def test_bad_calls_are_error_values(tools, guard, name, arguments, kind):
    result = tools.call_raw(name, arguments)
    assert not result.ok and result.error.kind == kind, result.error
    assert result.model_text().startswith('{"error"')
    # always JSON-able and encodable, whatever bytes came in
    result.model_text().encode("utf-8")
    json.dumps(result.to_json(), ensure_ascii=False).encode("utf-8")


def test_hostile_text_in_every_argument_is_only_data(tools, guard):
    # SQL-looking, regex-looking and wildcard text in search and pattern arguments are data.
    for query in ["' OR 1=1 --", "%", "_", "Contoso'; DROP VIEW filings; --", ".*" * 50, "ünïcödé ✓"]:
        result = tools.call("search_headers", query=query)
        assert result.ok, result.error
        assert result.output["total"] in (0, 60) or query == "Contoso'; DROP VIEW filings; --"
    for pattern in ["(a+)+$", ".*.*.*.*.*.*.*.*.*.*b", "[", "\\", "%", "ünïcödé ✓"]:
        result = tools.call("read_filing", file_stem=stem(1), pattern=pattern)
        assert result.ok, result.error
    result = tools.call("read_filing", file_stem=stem(1), pattern="ünïcödé ✓")
    assert result.output["matches_total"] > 0
    healthy(tools)


def test_worker_environment_holds_no_credentials(corpus_dir, monkeypatch):
    from parquet_agent.tools import Tools

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-must-not-leak")
    monkeypatch.setenv("SOME_NEW_TOKEN", "must-not-leak-either")
    with Tools.open(corpus_dir, "sql") as tools:
        environ = open(f"/proc/{tools.sandbox.server_pid}/environ", "rb").read().decode()
    assert "must-not-leak" not in environ and "sk-test" not in environ
    names = {entry.split("=", 1)[0] for entry in environ.split("\0") if entry}
    assert names <= {"PATH", "LANG", "LC_ALL", "TZ", "HOME", "MALLOC_ARENA_MAX", "ARROW_DEFAULT_MEMORY_POOL",
                     "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "JE_ARROW_MALLOC_CONF",
                     "PYTHONDONTWRITEBYTECODE", "PYTHONPATH", "GLIBC_TUNABLES"}


def test_sandbox_mode_is_recorded(tools):
    from parquet_agent.tools.sandbox import landlock_abi

    landlock = "+landlock" if landlock_abi() else ""
    if is_root() and landlock:
        assert tools.sandbox_mode == "rlimit+watchdog+setuid+landlock"
    elif is_root():
        assert tools.sandbox_mode.startswith("rlimit+watchdog+setuid (no Landlock")
    else:
        assert tools.sandbox_mode.startswith("rlimit+watchdog" + landlock + " (")
        assert "no privilege drop" in tools.sandbox_mode
    assert tools.sandbox_info()["server"]["threads"] == 1


def _write_attempts_in_hardened_child(target, folder, drop_to) -> bytes:
    """Fork, harden like a worker, then try every way to write `target` and `folder` past the
    gate and DuckDB's allow-list: b"\\x00" when the kernel refused them all, else the first that
    got through (1 COPY wrote or emptied the file, 2 reopen for writing, 3 O_TRUNC, 4 truncate,
    5 create, 6 unlink; 7 wrong uid, 8 anything else went wrong)."""
    import duckdb

    from parquet_agent.tools.sandbox import SandboxLimits, connect_locked, fd_path, harden

    fd = os.open(target, os.O_RDONLY)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        code = 0
        try:
            harden({fd, write_fd}, SandboxLimits(), drop_to)
            path = fd_path(fd)
            con = connect_locked([path], {}, SandboxLimits())
            size = os.fstat(fd).st_size
            try:  # the gate would refuse this; run it raw to show the next layer holds
                con.execute(f"COPY (SELECT 1 AS x) TO '{path}' (FORMAT parquet, USE_TMP_FILE false)")
                code = 1
            except duckdb.Error:  # but its open may already have emptied the file
                code = 1 if os.fstat(fd).st_size != size else 0
            attempts = [
                (2, lambda: os.open(path, os.O_WRONLY)),
                (3, lambda: os.open(path, os.O_RDONLY | os.O_TRUNC)),  # RLIMIT_FSIZE allows this
                (4, lambda: os.truncate(path, 0)),
                (5, lambda: os.open(folder / "new.txt", os.O_WRONLY | os.O_CREAT, 0o644)),
                (6, lambda: os.unlink(target)),
            ]
            for number, attempt in attempts:
                try:
                    attempt()
                    code = code or number
                except PermissionError:
                    pass
            expected_uid = 65534 if drop_to else os.getuid()  # the caller's own uid when not root
            if os.getuid() != expected_uid or (drop_to and os.getgid() != 65534):
                code = code or 7
        except BaseException:
            code = code or 8
        os.write(write_fd, bytes([code]))
        os._exit(0)
    os.close(write_fd)
    os.waitpid(pid, 0)
    code = os.read(read_fd, 1)
    os.close(read_fd)
    os.close(fd)
    return code


@pytest.mark.skipif(not is_root() and not landlock_available(),
                    reason="without root the child owns the corpus files; only Landlock (absent "
                           "from this kernel) makes the kernel refuse its writes")
def test_worker_cannot_write_the_corpus_even_past_every_check(corpus_dir):
    """Bypass the gate and DuckDB's allow-list on purpose: the kernel still refuses the write,
    as root by the uid drop (and Landlock), otherwise by Landlock alone: the files are the
    caller's own and RLIMIT_FSIZE 0 does not stop an open with O_TRUNC."""
    from parquet_agent.tools.sandbox import NOBODY

    before = file_hashes(corpus_dir)
    code = _write_attempts_in_hardened_child(
        corpus_dir / "2025-01.parquet", corpus_dir, (NOBODY, NOBODY) if is_root() else None)
    assert code == b"\x00"
    assert file_hashes(corpus_dir) == before


@pytest.mark.skipif(not landlock_available(), reason="this kernel has no Landlock")
def test_landlock_alone_refuses_writes_the_uid_would_allow(tmp_path):
    """No uid drop (as root this child stays uid 0) over a file and folder its uid may write:
    Landlock alone refuses every write, as it must for a non-root caller."""
    target = tmp_path / "own.parquet"
    target.write_bytes(b"PAR1 not really parquet PAR1")
    before = file_hashes(tmp_path)
    code = _write_attempts_in_hardened_child(target, tmp_path, None)
    assert code == b"\x00"
    assert file_hashes(tmp_path) == before


def _reads_in_hardened_child(files, others, drop_to) -> dict[str, str]:
    """Fork, harden like a worker that was given `files`, then read every path past the gate
    and DuckDB's allow-list: raw open() and an unlocked DuckDB connection. For each attempt,
    "read", "nothing" (no bytes, no rows) or the name of the exception it raised."""
    from parquet_agent.tools.sandbox import SandboxLimits, connect, fd_path, harden

    fds = [os.open(f, os.O_RDONLY) for f in files]

    def probe(write_fd: int) -> dict:
        harden({*fds, write_fd}, SandboxLimits(), drop_to)
        con = connect(SandboxLimits())  # no allow-list, external access on: DuckDB tries all
        seen = {}
        for path in [*map(fd_path, fds), *map(str, others)]:
            for how, read in [("open", lambda: open(path, "rb").read(16)),
                              ("duckdb", lambda: con.execute("SELECT content FROM read_blob(?)", [path]).fetchall())]:
                try:
                    seen[f"{how} {path}"] = "read" if read() else "nothing"
                except BaseException as exc:  # noqa: BLE001
                    seen[f"{how} {path}"] = type(exc).__name__
        return seen

    return report_from_child(probe, keep_fds=fds)


@pytest.mark.skipif(not landlock_available(), reason="this kernel has no Landlock")
@pytest.mark.parametrize("as_worker", [True, False], ids=["worker uid", "caller uid"])
def test_worker_reads_only_the_corpus_even_past_every_check(corpus_dir, as_worker):
    """Bypass the gate and DuckDB's allow-list on purpose: the kernel still refuses every read
    outside the snapshot. "caller uid": no uid drop (as root this child stays uid 0), so the
    uid could read everything below and Landlock alone refuses; "worker uid": as nobody when
    root, and the home-like folder is world-readable, so the uid drop alone would not do."""
    import shutil
    import tempfile
    from pathlib import Path

    from parquet_agent.tools.sandbox import NOBODY

    home = Path(tempfile.mkdtemp(prefix="tools-home-"))
    try:
        home.chmod(0o755)
        (home / ".ssh").mkdir(mode=0o755)
        (home / ".ssh" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
        (home / ".netrc").write_text("machine api.example.com password sk-SECRET\n")
        for f in [home / ".ssh" / "id_ed25519", home / ".netrc"]:
            f.chmod(0o644)
        others = [corpus_dir.parent / "outside.parquet", corpus_dir.parent / "secret.csv",
                  home / ".ssh" / "id_ed25519", home / ".netrc",
                  f"/proc/{os.getpid()}/environ", f"/proc/{os.getpid()}/cmdline", "/etc/passwd"]
        for path in others:  # this process reads them all: only the sandbox stands in the way
            assert open(path, "rb").read(1)
        files = sorted(corpus_dir.glob("*.parquet"))
        drop_to = (NOBODY, NOBODY) if as_worker and is_root() else None
        seen = _reads_in_hardened_child(files, others, drop_to)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert "harden" not in seen, seen
    corpus = {k: v for k, v in seen.items() if "/proc/self/fd/" in k}
    assert len(corpus) == 2 * len(files) and set(corpus.values()) == {"read"}, seen
    refused = {k: v for k, v in seen.items() if k not in corpus}
    assert len(refused) == 2 * len(others)
    for attempt, outcome in refused.items():
        # DuckDB finds nothing where the uid cannot even look (nobody in the 0700 test folder)
        expected = {"PermissionError"} if attempt.startswith("open ") else {"IOException", "nothing"}
        assert outcome in expected, (attempt, outcome)


@pytest.fixture(scope="module")
def open_corpus_tools():
    """A corpus the worker uid can traverse: workers inherit the server's locked connection."""
    import shutil
    import tempfile
    from pathlib import Path

    from parquet_agent.corpus.index import build_index
    from parquet_agent.tools import Tools
    from tests.tools.conftest import write_files

    root = Path(tempfile.mkdtemp(prefix="tools-open-"))
    try:
        root.chmod(0o755)
        write_files(root / "corpus")
        build_index(root / "corpus")
        (root / "secret.csv").write_text("api_key\nsk-SECRET-123\n")
        before = file_hashes(root)
        with Tools.open(root / "corpus", "sql+stream", cache="off") as tools:
            yield tools, root
        assert file_hashes(root) == before
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_inherited_locked_connection_holds_too(open_corpus_tools):
    tools, root = open_corpus_tools
    assert tools.sandbox_info()["server"]["corpus_con_inherited"] is True
    healthy(tools)
    for sql, kind in [
        (f"SELECT * FROM read_csv('{root}/secret.csv')", "sql"),
        ("SELECT * FROM glob('/**')", "sql"),
        ("WITH x AS (COPY (SELECT 1) TO '/proc/self/fd/3' (FORMAT parquet, USE_TMP_FILE false)) SELECT 1", "forbidden"),
        ("SELECT current_setting('allowed_paths')", "sql"),
        ("CREATE TABLE t AS SELECT 1", "forbidden"),
    ]:
        result = tools.call("sql", query=sql)
        assert result.error is not None and result.error.kind == kind, (sql, result)
        assert str(root) not in result.model_text()
    healthy(tools)


def test_real_workers_run_unprivileged_with_limits(tight_tools):
    """As root: workers run as nobody. Otherwise: as the caller's own uid (there is no uid to
    drop to), with the same rlimits except the task limit, which would count every process of
    the caller's uid, not the worker's."""
    import threading

    import psutil

    server = psutil.Process(tight_tools.sandbox.server_pid)
    # the server keeps the caller's uid (root only to open the corpus files)
    assert server.uids().real == os.getuid()
    seen = {}
    call = threading.Thread(target=lambda: tight_tools.call(
        "sql", query="SELECT count(*) FROM range(1000000000000) t WHERE hash(t.range) = 7"))
    call.start()
    deadline = time.monotonic() + 30  # a bound only: the spinning child is seen in ms when idle
    while time.monotonic() < deadline and not seen:
        for child in server.children():
            try:
                # the child spinning on the query is hardened; its uid alone does not tell
                # without root (a child just forked has the caller's uid too)
                times = child.cpu_times()
                if times.user + times.system < 0.3:
                    continue
                limits = open(f"/proc/{child.pid}/limits").read()
                seen = {"uids": child.uids(), "gids": child.gids(), "limits": limits}
            except (psutil.NoSuchProcess, FileNotFoundError, ProcessLookupError):
                continue
        time.sleep(0.02)
    call.join()
    assert seen, "no worker seen"
    lines = {line[:26].strip(): line[26:].split() for line in seen["limits"].splitlines()[1:]}
    assert lines["Max address space"][:2] == [str(1536 * 2**20)] * 2
    assert lines["Max file size"][:2] == ["0", "0"]
    assert lines["Max core file size"][:2] == ["0", "0"]
    assert lines["Max cpu time"][0] != "unlimited"
    if is_root():
        assert set(seen["uids"]) == {65534} and set(seen["gids"]) == {65534}
        assert lines["Max processes"][:2] == ["128", "128"]
    else:
        assert set(seen["uids"]) == {os.getuid()} and set(seen["gids"]) == {os.getgid()}
        server_limits = open(f"/proc/{server.pid}/limits").read().splitlines()[1:]
        server_lines = {line[:26].strip(): line[26:].split() for line in server_limits}
        assert lines["Max processes"] == server_lines["Max processes"]


def test_cgroup_status_says_why(tmp_path):
    from parquet_agent.tools.sandbox import cgroup_status

    assert "not a cgroup v2" in cgroup_status(str(tmp_path))
    (tmp_path / "cgroup.controllers").write_text("cpuset io\n")
    assert "cpu, memory, pids" in cgroup_status(str(tmp_path))
    (tmp_path / "cgroup.controllers").write_text("cpu memory pids\n")
    assert cgroup_status(str(tmp_path)).startswith("available but not used")


def test_error_messages_never_show_the_host_folder():
    from parquet_agent.tools.worker import sanitize

    text = 'IO Error: Cannot open file "/srv/corpus/2025-01.parquet" (also /proc/self/fd/7, /proc/9/fd/8)'
    clean = sanitize(text, {7: "2025-01.parquet"}, "/srv/corpus")
    assert "/srv" not in clean and "/proc" not in clean
    assert '"2025-01.parquet"' in clean and "<not allowed>" in clean


def test_an_answer_too_large_for_the_server_is_refused(corpus_dir):
    from parquet_agent.tools import Tools
    from parquet_agent.tools.render import OutputLimits

    unbounded = OutputLimits(max_rows=10**7, max_cell_chars=10**9, max_total_chars=10**10)
    with Tools.open(corpus_dir, "sql", cache="off", output_limits=unbounded) as tools:
        result = tools.call("sql", query="SELECT repeat('x', 1000) FROM range(40000)")
        assert result.error is not None and result.error.kind == "too_large", result.error
        assert tools.call("sql", query="SELECT 1").ok


def test_a_worker_that_cannot_even_start_fails_alone(corpus_dir):
    from parquet_agent.tools import Tools
    from parquet_agent.tools.sandbox import SandboxLimits

    starved = SandboxLimits(address_space_bytes=32 * 2**20)  # far below what is already mapped
    with Tools.open(corpus_dir, "sql", cache="off", limits=starved) as tools:
        result = tools.call("sql", query="SELECT count(*) FROM filings")
        assert result.error is not None and result.error.kind in {"memory", "worker_crashed"}, result
        assert result.to_json()["error"]["message"]
