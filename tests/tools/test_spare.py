"""Pre-forked workers: the next call's child is forked and hardened before its call exists.
Isolation must be exactly that of a child forked per call: one fresh child per call, confined
before it ever sees untrusted input, and a lost spare costs nothing but a direct fork."""

from __future__ import annotations

import os
import signal
import time

import psutil
import pytest

from parquet_agent.tools import Tools
from parquet_agent.tools.sandbox import landlock_abi
from tests.tools.conftest import is_root, stem


def _idle_children(tools: Tools) -> list[psutil.Process]:
    """The server's live children once only the waiting spare is left: the child that served
    the last call may still be exiting (under load it was seen next to the spare). The
    deadline only bounds a stuck server."""
    server = psutil.Process(tools.sandbox.server_pid)
    deadline = time.monotonic() + 30  # a bound only: forking and hardening under load
    kids: list[psutil.Process] = []
    while time.monotonic() < deadline:
        kids = []
        for p in server.children():
            try:
                if p.status() != psutil.STATUS_ZOMBIE:
                    kids.append(p)
            except psutil.NoSuchProcess:  # exited between the listing and the look
                pass
        if len(kids) == 1:
            return kids
        time.sleep(0.01)
    return kids


def _no_new_privs(pid: int) -> bool:
    with open(f"/proc/{pid}/status") as f:
        return "NoNewPrivs:\t1" in f.read()


def _dropped(pid: int) -> bool:
    """The last rlimit (no file writes) is set and, as root, the uid dropped to nobody."""
    with open(f"/proc/{pid}/limits") as f:
        no_writes = any(line.startswith("Max file size") and line[26:].split()[0] == "0"
                        for line in f)
    return no_writes and (not is_root() or psutil.Process(pid).uids().real == 65534)


def _wait_hardened(tools: Tools, spare: psutil.Process) -> None:
    """Wait until the spare has hardened itself: it is found as soon as it is forked, and
    without root its uid does not tell. no_new_privs comes after the rlimits and the uid drop;
    when the server itself already has it (inherited), wait for those instead."""
    hardened = _dropped if _no_new_privs(tools.sandbox.server_pid) else _no_new_privs
    deadline = time.monotonic() + 30  # a bound only: forking and hardening under load
    while not hardened(spare.pid):
        assert time.monotonic() < deadline, "the spare never hardened"
        time.sleep(0.005)


@pytest.fixture
def fresh_tools(corpus_dir):
    with Tools.open(corpus_dir, "sql+stream", cache="off") as t:
        yield t


def test_every_call_gets_its_own_child(fresh_tools):
    workers = [fresh_tools.call("sql", query=f"SELECT {i}").worker_id for i in range(6)]
    assert len(set(workers)) == 6 and all(w and w.startswith("w") for w in workers)


def test_the_waiting_spare_is_already_confined(fresh_tools):
    fresh_tools.call("sql", query="SELECT 1")
    (spare,) = _idle_children(fresh_tools)
    _wait_hardened(fresh_tools, spare)
    # /proc/PID/limits, not prlimit(2): a confined, non-dumpable child refuses the latter
    with open(f"/proc/{spare.pid}/limits") as f:
        soft = {line[:26].strip(): line[26:].split()[0] for line in f if line.startswith("Max")}
    assert soft["Max file size"] == "0"
    assert soft["Max address space"] == str(fresh_tools.limits.address_space_bytes)
    assert soft["Max cpu time"] != "unlimited"
    if is_root():
        assert spare.uids().real == 65534 and spare.uids().effective == 65534
    else:  # no uid to drop to: the caller's own, with the same rlimits
        assert set(spare.uids()) == {os.getuid()}
    # the spare holds no standard input or output of the server: only its two pipes, the files
    # and, under Landlock, the handle that keeps its own cgroup file readable for DuckDB
    links = _settled_fd_links(spare.pid)
    pinned = [link for link in links if link.startswith("/proc/")]
    assert pinned == ([f"/proc/{spare.pid}/cgroup"] if landlock_abi() else [])
    assert len(links) - len(pinned) <= 3 + 2 + len(fresh_tools.snapshot.files)


def _settled_fd_links(pid: int) -> list[str]:
    """The spare's descriptors once Landlock is in place (it comes after no_new_privs): the
    ruleset closed and, under Landlock, the cgroup handle open."""
    deadline = time.monotonic() + 30  # a bound only: forking and hardening under load
    while True:
        try:
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except FileNotFoundError:  # a descriptor closed while we looked
            links = ["landlock: not settled"]
        if not any("landlock" in link for link in links) and (
                not landlock_abi() or any(link.startswith("/proc/") for link in links)):
            return links
        assert time.monotonic() < deadline, links
        time.sleep(0.005)


def test_a_lost_spare_costs_only_a_direct_fork(fresh_tools):
    fresh_tools.call("sql", query="SELECT 1")
    (spare,) = _idle_children(fresh_tools)
    os.kill(spare.pid, signal.SIGKILL)
    deadline = time.monotonic() + 30  # dead: a zombie until the server reaps it at dispatch
    while spare.is_running() and spare.status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    result = fresh_tools.call("sql", query="SELECT 42 AS answer")
    assert result.ok and result.output["rows"] == [[42]]
    assert result.worker_id != f"w{spare.pid}"


def test_with_a_skipping_index_the_server_stays_single_threaded_and_children_inherit_duckdb(
        tmp_path):
    # the word summary's reader once started Arrow I/O threads in the server: its children
    # could then not inherit the warmed DuckDB connections and made their own on every call
    from parquet_agent.corpus.index import build_index
    from parquet_agent.corpus.skipindex import build_skip_index
    from tests.tools.conftest import write_files

    corpus = tmp_path / "corpus"
    write_files(corpus)
    build_index(corpus)
    build_skip_index(corpus)
    with Tools.open(corpus, "sql+stream", cache="off") as tools:
        info = tools.sandbox_info()
        assert info["skip_index"] == "ok"
        assert info["server"]["threads"] == 1
        assert info["server"]["corpus_con_inherited"] is True
        assert info["server"]["empty_con_inherited"] is True
        assert tools.call("sql", query="SELECT count(*) AS n FROM filings").output["rows"] == [[60]]


def test_a_filing_the_index_does_not_hold_is_not_found_without_a_child(tools, plain_corpus_dir):
    # the judge looks up every span an answer cites, and answers cite filings that do not exist
    absent = "0000009999-25-999999"
    calls = [("read_filing", {"file_stem": absent, "start": 0, "max_chars": 10}),
             ("sql", {"query": "SELECT 1 AS x FROM filing", "file_stem": absent})]
    spare = _idle_children(tools)
    answered = [tools.call(name, **args) for name, args in calls]
    assert [r.worker_id for r in answered] == ["server", "server"]  # the fork server answered
    assert [p.pid for p in _idle_children(tools)] == [p.pid for p in spare]  # no child used
    with Tools.open(plain_corpus_dir, "sql+stream", cache="off") as plain:  # no index: children
        by_child = [plain.call(name, **args) for name, args in calls]
    assert all(r.worker_id.startswith("w") for r in by_child)
    assert [r.error for r in answered] == [r.error for r in by_child]
    assert {r.error.kind for r in answered} == {"not_found"}
    assert tools.call("read_filing", file_stem=stem(3), start=0, max_chars=10).ok
