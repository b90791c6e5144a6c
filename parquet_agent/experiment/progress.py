"""A progress display for runs: cases done, cost so far, and a forecast of total cost and time.

In a Jupyter kernel it is an ipywidgets bar with a text line; elsewhere one line on stderr,
rewritten in place on a terminal and printed every 10% otherwise (logs stay readable). The
forecast extrapolates from the cases measured in this session; cases whose cost is unknown
(`None`) are counted apart, never as zero.
"""

from __future__ import annotations

import sys
import time


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and shell.__class__.__name__ == "ZMQInteractiveShell"


class Progress:
    def __init__(self, total: int, done: int = 0, *, enabled: bool | None = None):
        self.total = total
        self.done = done
        self._start_done = done
        self._t0 = time.perf_counter()
        self.cost = 0.0
        self.unknown_cost_cases = 0
        self._enabled = True if enabled is None else enabled
        self._widget = None
        self._last_decile = -1
        if self._enabled and _in_kernel():
            import ipywidgets as widgets
            from IPython.display import display

            self._bar = widgets.IntProgress(value=done, min=0, max=max(total, 1))
            self._label = widgets.HTML()
            self._widget = widgets.HBox([self._bar, self._label])
            display(self._widget)
        self._show()

    def update(self, cost: float | None) -> None:
        self.done += 1
        if cost is None:
            self.unknown_cost_cases += 1
        else:
            self.cost += cost
        self._show()

    def text(self) -> str:
        measured = self.done - self._start_done
        elapsed = time.perf_counter() - self._t0
        parts = [f"{self.done}/{self.total} cases"]
        known_cases = measured - self.unknown_cost_cases
        if known_cases > 0:  # a sum of known costs only; nothing known is not $0
            parts.append(f"${self.cost:.4f} so far")
        if self.unknown_cost_cases:
            parts.append(f"{self.unknown_cost_cases} with unknown cost" if known_cases > 0
                         else "cost unknown so far")
        if 0 < measured and self.done < self.total:
            remaining = self.total - self.done
            if known_cases > 0:
                parts.append(f"forecast ${self.cost + self.cost / known_cases * remaining:.4f}")
            parts.append(f"~{elapsed / measured * remaining:.0f}s left")
        elif measured:
            parts.append(f"{elapsed:.1f}s")
        return ", ".join(parts)

    def _show(self) -> None:
        if not self._enabled:
            return
        if self._widget is not None:
            self._bar.value = self.done
            self._label.value = self.text()
            return
        if sys.stderr.isatty():
            print("\r" + self.text(), end="", file=sys.stderr, flush=True)
            return
        decile = self.done * 10 // max(self.total, 1)
        if decile != self._last_decile:
            self._last_decile = decile
            print(self.text(), file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._enabled and self._widget is None and sys.stderr.isatty():
            print(file=sys.stderr)
