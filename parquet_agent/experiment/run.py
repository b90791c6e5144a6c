"""An experiment's run folder: the run-folder core (`store.Run`) plus what an experiment reads
from it: the fold, the frames, the judgings, the comparison with another experiment.

    run = open_experiment("runs/2026-11-30-smoke")
    run.completed_cases()         case ids whose journal ends the case (`case_finished`)
    run.failed_cases()            those whose latest `case_finished` is `failed` (retryable)
    run.replay(case_id)           CaseReplay: what a resumed agent reuses instead of paying again
    run.run_journal(); run.run_events()   the run-level journal (sessions, health, drift)
    run.all_events(); run.read_raw(path)
    run.summary(); run.cases_df(); run.attempts_df(); run.tool_calls_df(); run.ledger()
    run.fold()                    RunFold: every case's view and the run's figures
    run.rejudge(judge)            judge saved cases again (`judge.rejudge`), nothing overwritten
    run.judgings(); run.set_primary_judge(id); run.judge_agreement()
    run.compare(old)              paired comparison with an older experiment (`analysis.compare`)

A case is done when its journal has `case_finished`; a case with `case_failed` but no
`case_finished` is redone on resume (its successful turns are still replayed).

`create_run(store, config, frozen)` makes a new experiment folder: its manifest holds the config,
its hash and the frozen inputs (`store.manifest.freeze`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from parquet_agent.analysis.agreement import agreement_tables
from parquet_agent.analysis.compare import RunComparison, compare_runs
from parquet_agent.analysis.fold import RunFold, all_case_ids, fold_run, planned_case_ids
from parquet_agent.analysis.frames import (attempts_frame, cases_frame, ledger_frame,
                                           run_figures, summary_frame, tool_calls_frame)
from parquet_agent.analysis.judgments import judgings
from parquet_agent.analysis.listing import experiment_row
from parquet_agent.errors import UsageError
from parquet_agent.experiment.config import ExperimentConfig
from parquet_agent.judge import Judge
from parquet_agent.judge.rejudge import JudgingResult, rejudge, set_primary
from parquet_agent.models.batch import Polling
from parquet_agent.models.protocol import Model
from parquet_agent.store.casejournal import CaseJournal
from parquet_agent.store.journal import RUN_JOURNAL
from parquet_agent.store.manifest import FROZEN_FIELDS, RECORDED_FIELDS
from parquet_agent.store.run import MANIFEST, Run, journal_reads
from parquet_agent.store.runstore import RunStore
from parquet_agent.store.unclaimed import unclaimed_exchanges
from parquet_agent.transcript import CaseFinished, CaseReplay, Event

if TYPE_CHECKING:
    import pandas as pd

KIND = "experiment"


class ExperimentRun(Run):
    """An experiment's run folder; see the module docstring."""

    # -- case bookkeeping (what a resume runs again and replays) ------------------------------

    def run_journal(self) -> CaseJournal:
        """The run-level journal (sessions, health checks, drift), for appending."""
        return self.journal(RUN_JOURNAL)

    def run_events(self) -> tuple[Event, ...]:
        """The run-level journal's events, in order."""
        return self.case_events(RUN_JOURNAL)

    def all_events(self) -> dict[str, tuple[Event, ...]]:
        """Events of every journal (the run journal under `_run`), offloaded texts unresolved."""
        return {cid: read.events for cid, read in journal_reads(self).items()
                if cid not in self.JOURNAL_FAMILIES}

    def failed_cases(self) -> set[str]:
        """Case ids whose latest `case_finished` has status `failed` (what `--retry-failed`
        runs again; their earlier events stay in the journal)."""
        failed = set()
        for cid, events in self.all_events().items():
            finished = [e.payload for e in events if isinstance(e.payload, CaseFinished)]
            if cid != RUN_JOURNAL and finished and finished[-1].status == "failed":
                failed.add(cid)
        return failed

    def completed_cases(self) -> set[str]:
        """Case ids whose journal holds `case_finished` (any status): never run again."""
        return {cid for cid, events in self.all_events().items()
                if cid != RUN_JOURNAL and any(isinstance(e.payload, CaseFinished) for e in events)}

    def replay(self, case_id: str) -> CaseReplay:
        """The saved state of one case: its successful turns in order, tool results by call
        id, latest judgment, and paid responses on disk that no journal line claims yet
        (`store.unclaimed`): what a resumed agent reuses instead of calling a model again."""
        events = self.case_events(case_id)
        replay = CaseReplay.from_events(case_id, events)
        if not replay.sessions:
            return replay
        # a case started before may have stopped between a paid response and its journal line
        return replace(replay, unclaimed=unclaimed_exchanges(self.raw, case_id, events))

    def read_raw(self, path: str) -> bytes:
        """The exact stored bytes of one raw file (a run-relative `raw/...` path)."""
        return self.raw.read(path)

    # -- the experiment's figures -------------------------------------------------------------

    def planned_case_ids(self) -> list[str]:
        """Every case of the frozen grid: question ids x models x strategies."""
        return planned_case_ids(self)

    def all_case_ids(self) -> list[str]:
        """The frozen grid's cases in grid order, then any other journal."""
        return all_case_ids(self)

    def check_resume(self, frozen: Mapping[str, Any],
                     config: ExperimentConfig | Mapping[str, Any] | None = None) -> list[str]:
        """`Run.check_resume` with the config now (an `ExperimentConfig` or its dict)."""
        now = config.to_dict() if isinstance(config, ExperimentConfig) else config
        return super().check_resume(frozen, now)

    def fold(self, *, resolve: bool = False, judge: str | None = None) -> RunFold:
        """Every case folded into its view, and the run's figures (see `analysis.fold`); `judge`
        picks whose judgments count (default: the primary judging)."""
        return fold_run(self, resolve=resolve, judge=judge)

    def ledger(self) -> pd.DataFrame:
        """One row per API attempt (answer, judge, health) with its cost, source and category."""
        return ledger_frame(self)

    def cases_df(self) -> pd.DataFrame:
        """One row per case of the grid: keys, question, reference, answer, scores, rationale,
        tool counts, tokens, cost (NaN if unknown), wall time (see `analysis.frames`)."""
        return cases_frame(self)

    def attempts_df(self) -> pd.DataFrame:
        """One row per API attempt with its role, tokens, timing, cost and raw paths."""
        return attempts_frame(self)

    def tool_calls_df(self) -> pd.DataFrame:
        """One row per tool response (turn, call id, arguments, error, cache, timings)."""
        return tool_calls_frame(self)

    def summary(self, *, seed: int = 0, judge: str | None = None) -> pd.DataFrame:
        """Per model x strategy figures (see `analysis.frames.summary_frame`), with the
        judgments of `judge` (a judging id, "run"; default: the primary one)."""
        return summary_frame(self, seed=seed, fold=self.fold(judge=judge) if judge else None)

    def listing_row(self) -> dict[str, Any]:
        """Its row of `parquet-agent runs` (kind "experiment"; see `analysis.listing`)."""
        return experiment_row(self)

    def run_figures(self) -> dict[str, Any]:
        """summary.json's `run` block (sessions, wall time, peak RSS, health checks, drift)."""
        return run_figures(self)

    def rejudge(self, judge: Judge | Model, *, cases: Iterable[str] | None = None,
                repeat: int = 1, batch: bool = False, primary: bool = False,
                polling: Polling | None = None,
                progress: Callable[[int, int, str], None] | None = None) -> JudgingResult:
        """Judge saved cases again with `judge` (a `Judge`, or a model it wraps), appending
        judgments with their provenance; nothing recorded changes (see `judge.rejudge`)."""
        judge = judge if isinstance(judge, Judge) else Judge(judge)
        return rejudge(self, judge, cases=cases, repeat=repeat, batch=batch, primary=primary,
                       polling=polling or Polling(), progress=progress)

    def judgings(self) -> dict[str, dict[str, Any]]:
        """Every re-judging of this run: id -> judge provenance, created_at, batch."""
        return judgings(self.dir)

    def set_primary_judge(self, judging: str | None) -> None:
        """Make a re-judging's judgments the ones figures use ("run"/None: the config's)."""
        set_primary(self, judging)

    def judge_agreement(self, *, seed: int = 0) -> dict[str, pd.DataFrame]:
        """How far the judges agree, as DataFrames (see `analysis.agreement`)."""
        return agreement_tables(self, seed=seed)

    def compare(self, old: Run | str | Path, *, threshold: float = 50.0,
                seed: int = 0) -> RunComparison:
        """Compare this run with an older experiment, paired by case id (see
        `analysis.compare`); UsageError when `old` is another kind of run."""
        return compare_runs(self, open_experiment(old), threshold=threshold, seed=seed)


