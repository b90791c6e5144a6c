"""Terminal plumbing shared by the commands: what to do when the reader of stdout goes away."""

from __future__ import annotations

import os
import sys


def stdout_closed() -> int:
    """After the reader of stdout went away (`parquet-agent tool --batch ... | head`): point
    stdout at /dev/null so the interpreter's final flush cannot raise again (no traceback, no
    "Exception ignored"), and return 141, the status of a process ended by SIGPIPE, so a shell
    pipeline still sees what happened."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 141
