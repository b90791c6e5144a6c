"""Every exception parquet_agent raises on purpose, in one tree.

    ParquetAgentError                 base: a designed failure with a message that says what to do
    ├── UsageError                    bad input from a person or a config (wrong key, wrong path, ...)
    │   └── ConfigError               an experiment config that does not match the contract
    ├── CorpusError                   a corpus folder that cannot be used as asked
    │   ├── SchemaError               a file misses a required column or has a wrong type
    │   ├── SnapshotChangedError      a snapshotted file changed: the comparison is invalid
    │   ├── StaleIndexError           the sidecar index was built for another snapshot
    │   └── LayoutError               the Parquet layout is not tool-ready (see `corpus prepare`)
    ├── ModelError                    a model call that failed for good (after our own retries)
    │   ├── ModelCallError            carries every attempt record, so nothing recorded is lost
    │   └── ScriptExhaustedError      a ScriptedModel was asked for more replies than it holds
    ├── SandboxUnavailable            the kernel cannot protect the corpus and no one accepted that
    ├── RunError                      a run folder that cannot be started or resumed as asked
    │   ├── MachineFault              the machine stopped the run: disk full, read-only folder,
    │   │                             permission denied, a vanished file (resume once fixed)
    │   ├── ResumeRefusedError        code, config or corpus changed since the run was frozen
    │   ├── RawBodyMissingError       a raw body a journal refers to is not in the raw store
    │   │                             (damaged, cut, truncated or deleted); also a KeyError
    │   └── HealthCheckError          a model failed its health call: the run stopped before
    │                                 any case (`--keep-going` runs anyway)
    ├── ExportError                   a run folder the exporter cannot read
    │   └── CaseRecordError           an exported case record of the wrong shape (names the
    │                                 file and each bad field)
    └── EngineError                   Ray missing or unreachable, no usable node, a node's
                                      corpus differing from the snapshot (names node and file)

    KeyboardInterrupt
    └── RunInterrupted                Ctrl-C during a run; carries the run folder to resume

Tool failures are not exceptions: a tool returns a value with an error kind from the closed set
in `parquet_agent.tools` (`sql`, `timeout`, `memory`, `cpu`, `worker_crashed`, `budget`,
`validation`, ...), which the agent sees. Any other exception escaping the package is a bug.
"""

from __future__ import annotations

import errno
from typing import TypeGuard


class ParquetAgentError(Exception):
    """Base of every designed failure."""


class UsageError(ParquetAgentError):
    """Bad input from a person, a script or a config."""


class ConfigError(UsageError):
    """An experiment config that does not match the contract."""


class CorpusError(ParquetAgentError):
    """A corpus folder that cannot be used as asked."""


class SchemaError(CorpusError):
    """A Parquet file misses a required column or has a wrong type."""


class SnapshotChangedError(CorpusError):
    """A file of the snapshot changed since it was taken; results would not be comparable."""


class StaleIndexError(CorpusError):
    """The sidecar index does not belong to the corpus snapshot in use."""


class LayoutError(CorpusError):
    """The Parquet layout cannot be served by the sandboxed tools."""


class SandboxUnavailable(ParquetAgentError):
    """The tool sandbox cannot protect the corpus here (not root, no Landlock) and running
    unprotected was not accepted explicitly."""


class ModelError(ParquetAgentError):
    """A model call that failed for good."""


class ModelCallError(ModelError):
    """A model call whose attempts all failed; `attempts` holds every attempt record."""

    def __init__(self, message: str, attempts: tuple = (), *, retryable: bool = False,
                 kind: str | None = None):
        super().__init__(message)
        self.attempts = tuple(attempts)
        self.retryable = retryable
        self.kind = kind  # the last failure's kind, e.g. "context_overflow", "http_5xx"


class ScriptExhaustedError(ModelError):
    """A ScriptedModel was asked for a reply its script does not have."""


class RunError(ParquetAgentError):
    """A run folder that cannot be started or resumed as asked."""


class RawBodyMissingError(RunError, KeyError):
    """A raw body is not in the run's raw store (a damaged, cut, truncated or deleted pack): a
    named problem of the run folder, and a KeyError for callers that look bodies up by name."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class MachineFault(RunError):
    """The machine stopped the run (disk full, read-only folder, permission denied, a file that
    vanished): nothing recorded is lost; the message says what to do, then resume.

    `error` is the OSError, `doing` what stopped; `run_dir` (when the run folder exists) is the
    run to resume: `advice(then)` words the same line with another last step (the CLI gives
    the exact resume command)."""

    def __init__(self, error: OSError, doing: str, run_dir=None):
        self.error, self.doing, self.run_dir = error, doing, run_dir
        then = (f"finish it with `--run-dir {run_dir} --resume`" if run_dir is not None
                else "run the same command again")
        super().__init__(self.advice(then))

    def advice(self, then: str) -> str:
        return describe_os_error(self.error, self.doing, then)


_FAULTS = {  # errno -> (what happened, what to do)
    errno.ENOSPC: ("the disk is full", "free space on it"),
    errno.EDQUOT: ("the disk quota is used up", "free space or raise the quota"),
    errno.EROFS: ("the folder is on a read-only file system", "make it writable (or give "
                  "another --run-dir)"),
    errno.EACCES: ("permission was denied", "make the folder writable for this user"),
    errno.EPERM: ("the operation was not permitted", "make the folder writable for this user "
                  "(check `lsattr` for an immutable flag)"),
    errno.ENOENT: ("a file or folder vanished", "put it back"),
    errno.EIO: ("the disk reported an I/O error", "check the disk"),
}

# the machine, not a case: such an error stops the run (resumable) instead of failing a case
MACHINE_ERRNOS = frozenset(_FAULTS) - {errno.ENOENT}


def is_machine_fault(exc: BaseException) -> TypeGuard[OSError]:
    """Whether `exc` is an OSError of the machine (disk full, I/O error, ...; MACHINE_ERRNOS)."""
    return isinstance(exc, OSError) and exc.errno in MACHINE_ERRNOS


def describe_os_error(exc: OSError, doing: str, then: str) -> str:
    """One line: what happened (`doing`, the cause, the file) and what to do (`then`)."""
    cause, fix = _FAULTS.get(exc.errno or 0, (exc.strerror or type(exc).__name__, "fix the cause"))
    where = f" ({exc.filename})" if exc.filename else ""
    return f"{doing} stopped: {cause}{where}. Nothing recorded was lost: {fix}, then {then}"


class ResumeRefusedError(RunError):
    """The frozen inputs of a run differ from the ones given now."""


class HealthCheckError(RunError):
    """A model (or the judge) failed its health call, so no case was dispatched."""


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run. Still a KeyboardInterrupt (a notebook stops as usual); `run_dir`
    names the folder to resume."""

    def __init__(self, run_dir):
        super().__init__(f"interrupted; run folder {run_dir}")
        self.run_dir = run_dir


class ExportError(ParquetAgentError):
    """A run folder the exporter cannot read."""


class CaseRecordError(ExportError):
    """A case record (`cases/<id>.json`) that does not validate as a `CaseRecord`: the message
    names the file and each bad field's path."""


class EngineError(ParquetAgentError):
    """The engine cannot run the cases as asked: Ray missing or unreachable, no usable node,
    or a node whose corpus differs from the run's snapshot (the message names node and file)."""
