"""The local engine: cases on threads in this process (API calls overlap; data tools are
serialised by the driver's own `Tools` gate)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any


class LocalEngine:
    def __init__(self, case_workers: int):
        self.case_workers = case_workers

    def describe(self) -> dict[str, Any]:
        return {"kind": "local", "case_workers": self.case_workers}

    def run_cases(self, run: Any, plan: Any, parts: Any, todo: list[tuple[str, str, str]], *,
                  before_case: Any, after_case: Any, progress: Any) -> None:
        def one(item: tuple[str, str, str]) -> tuple[bool, float | None]:
            if not before_case(item):
                return False, None  # not started: the case stays resumable
            cost = plan.run_case(parts, run, item)
            after_case(item)
            return True, cost

        with ThreadPoolExecutor(max_workers=self.case_workers, thread_name_prefix="case") as pool:
            futures = [pool.submit(one, item) for item in todo]
            try:
                for future in as_completed(futures):
                    ran, cost = future.result()
                    if ran:
                        progress.update(cost=cost)
            except BaseException:
                for f in futures:
                    f.cancel()
                raise

    def figures(self) -> dict[str, Any] | None:
        return None  # the run's own figures say it all

    def close(self) -> None:
        pass
