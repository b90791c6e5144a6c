"""Process hardening and the locked DuckDB connection of one sandboxed tool call.

Runs inside a freshly forked worker child (see `server.py`), in this order:

1. `harden(keep_fds, limits, drop_to)`: close every inherited descriptor except the corpus files
   (opened read-only by the server) and the result pipe; rlimits for address space, CPU seconds,
   file size 0 (nothing may be written to any file), no core dumps, at most `max_tasks` tasks;
   then, when started as root, drop to an unprivileged uid/gid (default nobody, 65534) and set
   `no_new_privs`; last, where the kernel has Landlock, confine its files (`confine_files`): no
   write anywhere, reads only of the corpus (through the inherited descriptors,
   `/proc/self/fd/N`) and of what the runtime still opens (`_readable_paths`). Even if every
   DuckDB check failed, the kernel refuses the rest. Without root there is no uid drop: the
   child owns the corpus files and may read all the caller can (home, other processes' `/proc`
   entries), so Landlock is then the only kernel layer.
2. `connect_locked(allowed, views)`: the measured connection recipe (notes A.1): 1 thread,
   no async I/O threads, 128 MiB, no spill, no extensions, no replacement scans, exact-file
   allow-list, external access off, configuration locked before any agent SQL runs.
3. `Watchdog`: interrupts the running query at the wall-clock or CPU limit, so the agent gets a
   clean `timeout`/`cpu` error; RLIMIT_CPU (SIGXCPU) and the server's SIGKILL are the backstops.

The DuckDB paths are `/proc/self/fd/N`, so no host path reaches the agent (settings such as
`current_setting('allowed_paths')` show only descriptor numbers).
"""

from __future__ import annotations

import ctypes
import functools
import os
import resource
import signal
import site
import stat
import sysconfig
import threading
import time
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import duckdb

NOBODY = 65534
_PR_SET_NO_NEW_PRIVS = 38
# Landlock (Linux >= 5.13); the syscall numbers are the same on every architecture but alpha.
_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1
_LANDLOCK_ACCESS_FS_READ_FILE = 1 << 2
_LANDLOCK_ACCESS_FS_READ_DIR = 1 << 3
# write_file, remove_dir, remove_file, make_char/dir/reg/sock/fifo/block/sym (ABI 1)
_LANDLOCK_WRITE_ACCESS = 0x1FF2
_LANDLOCK_ACCESS_FS_REFER = 1 << 13  # ABI 2: link or rename into another folder
_LANDLOCK_ACCESS_FS_TRUNCATE = 1 << 14  # ABI 3: truncate(2) and open(O_TRUNC)


@dataclass(frozen=True)
class SandboxLimits:
    """Per-call limits (DESIGN.md: sandboxed workers)."""

    memory_limit: str = "128MiB"  # DuckDB buffer manager
    address_space_bytes: int = 1536 * 1024 * 1024  # RLIMIT_AS
    cpu_seconds: float = 20.0
    wall_seconds: float = 30.0
    max_tasks: int = 128  # RLIMIT_NPROC of the unprivileged uid (cgroup pids.max stand-in)

    def to_json(self) -> dict:
        return dict(self.__dict__)


def harden(keep_fds: set[int], limits: SandboxLimits, drop_to: tuple[int, int] | None) -> None:
    """Confine the current (forked, single-threaded) process. Irreversible. Under Landlock the
    regular files among `keep_fds` (the corpus) are the only data files it can still read."""
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    keep = sorted(set(keep_fds) | {0, 1, 2})
    low = 3
    for fd in keep:
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1
    os.closerange(low, 65536)
    # A write to any file fails with EFBIG instead of killing the worker with SIGXFSZ.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    cpu = int(limits.cpu_seconds) + 1  # the watchdog interrupts at cpu_seconds; this is the backstop
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 2))
    resource.setrlimit(resource.RLIMIT_AS, (limits.address_space_bytes, limits.address_space_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if drop_to is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.max_tasks, limits.max_tasks))
        uid, gid = drop_to
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
        if os.getuid() == 0 or os.geteuid() == 0:  # pragma: no cover - kernel refused silently
            raise RuntimeError("privilege drop failed")
    try:
        _libc().prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass
    abi = landlock_abi()
    if abi:
        confine_files(abi, [fd for fd in keep_fds if stat.S_ISREG(os.fstat(fd).st_mode)])


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def _syscall(what: str, *args) -> int:
    result = _libc().syscall(*args)
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


