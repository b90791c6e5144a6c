"""The run-folder core: one folder per run of any kind, append-only journals, raw bytes stored
once, a hashed manifest, verify and resume bookkeeping. It knows no experiment and no audit.

    from parquet_agent.store import RunStore
    store = RunStore("runs")
    run = store.create("experiment", fields, name="smoke")  # manifest: kind, fields, hash
    result = model.complete(request, run.raw)             # run.raw is the RawSink
    run.journal(case_id).append(ModelAttempt(label, attempt))
    run.close()

    run = store.open(run_id, writable=True); run.check_resume(frozen, config_dict)
    run.case_events(case_id)   # a journal's events, in order
    run.verify()               # manifest hash, raw digests, journal damage

`Run` has eleven public names and `JOURNAL_FAMILIES` (see `store.run`); reading every journal at
once is the module-level `store.run.journal_reads(run)`, not a method.

A kind's bookkeeping is the kind's: an experiment's `replay(case_id)` (saved turns and tool
results: resume without new model calls) is on `experiment.run.ExperimentRun`.

Modules: `blobs` (content-addressed raw store), `journal` (journal files; the events and their
codec are `parquet_agent.transcript`'s), `casejournal` (one case's journal: offloading, sealing),
`manifest` (build, hash, freeze, code hash, resume comparison), `run` (`Run`, `journal_reads`),
`runstore` (`RunStore`, `RunEntry`). Durable file primitives are the shared `parquet_agent.files`.
The folder layout is the run-directory contract of DESIGN.md. What a kind of run reads from its
folder is the kind's (`experiment.run`, `audit.run`); analysis over a run's journals is `analysis`.

May import: shared, corpus, models, tools, transcript. Nothing above.
"""

from parquet_agent.store.blobs import RawStats, RawStore, read_raw
from parquet_agent.store.casejournal import CaseJournal
from parquet_agent.store.journal import Journal, JournalRead, read_journal
from parquet_agent.store.manifest import (
    code_hash,
    compare_frozen,
    freeze,
    package_versions,
)
from parquet_agent.store.run import Run, VerifyReport
from parquet_agent.store.runstore import RunEntry, RunStore, kind_of

# the event records are the transcript's; re-exported here, where runs are written and read
from parquet_agent.transcript import (  # noqa: E402
    CaseFailed,
    CaseFinished,
    CaseReplay,
    CaseSealed,
    CaseStarted,
    CorpusDrift,
    Event,
    JudgeAttempt,
    Judgment,
    ModelAttempt,
    ModelTurn,
    RunFinished,
    RunStarted,
    ToolCallEvent,
    attempt_from_dict,
    reply_from_dict,
)

__all__ = [
    "CaseFailed", "CaseFinished", "CaseJournal", "CaseReplay", "CaseSealed", "CaseStarted",
    "CorpusDrift", "Event", "Journal", "JournalRead", "JudgeAttempt", "Judgment", "ModelAttempt", "ModelTurn", "RawStats",
    "RawStore", "Run", "RunEntry", "RunFinished", "RunStarted", "RunStore", "ToolCallEvent", "VerifyReport",
    "attempt_from_dict", "code_hash", "compare_frozen", "freeze", "package_versions",
    "kind_of", "read_journal", "read_raw", "reply_from_dict",
]