def open_experiment(run: Run | str | Path, *, writable: bool = False) -> ExperimentRun:
    """An `ExperimentRun` from a Run or a run folder; UsageError for anything else, naming the
    kind when the folder holds another kind of run (an audit)."""
    if isinstance(run, ExperimentRun):
        return run
    if isinstance(run, Run):
        path = run.dir
    elif isinstance(run, (str, Path)):
        path = Path(run)
    else:
        raise UsageError(f"expected a Run or a run folder path, got {type(run).__name__}")
    if not (path / MANIFEST).is_file():
        raise UsageError(f"{path}: not a run folder (no manifest.json); pass the folder that "
                         "`parquet-agent run` printed, or a Run from Experiment(...).run()")
    opened = ExperimentRun(path, writable=writable)
    if opened.kind != KIND:
        opened.close()
        raise UsageError(f"{path} holds an {opened.kind} run, not an experiment: open it with "
                         f"the {opened.kind}'s tools (parquet_agent.RunStore opens any kind)")
    return opened


def experiment_fields(config: ExperimentConfig,
                      frozen: Mapping[str, Any]) -> dict[str, Any]:
    """An experiment manifest's own fields: the config, its hash and the frozen inputs."""
    missing = [k for k in FROZEN_FIELDS if k not in frozen]
    unknown = [k for k in frozen if k not in FROZEN_FIELDS + RECORDED_FIELDS]
    if missing or unknown:
        raise ValueError(f"frozen inputs: missing {missing}, unknown {unknown}; build them "
                         "with store.manifest.freeze()")
    return {"config": config.to_dict(), "config_hash": config.config_hash(), **frozen}


def create_run(store: RunStore | str | Path, config: ExperimentConfig,
               frozen: Mapping[str, Any], run_id: str | None = None) -> ExperimentRun:
    """A new experiment run folder in `store` (writable, locked), manifest frozen."""
    runs = store if isinstance(store, RunStore) else RunStore(store)
    runs = RunStore(runs.dir, run_type=ExperimentRun)
    run = runs.create(KIND, experiment_fields(config, frozen), name=config.name, run_id=run_id)
    assert isinstance(run, ExperimentRun)
    return run


def experiment_store(runs_dir: str | Path) -> RunStore:
    """A `RunStore` that opens and creates `ExperimentRun`s."""
    return RunStore(runs_dir, run_type=ExperimentRun)


__all__ = ["ExperimentRun", "create_run", "experiment_fields", "experiment_store",
           "open_experiment"]
