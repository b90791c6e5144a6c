"""How the fork server forks (parquet_agent/tools/forking.py): the raw fork(2) of a process with
one thread, and its memory mapped with huge pages. Both run in a fresh interpreter: the test
process may have threads of its own."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120, check=False)


def test_a_single_threaded_fork_runs_python_in_the_child_and_reports_its_status():
    out = _run("""
        import os, threading
        from parquet_agent.tools.forking import fork_single_threaded
        pid = fork_single_threaded()
        if pid == 0:
            t = threading.Thread(target=lambda: None); t.start(); t.join()  # threads work
            os._exit(7 if os.getppid() > 1 else 1)
        _, status = os.waitpid(pid, 0)
        print(os.WEXITSTATUS(status))
    """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["7"]


def test_with_a_second_thread_it_forks_the_way_python_does():
    # Python's own fork then repairs the child: in it, only the forking thread is alive
    out = _run("""
        import os, threading
        from parquet_agent.tools.forking import fork_single_threaded
        stop = threading.Event()
        threading.Thread(target=stop.wait, daemon=True).start()
        pid = fork_single_threaded()
        if pid == 0:
            os._exit(threading.active_count())
        _, status = os.waitpid(pid, 0)
        stop.set()
        print(os.WEXITSTATUS(status))
    """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "1"


def _thp_enabled() -> bool:
    path = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    return path.exists() and "[never]" not in path.read_text()


@pytest.mark.skipif(not _thp_enabled(), reason="no transparent huge pages on this kernel")
def test_resident_memory_is_mapped_with_huge_pages_and_keeps_its_contents():
    out = _run("""
        import hashlib, os
        from parquet_agent.tools.forking import collapse_resident
        data = bytearray(os.urandom(1024)) * (48 * 1024)  # 48 MiB, resident
        before = hashlib.sha256(data).hexdigest()
        done = collapse_resident()
        huge = sum(int(line.split()[1]) for line in open("/proc/self/smaps")
                   if line.startswith("AnonHugePages:"))
        print(done, huge, hashlib.sha256(data).hexdigest() == before)
    """)
    assert out.returncode == 0, out.stderr
    done, huge_kib, same = out.stdout.split()
    if int(done) == 0:
        pytest.skip("the kernel refused MADV_COLLAPSE (older than 6.1, or no huge page free)")
    assert int(huge_kib) * 1024 >= 16 * 2**20 and same == "True"
