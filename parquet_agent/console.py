"""Terminal plumbing shared by the commands: what to do when the reader of stdout goes away,
and progress lines for long loops."""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO


def stdout_closed() -> int:
    """After the reader of stdout went away (`parquet-agent tool --batch ... | head`): point
    stdout at /dev/null so the interpreter's final flush cannot raise again (no traceback, no
    "Exception ignored"), and return 141, the status of a process ended by SIGPIPE, so a shell
    pipeline still sees what happened."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 141


class CountLines:
    """`progress(done, total, what)` as lines on stderr: `<prefix>: 3/16 judged (what)`, the
    first and the last always, at most one a second between, so a long loop shows it is alive
    without flooding a log."""

    def __init__(self, prefix: str, verb: str, *, every_s: float = 1.0,
                 stream: TextIO | None = None):
        self.prefix, self.verb, self.every_s = prefix, verb, every_s
        self.stream = stream if stream is not None else sys.stderr
        self._last = -every_s

    def __call__(self, done: int, total: int, what: str = "") -> None:
        now = time.monotonic()
        if 0 < done < total and now - self._last < self.every_s:
            return
        self._last = now
        detail = f" ({what})" if what else ""
        print(f"{self.prefix}: {done}/{total} {self.verb}{detail}", file=self.stream, flush=True)
