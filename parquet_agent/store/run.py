"""One run folder: its manifest, raw bytes, journals, checkpoints and ledger.

A `Run` comes from `RunStore.create(...)` (writable, manifest frozen) or `RunStore.open(...)`
(read-only unless `writable=True`). A writable Run holds the folder's writer lock until `close()`.

    run.raw                       RawStore: the RawSink for model adapters (`raw/...` paths)
    run.run_id, run.kind          the folder's name; "experiment", "audit", ... (manifest `kind`)
    run.manifest                  the frozen manifest
    run.journal(journal_id)       CaseJournal of one case (`RUN_JOURNAL` for run-level events,
                                  a kind's own journal of `JOURNAL_FAMILIES` with its family):
                                  `.append(payload) -> Event`, `.append_many([...])` (one
                                  fdatasync for several events); large tool texts go to raw/,
                                  a finished case's journal is sealed (gzip)
    run.case_ids()                case ids that have a journal
    run.case_events(case_id)      its events, offloaded texts resolved
                                  (`store.casejournal.resolve_offloaded(event, run.raw)`)
    run.check_resume(frozen, config)   ResumeRefusedError naming what changed
    run.record_commitments()      the `case_sealed` records a crash left out, appended
    run.verify()                  VerifyReport: manifest hash, raw digests, journal damage
    run.close()                   journals, raw store and writer lock released
    journal_reads(run)            journal id -> its journal as read (a read-only Run decodes
                                  each file once while it is unchanged)
    open_run(run_or_path)         a Run from a Run, a run folder or a str path

This is the run-folder core: it knows no experiment and no audit. What a kind of run adds (the
experiment's case bookkeeping, replay, fold, frames and judging: `experiment.run.ExperimentRun`;
the audit's report and findings: `audit.run.AuditRun`) lives with that kind, as a subclass.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self

from parquet_agent.errors import ResumeRefusedError, RunError, UsageError
from parquet_agent.files import WriterLock
from parquet_agent.store.blobs import RawStore
from parquet_agent.store.casejournal import (
    CaseJournal,
    check_case_id,
    resolve_offloaded,
)
from parquet_agent.store.integrity import (
    Journals,
    check_journals,
    judging_journals,
    uncommitted,
)
from parquet_agent.store.journal import RUN_JOURNAL, Journal, JournalRead, read_journal
from parquet_agent.store.manifest import compare_frozen, manifest_hash, read_manifest
from parquet_agent.transcript import CASE_EVENTS, Event, EventFamily

MANIFEST = "manifest.json"
JOURNAL_DIR = "journal"


@dataclass(frozen=True)
class VerifyReport:
    ok: bool
    problems: tuple[str, ...]
    torn_lines: tuple[str, ...]  # journals / packs ending in a torn write (a crash, not tampering)
    bodies_checked: int
    notes: tuple[str, ...] = ()  # what was not checked, and why (never a problem)

    def __str__(self) -> str:
        if self.ok:
            return (f"run verified: manifest and {self.bodies_checked} raw bodies intact"
                    + "".join(f"\n- note: {n}" for n in self.notes))
        return "run verification failed:\n" + "\n".join(f"- {p}" for p in self.problems)


def _file_state(path: Path) -> tuple[int, ...]:
    """Size, mtime and inode of a journal's plain and sealed files (0s where absent)."""
    state: list[int] = []
    for candidate in (path, path.with_name(path.name + ".gz")):
        try:
            st = candidate.stat()
            state += [st.st_size, st.st_mtime_ns, st.st_ino]
        except OSError:
            state += [0, 0, 0]
    return tuple(state)


