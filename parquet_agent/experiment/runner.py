"""Run a grid of questions x models x strategies, judge every answer, keep an auditable run folder.

    run = Experiment.from_toml("configs/demo.toml").run()       # progress bar, live cost
    run = Experiment(config).run(run_dir="runs/x", resume=True)  # finish an interrupted run

Order of events in `run`:
1. Preflight: load and sample the questions; snapshot the corpus and check it against the
   corpus folder's own manifest; open one `Tools` per strategy; one recorded health call per
   model and for the judge (purpose `health`, in the run journal, with its cost).
2. Freeze (before the first case): question ids, corpus snapshot, config, code hash, prompt and
   tool-spec hashes, package versions, sandbox mode. A resume whose inputs changed is refused,
   naming the change. A failed health call stops the run here, before any case
   (HealthCheckError naming the model, its URL and the error), unless `keep_going`.
3. Cases run on `case_workers` threads (API calls overlap); data tools are serialised by the
   tools' own pool. Before each case the corpus is checked cheaply: new files are excluded and
   recorded once; a changed or missing snapshotted file stops the run (SnapshotChangedError).
   A circuit breaker per model: after `run_watch.BREAKER_THRESHOLD` cases in a row of one model
   could not reach its server (refused connections, timeouts, 5xx), its remaining cases are not
   started; they stay unstarted, so a resume runs them.
4. Each case: agent loop (journaled turn by turn), then the judge, then `case_finished`. A case
   finished in an earlier session is never run again; an unfinished one replays its saved turns.
   With `[judge] batch = true` the case records `judgment_pending` instead of calling the judge,
   and once the cases are done every waiting answer is judged through the provider's batch API
   (`judge.pending`), waiting at most `batch_wait_s`; still pending then, the run ends saying
   so and a resume (or `parquet-agent judge RUN --batch`) polls the same batch.
5. The run journal gets `run_finished` with wall time and the process tree's peak memory; the
   exports are (re)built when the exporter is installed. Ctrl-C raises `RunInterrupted`
   (a KeyboardInterrupt) that names the run folder.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from parquet_agent.agent.loop import NO_TOOLS, Agent, AgentOutcome, NoTools
from parquet_agent.corpus.questions import QuestionSet, load_questions
from parquet_agent.corpus.snapshot import CorpusSnapshot
from parquet_agent.engine import CaseEngine, open_engine
from parquet_agent.errors import (
    MachineFault,
    RunInterrupted,
    is_machine_fault,
)
from parquet_agent.experiment.config import ExperimentConfig, case_id, load_config
from parquet_agent.experiment.inputs import (checked_snapshot, input_hashes, load_scopes,
                                              prompt_hashes)
from parquet_agent.files import ignore_os_errors
from parquet_agent.judge import Judge, JudgeInput, RubricJudgeModel, citations
from parquet_agent.memory import TreeMemory, frozen_heap
from parquet_agent.models.protocol import (
    GenerationSettings,
    Model,
    RawSink,
    total_cost,
)
from parquet_agent.models.spec import ModelSpec
from parquet_agent.models.transport import ReplaySink
from parquet_agent.experiment.progress import Progress
from parquet_agent.experiment.watch import Breaker, CaseWatch, DriftWatch, health_checks
from parquet_agent.models.batch import Polling
from parquet_agent.store import (
    CaseFailed,
    CaseFinished,
    CaseStarted,
    Judgment,
    ModelAttempt,
    RunFinished,
    RunStarted,
    freeze,
)
from parquet_agent.judge.rejudge import verdict_events
from parquet_agent.experiment.run import ExperimentRun, create_run, open_experiment
from parquet_agent.tools import Tools
from parquet_agent.tools.action_gate import ActionGate
from parquet_agent.transcript import JudgmentPending


MAX_LOOKUPS = 20  # cited spans looked up per answer, for the judge's deterministic checks
MAX_SPAN_CHARS = 4000


def build_model_or_judge(spec: ModelSpec, env: Mapping[str, str] | None,
                         secrets: tuple[str, ...] = ()) -> Model:
    """The model for one `[[models]]` entry or the `[judge]` (`rubric`: the offline judge).
    `secrets`: every key the run knows, kept off disk by this model's recorder too."""
    if spec.provider == "rubric":
        return RubricJudgeModel(name=spec.name)
    from parquet_agent.models import build_model  # the SDKs load only when a run needs them

    return build_model(spec, env=env, secrets=secrets)


