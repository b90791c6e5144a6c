"""Run folders end to end: freeze, resume refusal, replay, verify, tables, ledgers."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict

import pytest

from parquet_agent.errors import ResumeRefusedError, RunError
from parquet_agent.experiment.run import create_run
from parquet_agent.explore.runs import RunStore
from parquet_agent.store import (
    CaseFailed,
    CaseFinished,
    CaseStarted,
    JudgeAttempt,
    Judgment,
    ModelAttempt,
    ModelTurn,
    RunFinished,
    RunStarted,
    ToolCallEvent,
    code_hash,
)
from tests.store.store_fixtures import (
    SNAPSHOT,
    make_attempt,
    make_config,
    make_frozen,
    make_reply,
)


def play_case(run, question="Q001", model="flash", strategy="sql", *, finish=True, score=80.0,
              usd=0.001, retry=False):
    """Journal one case the way the agent and judge will: raw bodies first, then events."""
    case = f"{question}__{model}__{strategy}"
    j = run.journal(case)
    j.append(CaseStarted(case_id=case, question_id=question, model=model, strategy=strategy,
                         manifest_hash=run.manifest["manifest_hash"]))
    replies = [make_reply(calls=[("sql", {"query": "SELECT 1"})]), make_reply(text="42 [s1:0-10]")]
    for turn, reply in enumerate(replies, 1):
        label = f"{case}/turn-{turn:02d}"
        req = run.raw.write(f"{label}/attempt-1.request.json", f'{{"turn":{turn}}}'.encode())
        resp = run.raw.write(f"{label}/attempt-1.response.json", json.dumps(asdict(reply)).encode())
        if retry and turn == 1:
            j.append(ModelAttempt(label, make_attempt(label, outcome="retry", usd=None)))
        j.append(ModelAttempt(label, make_attempt(label, number=1 + (retry and turn == 1),
                                                          usd=usd)))
        j.append(ModelTurn(turn=turn, label=label, request_path=req, response_path=resp,
                           reply=reply))
        if reply.tool_calls:
            j.append(ToolCallEvent(turn=turn, call_id="call_0", name="sql",
                                   arguments={"query": "SELECT 1"}, ok=True, model_text="[[1]]",
                                   output=[[1]], cache_hit=True, timings={"total_ms": 2.0}))
    if not finish:
        return case
    run.raw.write(f"{case}/judge/attempt-1.request.json", b'{"judge":1}')
    run.raw.write(f"{case}/judge/attempt-1.response.json", b'{"correctness":80}')
    j.append(JudgeAttempt(f"{case}/judge", make_attempt(f"{case}/judge", purpose="judge",
                                                                usd=None)))
    j.append(Judgment(judge="judge", correctness=score, citation_support=score,
                      rationale="ok", scored=score is not None))
    j.append(CaseFinished(status="complete", answer="42", wall_ms=150.0))
    return case


def test_create_freezes_a_manifest_once(tmp_path):
    store = RunStore(tmp_path / "runs")
    config = make_config(tmp_path)
    run = create_run(store, config, make_frozen(), run_id="r1")
    m = json.loads((run.dir / "manifest.json").read_text())
    assert m["schema_version"] == 2 and m["kind"] == "experiment" and m["run_id"] == "r1"
    assert m["created_at"].endswith("Z")
    assert m["config"] == config.to_dict() and m["config_hash"] == config.config_hash()
    assert m["question_ids"] == ["Q001", "Q002"] and m["code_hash"] == "b2:code"
    assert (run.dir / "journal").is_dir() and (run.dir / "raw").is_dir()
    with pytest.raises(RunError, match="already exists"):
        create_run(store, config, make_frozen(), run_id="r1")
    auto = create_run(store, config, make_frozen())
    assert auto.run_id.endswith("-smoke-test")
    assert create_run(store, config, make_frozen()).run_id == auto.run_id + "-2"
    assert len(run.planned_case_ids()) == 2 * 2 * 2


def test_one_writer_per_run_folder_across_processes(tmp_path):
    store = RunStore(tmp_path)
    run = create_run(store, make_config(tmp_path), make_frozen(), run_id="r1")
    code = ("import sys; from parquet_agent.store import RunStore\n"
            "try:\n RunStore(sys.argv[1]).open('r1', writable=True)\n"
            "except Exception as e: print(type(e).__name__, e)\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                         text=True, check=True).stdout
    assert out.startswith("RunError") and "another process" in out
    run.close()
    again = store.open("r1", writable=True)  # free once closed
    again.close()
    assert store.open(run.dir).run_id == "r1"  # by path, read-only
    with pytest.raises(RunError, match="no run 'nope'"):
        store.open("nope")


@pytest.mark.parametrize("change, expected", [
    (lambda c, f: (make_config(c, max_tool_calls=8), f), "config.limits.max_tool_calls: 12 -> 8"),
    (lambda c, f: (make_config(c), f | {"code_hash": "b2:other"}), "code changed"),
    (lambda c, f: (make_config(c), f | {"prompt_hashes": {"agent": "b2:a", "judge": "b2:J"}}),
     "prompt 'judge' changed"),
    (lambda c, f: (make_config(c), f | {"corpus_snapshot": SNAPSHOT | {"files": [
        SNAPSHOT["files"][0], SNAPSHOT["files"][1] | {"content_hash": "xxh3_128:ff"}]}}),
     "corpus file 2025-02.parquet changed (content_hash)"),
    (lambda c, f: (make_config(c), f | {"corpus_snapshot": SNAPSHOT | {"files": SNAPSHOT["files"][:1]}}),
     "corpus file 2025-02.parquet removed"),
    (lambda c, f: (make_config(c), f | {"question_ids": ["Q001", "Q003"]}), "removed ['Q002']"),
    (lambda c, f: (make_config(c), f | {"package_versions": {"duckdb": "2.0.2"}}),
     "package duckdb: 2.0.1 -> 2.0.2"),
])
def test_resume_is_refused_naming_the_change(tmp_path, change, expected):
    store = RunStore(tmp_path / "runs")
    create_run(store, make_config(tmp_path), make_frozen(), run_id="r1").close()
    run = store.open("r1", writable=True)
    run.check_resume(make_frozen(), make_config(tmp_path))  # same inputs: fine
    config, frozen = change(tmp_path, make_frozen())
    with pytest.raises(ResumeRefusedError) as info:
        run.check_resume(frozen, config)
    assert expected in str(info.value) and "new run folder" in str(info.value)


def test_resume_allows_execution_only_changes(tmp_path):
    store = RunStore(tmp_path)
    run = create_run(store, make_config(tmp_path), make_frozen(), run_id="r1")
    touched = SNAPSHOT | {"taken_at": "later", "files": [f | {"mtime_ns": 9} for f in SNAPSHOT["files"]]}
    run.check_resume(make_frozen(snapshot=touched), make_config(tmp_path, case_workers=1, data_workers=2))


def test_replay_gives_saved_turns_and_tool_results(tmp_path):
    run = create_run(RunStore(tmp_path), make_config(tmp_path), make_frozen(), run_id="r1")
    case = play_case(run, finish=False)
    run.journal(case).append(CaseFailed(error_type="ModelCallError", message="boom", retryable=True))
    assert run.completed_cases() == set()
    replay = run.replay(case)
    assert [t.turn for t in replay.turns] == [1, 2] and not replay.done
    first = replay.turns[0].reply  # the Reply record itself, typed all the way down
    assert first == make_reply(calls=[("sql", {"query": "SELECT 1"})])
    assert first.message.provider_data == {"google": {"sig": "abc"}}
    assert replay.tool_results[(1, "call_0")].model_text == "[[1]]"
    assert run.read_raw(replay.turns[1].request_path) == b'{"turn":2}'
    run.close()
    # a resumed session appends to the same journal, seq continuing
    run = RunStore(tmp_path).open("r1", writable=True)
    run.journal(case).append(CaseFinished(status="incomplete", reason="budget"))
    assert run.completed_cases() == {case}
    assert [e.seq for e in run.case_events(case)] == list(range(len(run.case_events(case))))


def test_verify_finds_tampering_in_manifest_raw_and_journal(tmp_path):
    run = create_run(RunStore(tmp_path), make_config(tmp_path), make_frozen(), run_id="r1")
    case = play_case(run)
    report = run.verify()
    assert report.ok and report.bodies_checked == 6, report
    ghost = make_attempt("Q002__flash__sql/turn-01")  # refers to raw files never written
    run.journal("Q002__flash__sql").append(ModelAttempt(ghost.label, ghost))
    assert "refers to raw/Q002__flash__sql/turn-01/attempt-1.request.json" in str(run.verify())
    run.close()
    manifest = run.dir / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"max_tool_calls": 12', '"max_tool_calls": 99'))
    import gzip

    journal = run.dir / "journal" / f"{case}.jsonl.gz"  # sealed: the case finished
    lines = gzip.decompress(journal.read_bytes()).splitlines(keepends=True)
    journal.write_bytes(gzip.compress(b"".join(lines[:2] + lines[3:])))  # an event removed
    report = RunStore(tmp_path).open("r1").verify()
    assert not report.ok
    text = str(report)
    assert "manifest.json was changed" in text and "line 3" in text and "chain" in text


def test_tables_summary_and_ledgers(tmp_path):
    store = RunStore(tmp_path / "runs")
    run = create_run(store, make_config(tmp_path), make_frozen(), run_id="r1")
    rj = run.run_journal()
    rj.append(RunStarted(session=0, pid=1))
    rj.append(ModelAttempt("health/flash", make_attempt("health/flash", purpose="health",
                                                               usd=0.0001)))
    play_case(run, "Q001", "flash", "sql", score=100.0, retry=True)
    play_case(run, "Q002", "flash", "sql", score=50.0)
    play_case(run, "Q001", "flash", "sql+stream", score=None)  # unscored: missing, never 0
    play_case(run, "Q002", "base", "sql", finish=False)
    rj.append(RunFinished(session=0, wall_ms=1234.0, peak_rss_bytes=300 << 20))

    cases = run.cases_df().set_index("case_id")
    planned = run.planned_case_ids()  # never-started cases of the frozen grid are rows too
    assert len(cases) == len(planned) == 8 and set(cases.index) == set(planned)
    assert (cases.loc[cases["sessions"] == 0, "status"] == "incomplete").all()
    assert cases.loc["Q001__flash__sql", "api_attempts"] == 4  # 2 turns + 1 retry + judge
    assert cases.loc["Q001__flash__sql", "cost_unknown_attempts"] == 2  # retry and judge
    assert cases.loc["Q002__base__sql", "status"] == "incomplete"
    assert cases["correctness"].isna().sum() == 2 + 4  # unscored + unjudged + never started

    summary = run.summary().set_index(["model", "strategy"])
    row = summary.loc[("flash", "sql")]
    assert row["cases"] == 2 and row["complete"] == 2 and row["correctness"] == 75.0
    assert row["correctness_low"] <= 75.0 <= row["correctness_high"]
    assert row["processed"] == 2 and row["cache_hits"] == 2 and row["latency_p50_ms"] == 150.0
    assert summary.loc[("flash", "sql+stream"), "scored"] == 0
    assert summary.loc[("base", "sql"), "completion_rate"] == 0.0

    attempts = run.attempts_df()
    assert set(attempts["purpose"]) == {"answer", "judge", "health"}
    assert len(run.tool_calls_df()) == 4
    ledger = run.ledger()
    assert (ledger["category"] == "retries").sum() == 1
    assert ledger["cost_usd"].isna().sum() == (~ledger["cost_known"]).sum() == 4

    figures = run.run_figures()
    assert figures["wall_ms"] == 1234.0 and figures["peak_rss_bytes"] == 300 << 20
    activity = run.fold().activity()
    assert activity["api_attempts"] == len(attempts) == 13
    assert activity["cost_usd_known"] == pytest.approx(0.0001 + 8 * 0.001)

    # an aborted run and a development run without a manifest still count in the store ledger
    aborted = create_run(store, make_config(tmp_path), make_frozen(), run_id="r2")
    play_case(aborted, finish=False)
    dev = tmp_path / "runs" / "dev" / "journal"
    dev.mkdir(parents=True)
    (dev / "Q9__m__sql.jsonl").write_text(json.dumps({
        "schema_version": 1, "event": "model_attempt", "at": "2026-11-30T07:00:00.000000Z",
        "seq": 0, "label": "x", "attempt": asdict(make_attempt(usd=0.5))}) + "\n")
    listing = store.list().set_index("run_id")
    assert listing.loc["r1", "status"] == "partial" and listing.loc["dev", "status"] == "no manifest"
    assert listing.loc["r2", "api_attempts"] == 2
    totals = store.ledger_totals().set_index(["run_id", "category"])
    assert totals.loc[("dev", "answer"), "cost_usd"] == 0.5
    assert totals.loc[("r1", "judge"), "cost_unknown_attempts"] == 3
    assert len(store.ledger()) == 13 + 2 + 1


def test_code_hash_follows_source_content_only(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "a.py").write_text("x = 1\n")
    (pkg / "sub" / "b.py").write_text("y = 2\n")
    (pkg / "notes.txt").write_text("ignored")
    first = code_hash(pkg)
    (pkg / "notes.txt").write_text("still ignored")
    assert code_hash(pkg) == first
    (pkg / "sub" / "b.py").write_text("y = 3\n")
    assert code_hash(pkg) != first
    assert code_hash().startswith("b2:")


def test_large_tool_texts_are_offloaded_and_finished_journals_sealed(tmp_path):
    run = create_run(RunStore(tmp_path), make_config(tmp_path), make_frozen(), run_id="r1")
    case = "Q001__flash__sql"
    text = json.dumps({"source_id": "s1", "text": "Revenue was $1,577 million. " * 200})
    j = run.journal(case)
    j.append(CaseStarted(case_id=case, question_id="Q001", model="flash", strategy="sql"))
    j.append(ToolCallEvent(turn=1, call_id="call/1", name="read_filing", arguments={}, ok=True,
                           model_text=text, output={"rows": list(range(10))}))
    j.append(ToolCallEvent(turn=1, call_id="call_2", name="sql", arguments={}, ok=True,
                           model_text="short"))
    on_disk = [json.loads(line) for line in j.path.read_text().splitlines()]
    assert on_disk[1]["model_text"] is None and on_disk[1]["offloaded"].startswith("raw/Q001")
    assert on_disk[2]["model_text"] == "short" and on_disk[2]["offloaded"] is None
    assert run.replay(case).tool_results[(1, "call/1")].model_text == text
    assert run.case_events(case)[1].payload.output == {"rows": list(range(10))}

    j.append(CaseFinished(status="complete", answer="x"))
    journal_dir = run.dir / "journal"
    assert not (journal_dir / f"{case}.jsonl").exists()
    assert (journal_dir / f"{case}.jsonl.gz").exists()
    assert run.completed_cases() == {case}
    assert run.cases_df().set_index("case_id").loc[case, "status"] == "complete"
    # a batch judgment appends to a sealed journal: it is unsealed, appended, seq continuing,
    # and committed and sealed again (the run journal's record covers every line)
    j.append(Judgment(judge="judge", correctness=10.0, citation_support=None, rationale="r",
                      scored=True))
    assert [e.seq for e in run.case_events(case)] == [0, 1, 2, 3, 4]
    assert (journal_dir / f"{case}.jsonl.gz").exists() and run.verify().ok
    sealed = [e.payload for e in run.run_events() if e.event == "case_sealed"]
    assert [(s.case_id, s.lines) for s in sealed] == [(case, 4), (case, 5)]
    run.close()
    assert RunStore(tmp_path).open("r1").replay(case).judgment.correctness == 10.0


def test_run_compare_pairs_cases_with_an_older_run(tmp_path):
    from parquet_agent.cli.experiment import demo_config
    from parquet_agent.experiment.runner import Experiment
    from tests.harness_corpus import make_harness_corpus

    corpus = make_harness_corpus(tmp_path / "corpus")
    old = Experiment(demo_config(corpus, tmp_path / "runs"), progress=False).run()
    new = Experiment(demo_config(corpus, tmp_path / "runs"), progress=False).run()
    comparison = new.compare(old.dir)
    assert comparison.warnings == ()  # same prompts, tools, corpus and config
    overall = comparison.by_cell.set_index(["model", "strategy"]).loc[("(all)", "(all)")]
    assert overall["cases"] == 6 and overall["regressed"] == 0


def test_the_core_run_is_small_and_the_experiment_keeps_its_bookkeeping():
    """Issue 26 item 1: the run-folder core a writer uses has about ten public names; an
    experiment's case bookkeeping is `ExperimentRun`'s, not every kind's."""
    from parquet_agent.experiment.run import ExperimentRun
    from parquet_agent.store import Run

    core = {n for n in dir(Run) if not n.startswith("_")}
    assert core == {"JOURNAL_FAMILIES", "case_events", "case_ids", "check_resume", "close",
                    "journal", "kind", "manifest", "raw", "record_commitments", "run_id",
                    "verify"}
    bookkeeping = {"all_events", "completed_cases", "failed_cases", "read_raw", "replay",
                   "run_events", "run_journal"}
    assert bookkeeping <= {n for n in dir(ExperimentRun) if not n.startswith("_")}
