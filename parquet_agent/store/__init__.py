"""The run store: one folder per run, append-only journals, raw bytes stored once, a cost ledger.

    from parquet_agent.store import RunStore, freeze
    store = RunStore("runs")
    run = store.create(config, freeze(question_ids=ids, corpus_snapshot=snap.to_json(),
                                      prompt_hashes=hashes, sandbox_mode=mode))
    result = model.complete(request, run.raw)             # run.raw is the RawSink
    run.journal(case_id).append(ModelAttempt(label, attempt))
    run.close()

    run = store.open(run_id, writable=True); run.check_resume(freeze(...), config)
    run.replay(case_id)        # saved turns and tool results: resume without new model calls
    run.summary(); run.cases_df(); run.attempts_df(); run.tool_calls_df(); run.ledger()
    run.verify()               # manifest hash, raw digests, journal damage

Modules: `blobs` (content-addressed raw store), `journal` (journal files; the events and their
codec are `parquet_agent.transcript`'s), `manifest` (freeze, code hash, resume comparison), `run`
(`Run`), `fold` (journals -> case views and run figures: the one fold), `frames` (DataFrames and
summary, from the fold), `tables` (the frames as Parquet/CSV files: `export --tables`),
`runstore` (`RunStore`), `compare` (two runs paired by case id), `judging` (re-judging a
saved run), `pending` (the run's own judgments awaiting a batch: `[judge] batch = true`). Durable
file primitives are the shared `parquet_agent.files`. The folder layout is the run-directory
contract of DESIGN.md.

Owns the run folder and everything read back from it in one run. May import: every layer below
it (shared, corpus, models, tools, transcript, agent and judge records, `experiment_config`).
Never `report`, `experiment`, `explore` or the CLI.
"""

from parquet_agent.store.blobs import RawStats, RawStore, read_raw
from parquet_agent.store.casejournal import CaseJournal
from parquet_agent.store.journal import Journal, JournalRead, read_journal
from parquet_agent.store.manifest import code_hash, compare_frozen, freeze, package_versions
from parquet_agent.store.run import Run, VerifyReport
from parquet_agent.store.runstore import RunStore

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
    "RawStore", "Run", "RunFinished", "RunStarted", "RunStore", "ToolCallEvent", "VerifyReport",
    "attempt_from_dict", "code_hash", "compare_frozen", "freeze", "package_versions",
    "read_journal", "read_raw", "reply_from_dict",
]