class Run:
    """A run folder. Construct through `RunStore`; see the module docstring."""

    # journals of journal/ that are not a case's (journal id -> their event family; the
    # audit's `audit`): verified with their own family, never listed as cases
    JOURNAL_FAMILIES: ClassVar[Mapping[str, EventFamily]] = {}

    def __init__(self, run_dir: str | Path, *, writable: bool = False):
        self.dir = Path(run_dir).resolve()
        if not self.dir.is_dir():
            raise RunError(f"{self.dir}: no such run folder")
        self.writable = writable
        self._lock = WriterLock(self.dir) if writable else None
        self._journals: dict[str, CaseJournal] = {}
        self._guard = threading.Lock()
        self._manifest: dict[str, Any] | None = None
        self._manifest_repaired: str | None = None  # read_manifest's note
        self._journal_notes: list[str] = []  # what the last verify() could not check
        # journals read by a read-only Run, by file state: an export reads every journal three
        # times (verify, the fold, the provenance's chain heads) and decodes it once
        self._reads: dict[Path, tuple[tuple[int, ...], JournalRead]] = {}
        # a writer repairs a torn pack tail left by a crash before anything else is written
        self._raw: RawStore | None = RawStore(self.dir, writable=True) if writable else None

    def __repr__(self) -> str:
        return f"Run({str(self.dir)!r})"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def run_id(self) -> str:
        """The run folder's name."""
        return self.dir.name

    @property
    def kind(self) -> str:
        """What kind of run this folder holds: "experiment", "audit", ... (its manifest's
        `kind`; a manifest written before kinds existed is an experiment's)."""
        return str(self.manifest.get("kind", "experiment"))

    @property
    def manifest(self) -> dict[str, Any]:
        """The frozen manifest (RunError when the run was aborted before it was written)."""
        if self._manifest is None:
            path = self.dir / MANIFEST
            if not path.exists():
                raise RunError(f"{self.dir}: no {MANIFEST}; the run was aborted before its "
                               "inputs were frozen. Start a new run folder.")
            try:
                manifest, self._manifest_repaired = read_manifest(path)
            except ValueError as exc:
                raise RunError(f"{path}: does not read as a manifest ({exc}); restore it from "
                               "a copy") from None
            if not isinstance(manifest, dict):
                raise RunError(f"{path}: does not read as a manifest (JSON "
                               f"{type(manifest).__name__}, not an object); restore it from a copy")
            self._manifest = manifest
        return self._manifest

    @property
    def raw(self) -> RawStore:
        """The run's raw store: hand it to models as their RawSink."""
        with self._guard:
            if self._raw is None:
                self._raw = RawStore(self.dir, writable=self.writable)
            return self._raw

    # -- journals -------------------------------------------------------------------------------

    def journal(self, case_id: str) -> CaseJournal:
        """The append-only journal of `case_id` (opened once per Run; thread-safe): a case's,
        the run journal (`RUN_JOURNAL`) or a kind's own (`JOURNAL_FAMILIES`, its family)."""
        if case_id != RUN_JOURNAL:
            check_case_id(case_id)
        if not self.writable:
            raise RunError(f"{self.dir}: opened read-only; open it with writable=True to append")
        with self._guard:  # one Journal per file, even when case workers ask at once
            journal = self._journals.get(case_id)
            if journal is None:
                path = self.dir / JOURNAL_DIR / f"{case_id}.jsonl"
                family = self.JOURNAL_FAMILIES.get(case_id, CASE_EVENTS)
                journal = self._journals[case_id] = CaseJournal(
                    case_id, Journal(path, family=family), lambda: self.raw,
                    lambda: self.journal(RUN_JOURNAL))
        return journal

    def _journal_paths(self) -> dict[str, Path]:
        """Case id -> journal file (`.jsonl`, or `.jsonl.gz` once sealed)."""
        folder = self.dir / JOURNAL_DIR
        if not folder.is_dir():
            return {}
        paths = {p.name[: -len(".jsonl.gz")]: p for p in folder.glob("*.jsonl.gz")}
        paths.update({p.name[: -len(".jsonl")]: p for p in folder.glob("*.jsonl")})
        return dict(sorted(paths.items()))

    def case_ids(self) -> list[str]:
        """Case ids that have a journal, sorted."""
        return [c for c in self._journal_paths()
                if c != RUN_JOURNAL and c not in self.JOURNAL_FAMILIES]

    def _journal_read(self, path: Path) -> JournalRead:
        """`read_journal(path)` (a kind's own journal of `JOURNAL_FAMILIES` with its family); a
        read-only Run reads each journal file once while it stays as it was (same size, mtime
        and inode), a writable one every time."""
        path = path.with_suffix("") if path.suffix == ".gz" else path
        family = (self.JOURNAL_FAMILIES.get(path.stem, CASE_EVENTS)
                  if path.parent == self.dir / JOURNAL_DIR else CASE_EVENTS)
        if self.writable:
            return read_journal(path, family=family)
        state = _file_state(path)
        hit = self._reads.get(path)
        if hit is not None and hit[0] == state:
            return hit[1]
        result = read_journal(path, family=family)
        self._reads[path] = (state, result)
        return result

    def case_events(self, case_id: str, *, resolve: bool = True) -> tuple[Event, ...]:
        """Every event of one case, in order (a torn last line skipped). With `resolve`,
        offloaded tool texts are read back from the raw store into `model_text` / `output`."""
        events = self._journal_read(self.dir / JOURNAL_DIR / f"{case_id}.jsonl").events
        if not resolve:
            return events
        return tuple(resolve_offloaded(e, self.raw) for e in events)

    # -- freezing and resuming -------------------------------------------------------------------

    def check_resume(self, frozen: Mapping[str, Any],
                     config: Mapping[str, Any] | None = None) -> list[str]:
        """Refuse (ResumeRefusedError) when the inputs now differ from the frozen ones; return
        the harmless differences (a base_url port, the display name, worker counts) in words,
        for the resume to record.

        `frozen` is `store.manifest.freeze(...)` of the inputs now; `config` the config now as
        a plain dict (or put it under `frozen["config"]`). The message names every change.
        """
        now = dict(frozen)
        if config is not None:
            now["config"] = dict(config)
        old = {k: v for k, v in self.manifest.items() if k in now}
        allowed: list[str] = []
        changes = compare_frozen(old, now, allowed)
        if changes:
            raise ResumeRefusedError(
                f"cannot resume {self.dir.name}: its frozen inputs changed since it started:\n"
                + "\n".join(f"  - {c}" for c in changes)
                + "\nA changed comparison needs a new run folder (run without --resume).")
        return allowed

    # -- audit ----------------------------------------------------------------------------------

    def verify(self) -> VerifyReport:
        """Every problem of the run folder as a list, never an exception: the manifest hash,
        every raw body against its hash, every journal line against its chain, the run
        journal's commitments both ways (each committed journal there and carrying the chain
        head recorded, each finished journal committed: `store.integrity`), and every raw path
        a journal refers to. Each problem names its file and record."""
        problems: list[str] = []
        torn: list[str] = []
        bodies = 0
        self._journal_notes = []
        for check in (self._verify_manifest, self._verify_raw, self._verify_journals):
            try:
                found_problems, found_torn, found_bodies = check()
            except Exception as exc:  # noqa: BLE001 - verify reports, it never raises
                found_problems, found_torn, found_bodies = (
                    [f"{check.__name__.removeprefix('_verify_')}: cannot be checked "
                     f"({type(exc).__name__}: {exc})"], [], 0)
            problems += found_problems
            torn += found_torn
            bodies += found_bodies
        return VerifyReport(not problems, tuple(problems), tuple(torn), bodies,
                            tuple(self._verify_notes() + self._journal_notes))

    def _verify_notes(self) -> list[str]:
        """What `verify` could not check, in words (a kind of run with older folders says)."""
        return []

    def _verify_manifest(self) -> tuple[list[str], list[str], int]:
        try:
            manifest = self.manifest
        except (RunError, ValueError) as exc:
            return [f"manifest: {exc}"], [], 0
        if self._manifest_repaired:
            return [self._manifest_repaired], [], 0
        if manifest.get("manifest_hash") != manifest_hash(manifest):
            return ["manifest.json was changed after it was frozen (its hash no longer matches "
                    "manifest_hash)"], [], 0
        return [], [], 0

    def _verify_raw(self) -> tuple[list[str], list[str], int]:
        reader = RawStore(self.dir, writable=False)
        return reader.verify(), reader.torn_tails(), reader.stats().bodies

    def _verify_journals(self) -> tuple[list[str], list[str], int]:
        stored = set(RawStore(self.dir, writable=False).names())
        found = check_journals(self._journals_read(), stored)
        self._journal_notes = found.notes
        return found.problems, found.torn, 0

    def _journals_read(self) -> Journals:
        """Every journal of the folder as read: the case journals (the run journal and a
        kind's own ones read with their family) and the judgings' (`store.integrity`)."""
        cases = journal_reads(self)
        paths, committed = judging_journals(self.dir)
        judgings = {name: self._journal_read(path) for name, path in paths.items()}
        return Journals(cases, judgings, committed, frozenset(self.JOURNAL_FAMILIES))

    def record_commitments(self, only: str | None = None) -> int:
        """Append the `case_sealed` records a crash left out (a journal finished, its record
        not written yet; `store.integrity.uncommitted`), of every journal or `only` the one
        named; return how many. A resume calls it, and a judging for its own journal."""
        missing = uncommitted(self._journals_read(), only=only)
        if missing:
            self.journal(RUN_JOURNAL).append_many(list(missing))
        return len(missing)

    def close(self) -> None:
        """Close its journals and raw store and release the writer lock (a `with` block does)."""
        for journal in self._journals.values():
            journal.close()
        self._journals.clear()
        if self._raw is not None:
            self._raw.close()
            self._raw = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None


def journal_reads(run: Run) -> dict[str, JournalRead]:
    """Every journal of `run`'s journal/ folder as read, by journal id (the run journal and a
    kind's own ones included, read with their family), sorted; a read-only Run decodes each
    file once while it stays as it was, so a caller after `verify()` or the fold reads none
    again."""
    return {jid: run._journal_read(path) for jid, path in run._journal_paths().items()}


def open_run(run: Any) -> Run:
    """A `Run` from a Run, a run folder path or a str; UsageError for anything else."""
    if isinstance(run, Run):
        return run
    if isinstance(run, (str, Path)):
        path = Path(run)
        if not (path / MANIFEST).is_file():
            raise UsageError(f"{path}: not a run folder (no manifest.json); pass the folder that "
                             "`parquet-agent run` printed, or a Run from Experiment(...).run()")
        return Run(path)
    raise UsageError(f"expected a Run or a run folder path, got {type(run).__name__}")
