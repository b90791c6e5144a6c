"""Engines: where an experiment's cases run. The runner hands its case loop to one.

    engine = open_engine(config, snapshot, env=env)   # config.engine.kind: local | ray
    engine.describe()                                 # recorded in the manifest / run journal
    engine.run_cases(run, plan, parts, todo, before_case=watch.before_case,
                     after_case=watch.after_case, progress=progress)
    engine.close()

`local` (the default) runs cases on `[limits] case_workers` threads in this process with the
driver's own `Tools`. `ray` (`pip install parquet_agent[ray]`, see `engine.ray_engine`) runs
them on long-lived Ray actors, one per node, each with its own sandbox over its own copy of the
corpus; every journal event and raw record still goes to the driver's run folder, so runs look
the same whichever engine made them. Ray is imported only when a Ray engine starts.

`before_case(item)` runs on the driver before a case is started (the corpus drift check) and
says whether to start it at all (False: the model's circuit breaker is open; the case stays
unstarted, so a resume runs it); `after_case(item)` runs on the driver once the case returned
(its journal is then complete in the driver's run folder). See `run_watch.CaseWatch`.

The seam with the runner is the `plan` (`experiment.CasePlan`: picklable, what every case of a
session shares; `plan.open_parts(reader, env)` builds a process's models, judge and tool views
and `plan.run_case(parts, run, item, node)` runs one case against `run` or a stand-in with the
same `journal` / `replay` / `raw` / `case_events`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from parquet_agent.engine.config import ENGINE_KINDS, EngineConfig
from parquet_agent.engine.local import LocalEngine


class CaseEngine(Protocol):
    def describe(self) -> dict[str, Any]: ...

    def run_cases(self, run: Any, plan: Any, parts: Any, todo: list[tuple[str, str, str]], *,
                  before_case: Any, after_case: Any, progress: Any) -> None: ...

    def figures(self) -> dict[str, Any] | None: ...

    def close(self) -> None: ...


def open_engine(config: Any, snapshot: Any, *, env: Mapping[str, str] | None = None) -> CaseEngine:
    """The engine `config.engine` asks for, started (a Ray engine's nodes are up and checked)."""
    if config.engine.kind == "local":
        return LocalEngine(config.limits.case_workers)
    from parquet_agent.engine.ray_engine import RayEngine

    return RayEngine.start(config, snapshot, env=env)


__all__ = ["ENGINE_KINDS", "CaseEngine", "EngineConfig", "LocalEngine", "open_engine"]