class Experiment:
    """One experiment config, ready to run. `env` supplies API keys (default: os.environ)."""

    def __init__(self, config: ExperimentConfig, *, env: Mapping[str, str] | None = None,
                 progress: bool | None = None):
        self.config = config
        self.env = env
        self.progress = progress

    @classmethod
    def from_toml(cls, path: str | Path, **kwargs: Any) -> Experiment:
        """The experiment a TOML config describes (`env`, `progress` as for the constructor)."""
        return cls(load_config(path), **kwargs)

    # -- the whole run --------------------------------------------------------------------------

    def run(self, run_dir: str | Path | None = None, *, resume: bool = False,
            cache_policy: str | None = None, keep_going: bool = False,
            retry_failed: bool = False) -> ExperimentRun:
        """Run (or resume) the grid; return the finished run, read-only.

        `retry_failed` (with `resume`) runs again the cases that finished `failed` (a 401, a
        crash, ...); their earlier attempts stay in the journal and the ledger.

        Raises HealthCheckError (before any case) when a model or the judge fails its health
        call, unless `keep_going`; RunInterrupted on Ctrl-C (its `run_dir` is the folder to
        resume); ResumeRefusedError when a resume's inputs changed.
        """
        config = self.config
        if retry_failed and not resume:
            from parquet_agent.errors import UsageError

            raise UsageError("--retry-failed reruns the failed cases of an existing run: "
                             "use it with --resume --run-dir RUN")
        if cache_policy is not None and cache_policy != config.limits.cache:
            config = replace(config, limits=replace(config.limits, cache=cache_policy))
        questions = load_questions(config.questions)
        question_ids = config.sample.select(questions.ids)
        snapshot = checked_snapshot(Path(config.corpus))
        scopes = load_scopes(config, question_ids, snapshot)
        from parquet_agent.models.factory import known_keys

        keys = known_keys((*config.models, config.judge), self.env)
        models = {spec.name: build_model_or_judge(spec, self.env, keys) for spec in config.models}
        judge_model = build_model_or_judge(config.judge, self.env, keys)
        # one sandbox for the whole grid: one fork server and one data-worker gate, so "one
        # data tool at a time" holds across strategies; each strategy gets a view of it
        reader = Tools.open(config.corpus, "sql+stream", cache=config.limits.cache,
                            data_workers=config.limits.data_workers, snapshot=snapshot,
                            skip_index=config.limits.skip_index,
                            allow_unprotected=config.limits.allow_unprotected_sandbox)
        tools: dict[str, Any] = {s: NoTools() if s == NO_TOOLS else reader.for_strategy(s)
                                 for s in config.strategies}
        engine: CaseEngine | None = None
        try:
            hashes = prompt_hashes(tools) | input_hashes(config)
            # a Ray engine starts its nodes here: each checks its corpus against `snapshot`
            engine = open_engine(config, snapshot, env=self.env)
            frozen = freeze(
                config, question_ids=question_ids, corpus_snapshot=snapshot.to_json(),
                prompt_hashes=hashes,
                # the mode that ran and why (e.g. no delegated cgroup v2 controllers here)
                sandbox_mode=f"{reader.sandbox_mode}; cgroup {reader.sandbox_info()['cgroup']}",
                engine=engine.describe())
            try:
                run, allowed = self._open_run(config, frozen, run_dir, resume)
            except OSError as exc:  # a read-only or full runs folder, no permission
                if resume:
                    raise MachineFault(exc, f"resuming the run {run_dir}", run_dir) from exc
                raise MachineFault(exc, "creating the run folder") from exc
            try:
                with frozen_heap():  # the cases and the exports: their objects only
                    return self._execute(run, config, questions, question_ids, snapshot,
                                         models, judge_model, tools, reader, scopes, engine,
                                         _Session(keep_going, retry_failed, allowed))
            except OSError as exc:  # disk full mid-run, a folder made read-only, ...
                raise MachineFault(exc, f"the run {run.dir}", run.dir) from exc
            finally:
                ignore_os_errors(run.close)
        finally:
            if engine is not None:
                engine.close()
            reader.close()

    def _open_run(self, config: ExperimentConfig, frozen: dict, run_dir: str | Path | None,
                  resume: bool) -> tuple[ExperimentRun, list[str]]:
        """The run folder, and the harmless config changes a resume allows (to record)."""
        if run_dir is None:
            if resume:
                from parquet_agent.errors import UsageError

                raise UsageError("--resume needs --run-dir: the run folder to finish")
            return create_run(config.runs_dir, config, frozen), []
        run_dir = Path(run_dir)
        if resume:
            run = open_experiment(run_dir, writable=True)
            try:
                allowed = run.check_resume(frozen, config.to_dict())
                run.record_commitments()  # what a crash left between a case and its record
                return run, allowed
            except BaseException:
                run.close()
                raise
        return create_run(run_dir.parent, config, frozen, run_id=run_dir.name), []

    def _execute(self, run: ExperimentRun, config: ExperimentConfig, questions: QuestionSet,
                 question_ids: tuple[str, ...], snapshot: CorpusSnapshot,
                 models: dict[str, Model], judge_model: Model, tools: dict[str, Tools],
                 reader: Tools, scopes: dict[str, list[str]] | None, engine: CaseEngine,
                 how: _Session) -> ExperimentRun:
        started = time.perf_counter()
        session = sum(isinstance(e.payload, RunStarted) for e in run.run_events())
        run_journal = run.run_journal()
        run_journal.append(RunStarted(session=session, pid=os.getpid(), resume=session > 0,
                                      engine=engine.describe(),
                                      allowed_changes=how.allowed_changes,
                                      retry_failed=how.retry_failed))
        memory = TreeMemory()
        memory.start()
        status, fault = "finished", False
        try:
            done = run.completed_cases()
            if how.retry_failed:
                done -= run.failed_cases()
            grid = [(q, m, s) for q in question_ids for m in models for s in config.strategies]
            todo = [g for g in grid if case_id(*g) not in done]
            judge_mode = None
            if todo:  # a resume of a finished run makes no inference call at all
                judge_mode = self._health_checks(run, session, config, models,
                                                 config_judge(config, judge_model),
                                                 how.keep_going)
            progress = Progress(total=len(grid), done=len(grid) - len(todo),
                                enabled=self.progress)
            watch = CaseWatch(DriftWatch(snapshot, Path(config.corpus), run_journal),
                              Breaker(run))
            plan = CasePlan(config, questions, scopes, session,
                            run.manifest.get("manifest_hash"), judge_mode)
            parts = CaseParts.build(config, models, judge_model, tools, reader, judge_mode)
            engine.run_cases(run, plan, parts, todo, before_case=watch.before_case,
                             after_case=watch.after_case, progress=progress)
            progress.close()
            if config.judge.batch:  # every answer waiting for the judge, in one batch
                _judge_by_batch(run, config, parts.judge)
        except KeyboardInterrupt as exc:
            status = "interrupted"
            raise RunInterrupted(run.dir) from exc
        except BaseException as exc:  # SnapshotChangedError, a machine fault, any other stop
            status, fault = "error", is_machine_fault(exc)
            raise
        finally:
            memory.stop()
            figures = engine.figures()
            # a Ray run's nodes are not this process's children: their trees' peaks are added
            peak = memory.peak + ((figures or {}).get("nodes_peak_pss_bytes") or 0)
            # on a full disk this record cannot be written either: the original error counts
            ignore_os_errors(lambda: run_journal.append(RunFinished(
                session=session, wall_ms=round((time.perf_counter() - started) * 1000, 1),
                peak_rss_bytes=peak, status=status, engine=figures)))
            if status != "finished" and not fault:  # what happened so far, unfinished cases
                _export_quietly(run.dir)             # marked (a full disk could not take it)
        _export_if_available(run.dir)
        return open_experiment(run.dir)

    def _health_checks(self, run: ExperimentRun, session: int, config: ExperimentConfig,
                       models: dict[str, Model], judge: Judge, keep_going: bool) -> str | None:
        """The checks before the first case (`run_watch.health_checks`); returns how the judge
        is asked for its judgment."""
        return health_checks(run, session, config, models, judge, keep_going)