@functools.cache
def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 where Landlock is missing or disabled."""
    try:
        return _syscall("landlock_create_ruleset", _SYS_LANDLOCK_CREATE_RULESET, None,
                        ctypes.c_size_t(0), ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):  # missing, disabled, or not Linux
        return 0


NO_LANDLOCK_ENV = "PARQUET_AGENT_ASSUME_NO_LANDLOCK"


@dataclass(frozen=True)
class Capabilities:
    """What the kernel layers of the sandbox can do here, as the caller decides it.

    `detect(environ)` reads the effective uid and the Landlock ABI. `PARQUET_AGENT_ASSUME_NO_LANDLOCK=1`
    in `environ` makes detection report no Landlock, so the refusal to run unprotected can be
    tried on a kernel that has it (tests, and an operator who distrusts it); it never weakens
    the workers, which still confine themselves wherever the kernel can."""

    root: bool
    landlock_abi: int

    @classmethod
    def detect(cls, environ: Mapping[str, str] | None = None) -> Capabilities:
        env = os.environ if environ is None else environ
        assume_none = env.get(NO_LANDLOCK_ENV, "").strip() not in ("", "0")
        return cls(root=os.geteuid() == 0, landlock_abi=0 if assume_none else landlock_abi())

    @property
    def protects_corpus(self) -> bool:
        """Whether the kernel keeps a worker from writing the corpus: the uid drop (root) or
        Landlock. Without both, one SQL bug past the gate and DuckDB could empty a file."""
        return self.root or self.landlock_abi > 0

    def mode(self) -> str:
        """The sandbox mode recorded in run manifests."""
        landlock = self.landlock_abi > 0
        mode = "rlimit+watchdog" + ("+setuid" if self.root else "") + ("+landlock" if landlock else "")
        if not self.root:
            return mode + (" (no privilege drop: not root)" if landlock else (
                " (no privilege drop: not root; no Landlock: the kernel does not refuse the worker "
                "reads or writes of the caller's own files)"))
        if not landlock:
            return mode + " (no Landlock: the worker may read every world-readable file)"
        return mode


UNPROTECTED_ADVICE = (
    "run as root (workers then drop to an unprivileged uid), or on a Linux kernel with Landlock "
    "(5.13 or newer, enabled in the LSM list), or accept the risk explicitly with "
    "allow_unprotected=True (Tools.open) / `allow_unprotected_sandbox = true` under [limits]: "
    "the run manifest and report then say UNPROTECTED"
)


def _readable_paths() -> list[str]:
    """What a worker opens by path after it is confined, besides the corpus (found by tracing
    every open of hardened children over the test suite, the demo and the benchmark):
    - the interpreter's library folders: DuckDB imports pandas when a scoped query registers
      its rows, and an import the kernel refuses fails that call with PermissionError;
    - the time-zone data: a TIMESTAMPTZ result becomes a datetime in `zoneinfo`'s UTC;
    - `/proc/self/cgroup` and `/sys/fs/cgroup`: a new DuckDB database (a child that connects
      itself, see `prepare.prepare`) reads its CPU and memory limits and fails if refused.
    """
    paths = sysconfig.get_paths()
    found = [paths["stdlib"], paths["platstdlib"], paths["purelib"], paths["platlib"],
             *site.getsitepackages(), *zoneinfo.TZPATH, "/sys/fs/cgroup"]
    return sorted({os.path.realpath(p) for p in found if os.path.isdir(p)}) + ["/proc/self/cgroup"]


_READABLE_PATHS = _readable_paths()  # once, in the server; /proc/self is opened in the child


class _PathBeneath(ctypes.Structure):  # struct landlock_path_beneath_attr
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def confine_files(abi: int, read_fds: list[int]) -> None:
    """Refuse this process (and any it starts) every filesystem write, and every read but of
    the files open at `read_fds` and of `_READABLE_PATHS`, for good.

    Why writes: without root there is no uid drop, the child owns the corpus files and can
    reopen `/proc/self/fd/N` for writing; RLIMIT_FSIZE 0 stops write(2) but not O_TRUNC
    (measured as non-root: a raw `COPY ... TO '/proc/self/fd/N'` left the corpus file at 0
    bytes). Why reads: DuckDB's allow-list is the only other check, and the uid may read far
    more than the corpus (the caller's ~/.ssh or `/proc/<notebook pid>/environ`; as nobody,
    every world-readable file). Landlock checks the file an open resolves to, so reopening
    `/proc/self/fd/N` (or the corpus file by its host path) still works; folders walked through
    are not checked. A path the uid cannot reach is skipped (it stays unreadable anyway).
    Needs `no_new_privs` first (set by `harden`); raises OSError when the kernel refuses.
    """
    read_dir = _LANDLOCK_ACCESS_FS_READ_FILE | _LANDLOCK_ACCESS_FS_READ_DIR
    handled = _LANDLOCK_WRITE_ACCESS | read_dir
    if abi >= 2:
        handled |= _LANDLOCK_ACCESS_FS_REFER
    if abi >= 3:
        handled |= _LANDLOCK_ACCESS_FS_TRUNCATE
    attr = ctypes.c_uint64(handled)  # struct landlock_ruleset_attr, first field only (ABI 1 size)
    ruleset = _syscall("landlock_create_ruleset", _SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr),
                       ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0))
    try:
        for fd in read_fds:
            _allow(ruleset, fd, _LANDLOCK_ACCESS_FS_READ_FILE)
        for path in _READABLE_PATHS:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                _allow(ruleset, fd, read_dir if stat.S_ISDIR(os.fstat(fd).st_mode) else _LANDLOCK_ACCESS_FS_READ_FILE)
            finally:
                # A rule holds an inode, and /proc makes a new inode for /proc/<pid>/cgroup
                # whenever its dentry was dropped: that descriptor stays open for good.
                if not path.startswith("/proc/"):
                    os.close(fd)
        _syscall("landlock_restrict_self", _SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset),
                 ctypes.c_uint32(0))
    finally:
        os.close(ruleset)


def _allow(ruleset: int, fd: int, access: int) -> None:
    _syscall("landlock_add_rule", _SYS_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset),
             ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH), ctypes.byref(_PathBeneath(access, fd)),
             ctypes.c_uint32(0))


def cgroup_status(root: str = "/sys/fs/cgroup") -> str:
    """Why the cgroup ceiling (2 GiB, no swap, 1 CPU, 128 tasks) is or is not available here.

    Needs a cgroup v2 hierarchy at `root` with the memory, cpu and pids controllers delegated to
    this process's cgroup. Only detection is implemented: with no machine that offers it, a
    cgroup path could not be tested, so workers always run under rlimits plus a watchdog and
    this text is recorded next to the sandbox mode.
    """
    controllers = os.path.join(root, "cgroup.controllers")
    if not os.path.exists(controllers):
        return f"unavailable: {root} is not a cgroup v2 hierarchy (cgroup v1 or none)"
    with open(controllers) as f:
        enabled = set(f.read().split())
    missing = {"memory", "cpu", "pids"} - enabled
    if missing:
        return f"unavailable: cgroup v2 without the {', '.join(sorted(missing))} controller(s)"
    return "available but not used: cgroup placement is not implemented (untestable here)"


def fd_path(fd: int) -> str:
    return f"/proc/self/fd/{fd}"


_BASE_CONFIG: dict[str, str | int | float | list[str]] = {  # duckdb.connect's config type
    "threads": 1,
    "async_threads": 0,  # 2.0 defaults to 8 I/O threads: more VmPeak under RLIMIT_AS (B.6i)
    "temp_directory": "",
    "max_temp_directory_size": "0B",
    "autoload_known_extensions": False,
    "autoinstall_known_extensions": False,
    "allow_community_extensions": False,
    "allow_unsigned_extensions": False,
    "allow_persistent_secrets": False,
    "python_enable_replacements": False,
    "enable_external_file_cache": False,
}


def connect(limits: SandboxLimits) -> duckdb.DuckDBPyConnection:
    """A new in-memory connection with the worker configuration, not yet locked."""
    con = duckdb.connect(":memory:", config={**_BASE_CONFIG, "memory_limit": limits.memory_limit})
    con.execute("SET enable_progress_bar = false")
    return con


def connect_locked(
    allowed: list[str], views: dict[str, str], limits: SandboxLimits
) -> duckdb.DuckDBPyConnection:
    """A new connection that can read exactly `allowed`, locked (order matters, notes A.1)."""
    con = connect(limits)
    for name, select in views.items():
        con.execute(f"CREATE VIEW {name} AS {select}")
    return lock(con, allowed)


def lock(con: duckdb.DuckDBPyConnection, allowed: list[str]) -> duckdb.DuckDBPyConnection:
    """Allow reading exactly `allowed`, then turn external access off and lock the
    configuration for good. DuckDB canonicalises the paths as the calling process sees them,
    so a worker whose uid cannot traverse the corpus folder must lock its own copy."""
    con.execute("SET allowed_paths = " + _sql_list(allowed))
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con


def connect_corpus(paths: list[str], limits: SandboxLimits, views: dict[str, str] | None = None,
                   *, locked: bool = True) -> duckdb.DuckDBPyConnection:
    """A connection that reads exactly `paths`, through the view `filings` (or through `views`,
    name -> SELECT, when given: the audit's `data` and per-file views); with `locked=False` the
    caller must `lock(con, paths)` before any agent SQL runs on it."""
    con = connect(limits)
    for name, select in (views or {"filings": read_parquet_sql(paths)}).items():
        con.execute(f"CREATE VIEW {name} AS {select}")
    return lock(con, paths) if locked else con


def dataset_views(files: dict[str, str], views: dict[str, list]) -> dict[str, str]:
    """Views over named files (`files`: name -> /proc/self/fd path): each view is its parts
    unioned by column name, with two columns added that say where a row comes from: `_file` (the
    file's name) and `_row` (its 0-based row number in that file). A part is a file name, or
    `{"file", "select": [[scan name, view name], ...] | None (all columns as they are),
    "constants": [[name, value], ...], "row": "virtual" | "window"}`: `window` numbers the rows
    with a streaming `row_number()` when the file hides DuckDB's virtual `file_row_number`
    behind a column of that name (one thread keeps the file's order)."""
    def one(part: str | dict) -> str:
        spec: dict[str, Any] = {"file": part} if isinstance(part, str) else part
        name = spec["file"]
        select = spec.get("select")
        columns = ["*"] if select is None else [
            f"{_ident(scan)} AS {_ident(shown)}" for scan, shown in select]
        columns += [f"{_literal(value)} AS {_ident(key)}" for key, value in spec.get("constants") or ()]
        row = "row_number() OVER () - 1" if spec.get("row") == "window" else "file_row_number"
        return (f"SELECT {', '.join(columns)}, {_quote(name)} AS _file, {row} AS _row "
                f"FROM read_parquet({_quote(files[name])})")

    return {view: " UNION ALL BY NAME ".join(one(p) for p in parts) for view, parts in views.items()}


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(value: str | int) -> str:
    return str(int(value)) if isinstance(value, int) else _quote(str(value))


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def read_parquet_sql(paths: list[str]) -> str:
    return f"SELECT * FROM read_parquet({_sql_list(paths)})"


def _sql_list(items: list[str]) -> str:
    # Only our own /proc/self/fd/N paths get here; quote anyway.
    return "[" + ", ".join(_quote(p) for p in items) + "]"


class Watchdog:
    """Interrupt `con` when wall time or process CPU time passes its limit.

    `reason` is None, "timeout" or "cpu" once it fired. Polls every 20 ms: a thread in a forked
    child that exits with os._exit needs no shutdown.
    """

    def __init__(self, limits: SandboxLimits):
        self._limits = limits
        self._con: duckdb.DuckDBPyConnection | None = None
        self._start = time.monotonic()
        self._cpu0 = time.process_time()
        self.reason: str | None = None
        self.phases: dict[str, float] = {}  # phase name -> ms since the previous mark
        self._last = time.perf_counter()
        threading.Thread(target=self._run, daemon=True, name="watchdog").start()

    def mark(self, phase: str) -> None:
        """Record how long the phase that just ended took (benchmarks read these)."""
        now = time.perf_counter()
        self.phases[phase] = round((now - self._last) * 1000, 3)
        self._last = now

    def watch(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con

    def _run(self) -> None:
        while True:
            time.sleep(0.02)
            if time.monotonic() - self._start > self._limits.wall_seconds:
                self.reason = "timeout"
            elif time.process_time() - self._cpu0 > self._limits.cpu_seconds:
                self.reason = "cpu"
            if self.reason:  # keep interrupting: the connection may not exist yet
                con = self._con
                if con is not None:
                    con.interrupt()
