"""`Auditor.run(dataset, ...) -> AuditReport`: the bounded ReAct loop with its three gates.

    report = Auditor().run("data/sample", run_dir="runs/audit-1")      # offline baseline
    report = Auditor(config, model=my_model, judge=judge).run(folder)

Each step: the model gets the compact state (`state.AuditState.summary`) and replies with its
reasoning, one action and a confidence; the reply is journaled (`step_model`) before anything
runs. The action gate checks the action; a FAIL puts its critique into the state and no tool
runs. Data tools run in the sandboxed workers (`tools.AuditTools`); `write_finding` runs here,
through the finding gate (evidence re-computed in the sandbox); `conclude` goes through the run
gate (coverage, every finding re-verified), whose FAIL either continues the loop with the
critique (`run_policy = "continue"`) or is accepted. Budgets bound steps, tool calls, tokens and
cost. Killed at any point (even kill -9), `run(..., resume=True)` folds the journal back into
the same state and replays a journaled reply instead of calling the model again.

The run folder is the core's (`store.RunStore.create` with kind "audit": the hashed manifest,
the writer lock, the raw store; `audit.run.AuditRun.journal("audit")` appends through the same
writer and chain as an experiment's journals); a CSV or JSON-lines dataset's Parquet snapshot is
written into it just before.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from parquet_agent.audit.config import KNOBS, AuditConfig
from parquet_agent.audit.dataset import Dataset
from parquet_agent.audit.discover import discover
from parquet_agent.audit.discover.scope import tables_of
from parquet_agent.audit.sources import default_lineage
from parquet_agent.audit.events import (AuditFinished, AuditResumed,
                                        AuditStarted, CandidatesFound, ContractChecked,
                                        EvaluationEvent, HistoryChecked, StepDone, StepModel)
from parquet_agent.audit.evidence import compute, proposal_fingerprint, proposal_reads
from parquet_agent.audit.finding import Finding, Proposal, finding_key
from parquet_agent.audit.gates import Gate, GateOutcome
from parquet_agent.audit.history import recheck
from parquet_agent.audit.models import audit_keys, build_auditor_model, build_judge_model
from parquet_agent.audit.prompt import step_request
from parquet_agent.audit.report import AuditReport, write_exports
from parquet_agent.audit.rules import ActionRules, FindingRules, RunRules
from parquet_agent.audit.run import JOURNAL_ID, KIND, AuditRun, open_audit
from parquet_agent.audit.state import AuditState, progress_line, reported_candidates
from parquet_agent.audit.store import FindingsStore
from parquet_agent.audit.taxonomy import derived_severity, settle_severity
from parquet_agent.audit.tools import AuditTools
from parquet_agent.errors import ModelCallError, RunError, UsageError
from parquet_agent.models.protocol import Model, ModelResult
from parquet_agent.store.run import MANIFEST
from parquet_agent.store.runstore import RunStore, check_run_id
from parquet_agent.tools.facade import MAX_ARGUMENT_DEPTH, nesting_exceeds

SCHEMA_VERSION = 1
JOURNAL = "journal/audit.jsonl"
SNAPSHOT_DIR = "snapshot"  # CSV / JSON-lines inputs converted to Parquet
DATA_TOOLS = ("schema_sample", "run_query", "get_stats")
# what hostile arguments can still raise in this process after the gates (a tree too deep for
# Python, arithmetic on values no gate foresaw): the step is refused, never the run
POISON = (RecursionError, ArithmeticError, ValueError)
_TOO_DEEP = (f"the arguments nest more than {MAX_ARGUMENT_DEPTH} levels deep; send one flat JSON "
             "object of strings and numbers")


class Auditor:
    """The data-quality audit agent: `Auditor(config, model=..., judge=..., store=...)
    .run(dataset)` audits a Parquet folder and returns its `AuditReport` (offline baseline when
    no model is configured)."""

    def __init__(self, config: AuditConfig | None = None, *, model: Model | None = None,
                 judge: Model | None = None, store: FindingsStore | str | None = None,
                 progress: Callable[[str], None] | None = None):
        self.config = config or AuditConfig()
        self.model = model
        self.judge = judge
        self.store = store
        self.progress = progress  # gets one line per step (the CLI prints them to stderr)

    def run(self, dataset: str | Path | Dataset, *, run_dir: str | Path | None = None,
            resume: bool = False, lineage: str | None = None) -> AuditReport:
        """Audit `dataset` into `run_dir` (default `runs/audit-<lineage>-<UTC time>`)."""
        name = lineage or self.config.lineage or (
            dataset.lineage if isinstance(dataset, Dataset) else default_lineage(dataset))
        run_dir = Path(run_dir) if run_dir else Path("runs") / (
            f"audit-{_slug(name)}-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}")
        check_run_id(run_dir.name)  # before the snapshot is written into it
        if resume and not ((run_dir / JOURNAL).exists() or (run_dir / MANIFEST).exists()):
            raise UsageError(f"{run_dir}: nothing to resume (no {JOURNAL})")
        if not resume and run_dir.exists() and any(run_dir.iterdir()):
            raise UsageError(f"{run_dir} already holds a run; pass --resume to continue it or "
                             "choose another --run-dir")
        # CSV and JSON lines are snapshotted as Parquet inside the run folder
        ds = dataset if isinstance(dataset, Dataset) else Dataset.open(
            dataset, lineage or self.config.lineage, convert_dir=run_dir / SNAPSHOT_DIR)
        store = _open_store(self.store, run_dir)
        try:
            keys = audit_keys(self.config.model, self.config.judge)
            model = self.model or build_auditor_model(self.config.model, keys)
            judge = self.judge or (build_judge_model(self.config.judge, keys)
                                   if self.config.judge else None)
            config = self.config.sized(len(ds.column_names))
            with _run_folder(run_dir, ds, config, model, store) as run, \
                    AuditTools.open(ds) as tools:
                _Session(config, ds, run, tools, model, judge, store, self.progress).run()
            report = AuditReport.load(run_dir)
            write_exports(report)
            store.index(report)
            return report
        finally:
            store.close()


def _run_folder(run_dir: Path, dataset: Dataset, config: AuditConfig, model: Model,
                store: FindingsStore) -> AuditRun:
    """The audit's run folder, writable and locked: opened when its manifest exists (a resume),
    else created through the core, its manifest naming the lineage's previous complete audit.
    Besides the snapshot, a folder an earlier version left without a manifest (killed before
    writing it) may hold the journal already: it is created around them."""
    if (run_dir / MANIFEST).exists():
        return open_audit(run_dir, writable=True)
    previous = store.previous_run(dataset.lineage, exclude=run_dir.name)
    fields = {"lineage": dataset.lineage, "dataset_root": str(dataset.root),
              "snapshot": dataset.snapshot.to_json(), "config": config.to_json(),
              "model": _model_info(model),
              "previous_run": previous["run_id"] if previous is not None else None}
    runs = RunStore(run_dir.parent, run_type=AuditRun)
    run = runs.create(KIND, fields, run_id=run_dir.name,
                      prepared=(SNAPSHOT_DIR, "journal", "raw", ".lock"))
    assert isinstance(run, AuditRun)
    return run


def _slug(text: str) -> str:
    """A lineage as part of a default run id (letters, digits and ._+- only)."""
    return re.sub(r"[^A-Za-z0-9._+-]+", "-", text).strip("-.") or "data"


def _open_store(store: FindingsStore | str | None, run_dir: Path) -> FindingsStore:
    if isinstance(store, FindingsStore):
        return store.reopen()
    return FindingsStore.open(store or run_dir.resolve().parent / "findings.sqlite")


class _Session:
    """One process's part of one audit run (the loop; the state is the journal's fold)."""

    def __init__(self, config: AuditConfig, dataset: Dataset, run: AuditRun, tools: AuditTools,
                 model: Model, judge: Model | None, store: FindingsStore,
                 progress: Callable[[str], None] | None = None):
        if config.max_steps is None:
            raise ValueError("an audit session runs a sized config (AuditConfig.sized)")
        self.max_steps: int = config.max_steps
        self.config, self.dataset, self.folder, self.run_dir = config, dataset, run, run.dir
        self.tools, self.model, self.store = tools, model, store
        self.progress = progress
        self.raw = run.raw
        self.journal = run.journal(JOURNAL_ID)
        self.state = AuditState.fold(run.case_events(JOURNAL_ID, resolve=False))
        gates = config.gates
        self.action_gate = Gate.build("action", list(gates.action), rules=ActionRules(),
                                      model=model, judge=judge)
        self.finding_gate = Gate.build("finding", list(gates.finding), rules=FindingRules(),
                                       model=model, judge=judge)
        self.run_gate = Gate.build("run", list(gates.run), rules=RunRules(), model=model,
                                   judge=judge)

    def record(self, payload: Any) -> None:
        self.state.feed(self.journal.append(payload).payload)
        if self.progress is not None:
            line = progress_line(payload, self.config.max_steps)
            if line:
                self.progress(line)

    def run(self) -> None:
        if self.state.started is None:
            self._start()
        elif self.state.started.snapshot["snapshot_id"] != self.dataset.snapshot.snapshot_id:
            raise RunError(f"{self.run_dir}: the dataset changed since this audit started "
                           "(another snapshot id); start a new run instead of resuming")
        if self.state.finished:
            if self.state.finished.status != "failed":
                return
            self.record(AuditResumed(self.state.finished.reason))
        if self.state.discovery is None:  # the deterministic candidates, journaled once
            found = discover(self.tools, tables_of(self.dataset))
            self.record(CandidatesFound(found.to_json()))
        self._check_contract()
        while not self._done():
            self._step(self.state.next_step)
        if not self.state.finished:
            self._floor()
            self._finish()

    def _start(self) -> None:
        """The journal's first records, for the previous run the manifest froze (a folder
        killed before them resumes with the dataset its manifest froze, or not at all)."""
        manifest = self.folder.manifest
        if manifest["snapshot"]["snapshot_id"] != self.dataset.snapshot.snapshot_id:
            raise RunError(f"{self.run_dir}: the dataset changed since this audit's manifest "
                           "was written (another snapshot id); start a new run instead")
        previous_id = manifest.get("previous_run")
        self.record(AuditStarted(self.run_dir.name, self.dataset.lineage,
                                 {"snapshot_id": self.dataset.snapshot.snapshot_id,
                                  "rows": self.dataset.snapshot.rows},
                                 self.dataset.describe(), self.config.to_json(),
                                 _model_info(self.model), previous_id))
        findings = self.store.run_findings(previous_id) if previous_id else []
        self.record(HistoryChecked(previous_id, recheck(findings, self.tools)))

    def _check_contract(self) -> None:
        """Every check of the contract through the finding gate, once (a resume skips the
        checks already journaled)."""
        contract = self.config.contract
        if not contract:
            return
        done = {c["check"] for c in self.state.contract}
        for check in contract.checks(self.dataset, datetime.now(timezone.utc)):
            if check.id in done:
                continue
            if check.problem is not None:
                self.record(ContractChecked(check.id, check.description, "not_checked",
                                            check.problem))
                continue
            finding, action, why = self._propose(0, check.arguments)
            evidence = finding.get("evidence") or {}
            if action in ("committed", "updated"):
                status = "violated"
            elif action == "dismissed" and evidence.get("count_sql") and not evidence.get("count"):
                status = "holds"
            else:
                status = "dismissed"
            reason = why or (finding.get("dismissed_reason") if status == "dismissed" else None)
            self.record(ContractChecked(check.id, check.description, status, reason, finding,
                                        action))

    def _done(self) -> bool:
        concluded = self.state.concluded
        if concluded and (concluded["verdict"] != "FAIL" or self.config.run_policy == "accept"):
            return True
        left = self.state.budget_left(self.config)
        spent = any((v := left[k]) is not None and v <= 0 for k in ("tokens", "cost_usd"))
        # a spent token or cost budget stops asking the model at all (each ask would cost more)
        return spent or self.state.next_step > self.max_steps or self.state.finished is not None

    # -- one step -----------------------------------------------------------------------------

    def _step(self, n: int) -> None:
        pending = self.state.pending
        if pending is None or pending.step != n:
            request = step_request(self.state.summary(self.config), n)
            try:
                result = self.model.complete(request, self.raw)
            except ModelCallError as exc:
                self.record(AuditFinished("failed", f"step {n}: the auditor model failed: {exc}",
                                          sum(a.cost.usd is None for a in exc.attempts)))
                return
            self.record(StepModel(**_model_step(n, result)))
            pending = self.state.pending
        assert pending is not None  # the step_model just recorded, or the journaled one
        tool, args = pending.tool, pending.arguments
        if not pending.problem and nesting_exceeds(args, MAX_ARGUMENT_DEPTH):  # an older journal
            pending = dataclasses.replace(pending, problem=_TOO_DEEP)
        if pending.problem or tool is None:  # a reply without a tool always has a problem
            shown = {} if nesting_exceeds(args, MAX_ARGUMENT_DEPTH) else args
            self.record(StepDone(n, tool, shown, "FAIL", False,
                                 critique=pending.problem or "the reply called no tool"))
            return
        try:
            outcome = self._gate(self.action_gate, {
                "tool": tool, "arguments": args, "budget_left": self.state.budget_left(self.config),
                "previous": self.state.calls, "columns": list(self.dataset.column_names),
                "long_text": self._long_text()}, n)
            if outcome.verdict == "FAIL":
                self.record(StepDone(n, tool, args, "FAIL", False, critique=outcome.critique))
                return
            done = self._execute(n, tool, args, outcome)
        except POISON as exc:  # a value the model sees, journaled: a resume never replays it
            done = StepDone(n, tool, args, "FAIL", False, critique=(
                f"this action could not be carried out ({type(exc).__name__}: "
                f"{str(exc)[:300]}); it was refused, nothing was recorded from it"))
        self.record(done)

    def _gate(self, gate: Gate, subject: dict[str, Any], n: int) -> GateOutcome:
        outcome = gate.evaluate(subject, n, self.raw)
        for evaluation in outcome.evaluations:
            self.record(EvaluationEvent(asdict(evaluation)))
        return outcome

    def _long_text(self) -> list[str]:
        long = [c for c, p in self.state.profiles.items()
                if ((p.get("values") or {}).get("mean_length") or 0) > 1000]
        return sorted(set(long) | ({"parsed_md"} if self.dataset.is_filings else set()))

    def _execute(self, n: int, tool: str, args: dict, outcome: GateOutcome) -> StepDone:
        critique = outcome.critique or None
        clean = {k: v for k, v in args.items() if k != "confidence"}
        if tool in DATA_TOOLS:
            call = {"schema_sample": lambda: self.tools.schema_sample(
                        clean.get("n", self.config.sample_rows), clean.get("table")),
                    "run_query": lambda: self.tools.run_query(clean["sql"]),
                    "get_stats": lambda: self.tools.get_stats(clean["column"])}[tool]
            result = call()
            return StepDone(n, tool, args, outcome.verdict, result.ok, result.output,
                            asdict(result.error) if result.error else None, critique,
                            timings_ms=result.timings.total_ms)
        if tool == "write_finding":
            finding, action, why = self._propose(n, clean)
            return StepDone(n, tool, args, outcome.verdict, action in ("committed", "updated"),
                            critique="; ".join(x for x in (critique, why) if x) or None,
                            finding=finding, finding_action=action)
        verdict = self._conclude(n, clean)
        return StepDone(n, tool, args, outcome.verdict, verdict["verdict"] != "FAIL",
                        critique=verdict["critique"] or critique, conclude=verdict)

    def _propose(self, n: int, args: dict, floor: bool = False) -> tuple[dict, str, str | None]:
        proposal, _ = Proposal.from_arguments(args)  # the action gate checked it
        assert proposal is not None
        proposal = dataclasses.replace(proposal, columns=self.dataset.refs(proposal.columns,
                                                                          proposal.view))
        evidence, error = compute(proposal, self.tools)
        try:
            print_ = proposal_fingerprint(proposal, self.tools)
        except ValueError as exc:
            print_, error = "fp:unparsable", error or str(exc)
        derived = derived_severity(proposal.category, evidence.fraction if evidence else None)
        severity, problem = settle_severity(derived, proposal.severity, proposal.severity_reason)
        subject = {"proposal": asdict(proposal), "columns": list(self.dataset.column_names),
                   "severity": severity, "severity_problem": problem, "derived_severity": derived,
                   "is_filings": self.dataset.is_filings,
                   "documented_properties": self.dataset.describe()["documented_properties"],
                   "reads": proposal_reads(proposal, self.tools)}
        if evidence is None:
            subject["evidence_error"] = error
        else:
            subject["evidence"] = {**asdict(evidence), "fraction": evidence.fraction}
        outcome = self._gate(self.finding_gate, subject, n)
        kept = None
        if floor and outcome.verdict == "FAIL" and FindingRules()(subject)[0] != "FAIL":
            # a deterministic candidate the rules hold is not dropped on a model's word alone
            kept = f"{KEPT}: {outcome.critique}"
            outcome = GateOutcome("WARN", outcome.evaluations)
        key = finding_key(self.dataset.lineage, proposal.category, proposal.columns, print_)
        finding = Finding(
            key, self.dataset.lineage, self.dataset.snapshot.snapshot_id, proposal.category,
            proposal.columns, proposal.title, proposal.rationale, severity, derived,
            proposal.severity_reason if severity != derived else None, proposal.predicate,
            proposal.view, print_, evidence or _no_evidence(), n,
            evaluations=outcome.evaluations)
        if outcome.verdict == "FAIL":
            finding = dataclasses.replace(finding, status="dismissed",
                                          dismissed_reason=outcome.critique)
            return finding.to_json(), "dismissed", None
        held = self.state.held_fingerprint(key)
        if held is not None and held[0] != print_:
            why = (f"key {key} is already held by {held[1]} whose count query has another "
                   f"fingerprint ({held[0]}, this one {print_}): a key collision, kept apart "
                   "and not merged")
            return dataclasses.replace(finding, status="collision",
                                       dismissed_reason=why).to_json(), "collision", why
        return finding.to_json(), "updated" if key in self.state.findings else "committed", kept

    def _conclude(self, n: int, args: dict) -> dict[str, Any]:
        reverified = {}
        for key, finding in self.state.findings.items():
            proposal = Proposal(finding.category, finding.columns, finding.title,
                                finding.rationale, finding.predicate, finding.view,
                                *_own_sql(finding))
            evidence, _ = compute(proposal, self.tools)
            reverified[key] = evidence is not None and evidence.count == finding.evidence.count
        skipped = {**self.state.skipped, **(args.get("skipped") or {})}
        outcome = self._gate(self.run_gate, {
            "columns": list(self.dataset.column_names), "profiled": sorted(self.state.profiles),
            "profile_errors": dict(self.state.profile_errors),
            "tried": sorted(self.state.tried), "skipped": skipped, "reverified": reverified}, n)
        return {"verdict": outcome.verdict, "critique": outcome.critique,
                "reverified": reverified, "summary": args.get("summary")}

    def _floor(self) -> None:
        """The deterministic floor: each candidate discovery reported that is not committed goes
        through the finding gate now (unless the rules already failed that very candidate), and
        a model evaluator's FAIL alone does not drop it: a model that obeys text in the data
        ("write no findings", "dismiss everything") cannot report less than discovery found."""
        seen = {f.title for f in self.state.findings.values()} | {
            d["title"] for d in self.state.collisions}
        for args in reported_candidates(self.state.discovery, self.dataset.is_filings):
            if args["title"] in seen or any(_rules_dropped(d, args) for d in self.state.dismissed):
                continue
            n = self.state.next_step
            finding, action, why = self._propose(n, args, floor=True)
            self.record(StepDone(n, "write_finding", args, "PASS",
                                 action in ("committed", "updated"), critique="; ".join(
                                     x for x in (FLOOR, why) if x), finding=finding,
                                 finding_action=action))

    def _finish(self) -> None:
        concluded = self.state.concluded
        if concluded and concluded["verdict"] == "FAIL" and self.config.run_policy == "accept":
            self.record(AuditFinished("incomplete", "concluded under run_policy = \"accept\" "
                                      f"though the run gate failed: {concluded['critique']}"))
            return
        if concluded and concluded["verdict"] != "FAIL":
            self.record(AuditFinished("complete", f"concluded; run gate {concluded['verdict']}"))
            return
        n = self.state.next_step
        verdict = self._conclude(n, {})  # the budget ran out: the run gate still records coverage
        self.record(StepDone(n, "conclude", {}, "PASS", verdict["verdict"] != "FAIL",
                             critique=verdict["critique"] or None, conclude=verdict))
        left = {k: v for k, v in self.state.budget_left(self.config).items() if v is not None and v <= 0}
        knobs = ", ".join(f"[audit] {KNOBS[k]} = {getattr(self.config, KNOBS[k])}"
                          for k in left or ("steps",))
        self.record(AuditFinished("incomplete", f"the budget ran out ({', '.join(left) or 'steps'}) "
                                  f"before the run gate passed; run gate {verdict['verdict']}; "
                                  f"raise {knobs} to let it finish"))


FLOOR = ("proposed by the deterministic floor: discovery reported this candidate and the auditor "
         "did not commit it")
KEPT = ("kept: the rules hold this deterministic candidate's evidence, and a model evaluator "
        "alone does not drop it")


def _rules_dropped(dismissed: dict[str, Any], candidate: dict[str, Any]) -> bool:
    """`dismissed` is this very candidate (same title and SQL) and the rules failed it: proposing
    it again would only repeat that verdict."""
    same = all(dismissed.get(k) == candidate.get(k) for k in ("title", "predicate"))
    return same and any(e["evaluator"] == "rules" and e["verdict"] == "FAIL"
                        for e in dismissed.get("evaluations") or ())


def _own_sql(finding: Finding) -> tuple[str | None, str | None, str | None]:
    if finding.predicate is not None:
        return None, None, None
    ev = finding.evidence
    return ev.count_sql, ev.denominator_sql, ev.examples_sql


def _no_evidence():
    from parquet_agent.audit.finding import Evidence

    return Evidence(None, None, None, 0, 0)


def _model_step(n: int, result: ModelResult) -> dict[str, Any]:
    reply = result.reply
    raw = [p for a in result.attempts for p in (a.request_path, a.response_path) if p]
    known = [usd for a in result.attempts if (usd := a.cost.usd) is not None]
    cost = sum(known) if len(known) == len(result.attempts) else None
    usage = {"input_tokens": reply.usage.input_tokens, "output_tokens": reply.usage.output_tokens}
    problem, tool, args, confidence = None, None, {}, None
    if len(reply.tool_calls) != 1:
        problem = (f"reply with exactly one tool call (this reply had {len(reply.tool_calls)}); "
                   "your text is your reasoning")
    else:
        call = reply.tool_calls[0]
        tool = call.name
        if call.arguments_error:
            problem = f"{call.arguments_error}; send the arguments as one flat JSON object"
        elif nesting_exceeds(call.arguments, MAX_ARGUMENT_DEPTH):
            # journaled without them: encoding (and every later fold) would recurse that deep
            problem = _TOO_DEEP
        else:
            args = dict(call.arguments)
        value = args.get("confidence")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            confidence = float(min(max(value, 0), 1))  # 10**400 is not a float
    return {"step": n, "reasoning": reply.text, "tool": tool, "arguments": args,
            "confidence": confidence, "usage": usage, "cost_usd": cost, "raw": raw,
            "problem": problem}


def _model_info(model: Model) -> dict[str, Any]:
    return {"name": model.name, "provider": model.provider, "model": model.model}