@dataclass(frozen=True)
class _Session:
    """How this session runs: past a failed health check, rerunning failed cases, and the
    harmless config changes its resume allowed (recorded in `run_started`)."""

    keep_going: bool = False
    retry_failed: bool = False
    allowed_changes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class CasePlan:
    """What every case of a session shares, whichever process runs it (picklable: an engine
    sends it to its nodes)."""

    config: ExperimentConfig
    questions: QuestionSet
    scopes: dict[str, list[str]] | None
    session: int
    manifest_hash: str | None
    judge_mode: str | None = None  # how the judge is asked (negotiated at the health checks)

    def open_parts(self, reader: Tools, env: Mapping[str, str] | None) -> CaseParts:
        """This process's models, judge and strategy views over `reader` (a node's sandbox)."""
        return CaseParts.open(self.config, reader, env, self.judge_mode)

    def run_case(self, parts: CaseParts, run: Any, item: tuple[str, str, str],
                 node: str | None = None) -> float | None:
        return run_grid_case(self, parts, run, item, node)


@dataclass(frozen=True)
class CaseParts:
    """The live objects one process runs cases with: its models, judge and tools."""

    models: dict[str, Model]
    judge: Judge
    tools: dict[str, Any]  # strategy -> Tools view (NoTools for "none")
    reader: Tools

    @classmethod
    def build(cls, config: ExperimentConfig, models: dict[str, Model], judge_model: Model,
              tools: dict[str, Any], reader: Tools, judge_mode: str | None = None) -> CaseParts:
        return cls(models, config_judge(config, judge_model, judge_mode), tools, reader)

    @classmethod
    def open(cls, config: ExperimentConfig, reader: Tools, env: Mapping[str, str] | None,
             judge_mode: str | None = None) -> CaseParts:
        """Models, judge and strategy views over `reader` (a node's own sandbox)."""
        from parquet_agent.models.factory import known_keys

        keys = known_keys((*config.models, config.judge), env)
        models = {spec.name: build_model_or_judge(spec, env, keys) for spec in config.models}
        tools = {s: NoTools() if s == NO_TOOLS else reader.for_strategy(s)
                 for s in config.strategies}
        return cls.build(config, models, build_model_or_judge(config.judge, env, keys), tools,
                         reader, judge_mode)


