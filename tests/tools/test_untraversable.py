"""A corpus under a folder the worker uid cannot traverse (issue 14: e.g. /root, mode 0700, as
root). DuckDB canonicalises the /proc/self/fd/N paths as the calling process sees them, so the
server's locked connection refuses them in a child that dropped to nobody; children then lock an
inherited, not yet locked connection themselves instead of building a new database per call
(which made unscoped `sql` ~3x slower there). The allow-list must hold just the same."""

from __future__ import annotations

import os

import pytest

from tests.tools.conftest import is_root, report_from_child


def test_untraversable_corpus_still_inherits_the_connection(tools, corpus_dir):
    info = tools.sandbox_info()["server"]
    assert info["corpus_con_inherited"] is True
    reachable = all(os.stat(p).st_mode & 0o001 for p in [corpus_dir, *corpus_dir.parents])
    if is_root() and not reachable:  # pytest's tmp folders are 0700: nobody cannot traverse
        assert info["corpus_con_locked_in_child"] is True
    result = tools.call("sql", query="SELECT count(*) FROM filings")
    assert result.ok and result.output["rows"] == [[60]]


@pytest.mark.skipif(not is_root(), reason="needs root to drop to a uid that cannot traverse")
def test_a_child_locked_connection_reads_only_the_corpus(corpus_dir):
    """Past the gate on purpose: the connection a child locks itself refuses other files and
    any change of its configuration, as the server-locked one does."""
    from parquet_agent.tools.sandbox import NOBODY, SandboxLimits, connect_corpus, fd_path, harden, lock

    secret = corpus_dir.parent / "secret.csv"
    fd = os.open(corpus_dir / "2025-01.parquet", os.O_RDONLY)
    paths = [fd_path(fd)]
    con = connect_corpus(paths, SandboxLimits(), locked=False)

    def probe(write_fd: int) -> dict:
        harden({fd, write_fd}, SandboxLimits(), (NOBODY, NOBODY))
        lock(con, paths)
        seen = {}
        for name, sql in [("view", "SELECT count(*) FROM filings"),
                          ("secret", f"SELECT * FROM read_csv('{secret}')"),
                          ("fd path", f"SELECT count(*) FROM read_parquet('{paths[0]}')"),
                          ("unlock", "SET enable_external_access = true"),
                          ("relock", "SET allowed_paths = ['/etc/passwd']")]:
            try:
                seen[name] = repr(con.execute(sql).fetchall())
            except Exception as exc:  # noqa: BLE001
                seen[name] = type(exc).__name__
        return seen

    seen = report_from_child(probe, keep_fds=[fd])
    con.close()
    assert seen["view"] == "[(30,)]", seen
    assert seen["fd path"] == "[(30,)]", seen
    assert seen["secret"] == "PermissionException", seen
    assert seen["unlock"] == "InvalidInputException" and seen["relock"] == "InvalidInputException", seen