def config_judge(config: ExperimentConfig, model: Model, output_mode: str | None = None) -> Judge:
    """The run's judge: `model` (its `[judge]`) with the config's attempts and context, asking
    for its judgment as `output_mode` (None: the adapter's strict way)."""
    return Judge(model, max_attempts=config.limits.max_judge_attempts,
                 context_tokens=config.judge.context_tokens, output_mode=output_mode)


def _judge_by_batch(run: ExperimentRun, config: ExperimentConfig, judge: Judge) -> None:
    """`[judge] batch`: every answer awaiting the judge through the provider's batch API,
    waiting at most `batch_wait_s`; what is still pending after that is said on stderr (the
    cases stay awaiting, and a resume picks the same batch up)."""
    from parquet_agent.judge.pending import judge_pending

    result = judge_pending(run, judge, polling=Polling(max_wait_s=config.judge.batch_wait_s))
    if result.pending:
        print(f"parquet-agent: batch judging: {result.summary()}", file=sys.stderr,
              flush=True)


def run_grid_case(plan: CasePlan, parts: CaseParts, run: Any, item: tuple[str, str, str],
                  node: str | None = None) -> float | None:
    """Run one grid cell `(question_id, model, strategy)`; returns its cost (None: unknown).

    `run` is the Run, or an engine's stand-in with the same `journal`, `replay`, `raw` and
    `case_events` (a Ray node forwards every write to the driver's run folder)."""
    q, m, s = item
    config = plan.config
    spec = config.model(m)
    executor = parts.tools[s]
    if plan.scopes is not None and s != NO_TOOLS:
        executor = executor.scoped(plan.scopes[q])
    if config.gates.action and s != NO_TOOLS:  # evaluations go to the case journal
        executor = ActionGate(executor, run.journal(case_id(q, m, s)).append,
                              scoped=plan.scopes is not None)
    agent = Agent(parts.models[m], executor, limits=config.limits.agent_limits(), settings=GenerationSettings(
        temperature=spec.temperature, reasoning_effort=spec.reasoning_effort,
        max_output_tokens=spec.max_output_tokens or 4096))
    return _run_case(run, plan, agent, parts.judge, parts.reader, q, m, s, node)


def _run_case(run: Any, plan: CasePlan, agent: Agent, judge: Judge, reader: Tools,
              question_id: str, model: str, strategy: str,
              node: str | None = None) -> float | None:
    """One case from start (or its saved state) to `case_finished`; returns its cost."""
    questions, session = plan.questions, plan.session
    cid = case_id(question_id, model, strategy)
    journal = run.journal(cid)
    replay = run.replay(cid)
    # paid responses a stopped session recorded but never journaled are replayed, not re-bought
    sink = ReplaySink(run.raw, replay.unclaimed) if replay.unclaimed else run.raw
    t0 = time.perf_counter()
    reference = questions.reference(question_id)
    journal.append(CaseStarted(
        case_id=cid, question_id=question_id, model=model, strategy=strategy,
        manifest_hash=plan.manifest_hash, session=session, node=node,
        question=questions.question(question_id).question,
        reference_answer=reference.reference_answer,
        gold_evidence=[e.to_json() for e in reference.gold_evidence]))
    try:
        outcome = agent.run(questions.question(question_id), case_id=cid, sink=sink,
                            journal=journal, replay=replay)
        if outcome.status == "failed" and outcome.retryable:
            journal.append(CaseFailed("ModelCallError", outcome.error or outcome.reason, True))
            return outcome.cost_usd
        judge_cost: float | None = 0.0
        if outcome.answer is not None:
            judge_cost = _judge_case(sink, journal, judge, reader, questions, question_id, cid,
                                     outcome, replay.judgment, plan.config.judge.batch)
        attempts = sum(isinstance(e.payload, ModelAttempt)  # judge attempts too
                       for e in run.case_events(cid, resolve=False))
        counts = outcome.counts.to_dict() | {"api_attempt_count": attempts}
        journal.append(CaseFinished(
            status=outcome.status, reason=outcome.reason, answer=outcome.answer,
            tool_counts=counts, wall_ms=round((time.perf_counter() - t0) * 1000, 1)))
        if outcome.cost_usd is None or judge_cost is None:
            return None
        return outcome.cost_usd + judge_cost
    except Exception as exc:  # a bug or an unexpected failure: record it, keep the run going
        if is_machine_fault(exc):  # the machine, not the case: stop the run (resumable)
            raise
        journal.append(CaseFailed(type(exc).__name__, str(exc)[:2000], False))
        return None


def _judge_case(sink: RawSink, journal, judge: Judge, reader: Tools, questions: QuestionSet,
                question_id: str, cid: str, outcome: AgentOutcome,
                saved: Judgment | None, by_batch: bool = False) -> float | None:
    """Judge the answer now, or (`by_batch`) record what its batch judgment will need."""
    if saved is not None:  # judged in an earlier session that stopped before case_finished
        return 0.0
    reference = questions.reference(question_id)
    evidence = tuple({"call_id": e.call_id, "name": e.name, "arguments": e.arguments,
                      "output": e.output if e.ok else {"error": e.error_message}}
                     for e in outcome.evidence)
    inp = JudgeInput(
        question=questions.question(question_id).question, candidate_answer=outcome.answer,
        reference_answer=reference.reference_answer,
        gold_evidence=tuple(e.to_json() for e in reference.gold_evidence),
        tool_evidence=evidence, cited_spans=_cited_spans(reader, outcome.answer),
        answerable=reference.answerable)
    if by_batch:  # judged at the end of the run, with every other answer, by one batch
        journal.append(JudgmentPending(label=f"{cid}/judge", cited_spans=list(inp.cited_spans),
                                       answerable=inp.answerable))
        return 0.0
    verdict = judge.judge(inp, sink=sink, label=f"{cid}/judge")
    journal.append_many(verdict_events(verdict, judge.model.name, given=inp))
    return total_cost(verdict.attempts)


def _cited_spans(reader: Tools, answer: str | None) -> tuple[dict, ...]:
    """The corpus text at each span the answer cites (None where the span does not exist)."""
    spans = []
    for stem, start, end in list(dict.fromkeys(citations(answer)))[:MAX_LOOKUPS]:
        text = None
        if 0 <= start < end and end - start <= MAX_SPAN_CHARS:
            result = reader.call("read_filing", file_stem=stem, start=start,
                                 max_chars=end - start)
            if result.ok and result.output.get("end") == end:
                text = result.output.get("text")
        spans.append({"file_stem": stem, "start": start, "end": end, "text": text})
    return tuple(spans)


def _export_quietly(run_dir: Path) -> None:
    """Export a run that stopped early without hiding why it stopped."""
    try:
        _export_if_available(run_dir)
    except Exception as exc:  # noqa: BLE001 - the original error is what the caller must see
        print(f"exports of {run_dir} were not rebuilt ({exc}); run `parquet-agent export "
              f"{run_dir}` after fixing it", file=sys.stderr)


def _export_if_available(run_dir: Path) -> None:
    try:
        from parquet_agent.report.exporter import export_run
    except ModuleNotFoundError:
        return
    export_run(run_dir)
