"""What `Run.verify()` checks of a run folder's journals, and the run journal's commitments.

    found = check_journals(journals)                 # Found: problems, torn tails, notes
    missing = uncommitted(journals)                  # what a resume records (after a crash)

The run journal commits to every journal that is done: a case journal when its case finishes
(and again after anything is appended to a finished case, such as a batch judgment), and a
judging's journal (`judgments/<judging>.jsonl`) whenever a re-judging closes it. Each commitment
is a `case_sealed` record: the journal's name, its line count and the chain of its last line (a
judging's name is `judgments/<judging>`). Verify checks both directions:

- every committed journal exists and its recorded line still carries the recorded chain (an
  edit with every chain recomputed, a cut, a replaced or a deleted journal is named);
- every finished case journal and every committed judging's journal has a commitment covering
  every line (a run journal cut inside a `case_sealed` line, or lines added by hand, are named);
- every line of every journal against its own chain, sequence numbers without gaps, every raw
  path a line refers to present in the raw store.

A case journal is committed before it is sealed, so a crash between its last line and its
commitment leaves a plain (`x.jsonl`) journal: `verify()` names it until a resume records what
is missing (`uncommitted`). A sealed journal without its commitment is never a crash of ours,
and is never recorded afterwards (that would launder an edit).

What this does not catch: someone who rewrites the folder consistently (the journals, the run
journal's chains and its commitments) or cuts the run journal's tail together with the journals
committed there (that reads as a crash before those cases finished). Journals written without
chains (journal schema 1) and judgings from before commitments have nothing to commit to: they
are said in the notes, never called damaged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from parquet_agent.store.journal import RUN_JOURNAL, JournalRead
from parquet_agent.transcript import (
    CaseFinished,
    CaseSealed,
    Event,
    Judgment,
    ModelAttempt,
    ModelTurn,
    ToolCallEvent,
)

JUDGINGS = "judgments/"  # the prefix of a judging journal's name in a `case_sealed` record


@dataclass(frozen=True)
class Journals:
    """Every journal of a run folder as read: `cases` by id (the run journal under `_run`),
    `judgings` by `judgments/<judging>`, the judgings whose info file says they are committed,
    and the journals of `cases` that are no case's (an audit's own: never committed)."""
    cases: Mapping[str, JournalRead]
    judgings: Mapping[str, JournalRead] = field(default_factory=dict)
    committed: frozenset[str] = frozenset()
    exempt: frozenset[str] = frozenset()

    def each(self) -> list[tuple[str, JournalRead]]:
        return [*self.cases.items(), *self.judgings.items()]


@dataclass
class Found:
    problems: list[str] = field(default_factory=list)
    torn: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def sealed_heads(run_journal: JournalRead | None) -> dict[str, tuple[int, str]]:
    """Journal name -> (line count, chain head) of its last `case_sealed` in the run journal."""
    heads: dict[str, tuple[int, str]] = {}
    for event in (run_journal.events if run_journal is not None else ()):
        p = event.payload
        if isinstance(p, CaseSealed):
            heads[p.case_id] = (p.lines, p.head)
    return heads


def raw_refs(events: tuple[Event, ...]) -> list[tuple[int, str]]:
    """(seq, raw path) of every raw file an event refers to."""
    refs = []
    for e in events:
        p = e.payload
        if isinstance(p, ModelAttempt):  # judge attempts too
            values = [p.attempt.request_path, p.attempt.response_path]
        elif isinstance(p, (ModelTurn, Judgment)):
            values = [p.request_path, p.response_path]
        elif isinstance(p, ToolCallEvent):
            values = [p.offloaded]
        else:
            continue
        refs += [(e.seq, v) for v in values if isinstance(v, str) and v]
    return refs


def _done(name: str, read: JournalRead, journals: Journals) -> bool:
    """Whether the journal must carry a commitment: a finished case, or a judging committed
    since issue 24, written with chained lines (a journal of schema 1 has no chain)."""
    if read.head is None or name == RUN_JOURNAL or name in journals.exempt:
        return False
    if name.startswith(JUDGINGS):
        return name in journals.committed and bool(read.lines)
    return any(isinstance(e.payload, CaseFinished) for e in read.events)


def uncommitted(journals: Journals, only: str | None = None) -> list[CaseSealed]:
    """The `case_sealed` records a crash left out: what a resume (or the judging that wrote
    the journal, `only`) appends to the run journal. Only a plain case journal (`x.jsonl`), or
    a judging's, whose lines still carry what was recorded of them is recorded here: a sealed
    one without its record, or a damaged one, stays named by `verify()`."""
    sealed = sealed_heads(journals.cases.get(RUN_JOURNAL))
    out = []
    for name, read in journals.each():
        if (only is not None and name != only) or read.damaged or read.head is None \
                or not _done(name, read, journals):
            continue
        if not name.startswith(JUDGINGS) and (read.path is None or not read.path.exists()):
            continue  # sealed without its record: not a crash of ours
        recorded = sealed.get(name)
        if recorded is not None:
            lines, head = recorded
            if not 0 < lines <= len(read.chains) or read.chains[lines - 1] != head:
                continue  # the lines no longer carry what was recorded
            if lines == read.lines:
                continue
        out.append(CaseSealed(name, read.lines, read.head))
    return out


def check_journals(journals: Journals, stored: set[str]) -> Found:
    """Problems, torn tails and notes of every journal; see the module docstring."""
    found = Found()
    sealed = sealed_heads(journals.cases.get(RUN_JOURNAL))
    unchained = []
    for name, read in journals.each():
        shown = name + ".jsonl" if name.startswith(JUDGINGS) else (
            read.path.name if read.path is not None else name)
        if read.path is not None and not name.startswith(JUDGINGS) and not read.path.exists():
            shown = read.path.name + ".gz"
        found.problems += read.damaged
        for seq, ref in raw_refs(read.events):
            if ref not in stored:
                found.problems.append(f"{shown}: event {seq} refers to {ref}, which is not in "
                                      "the raw store")
        if read.torn:
            found.torn.append(f"{shown}: torn last line (interrupted write), ignored")
        seqs = [e.seq for e in read.events]
        if not read.damaged and seqs != list(range(len(seqs))):
            found.problems.append(f"{shown}: event sequence numbers are not "
                                  f"0..{len(seqs) - 1} (lines removed, reordered or inserted)")
        if read.lines and read.head is None and not read.damaged:
            unchained.append(shown)
        if name != RUN_JOURNAL and name not in journals.exempt:
            found.problems += _commitment(shown, read, sealed.get(name),
                                          _done(name, read, journals))
    for name in sorted(set(sealed) - set(journals.cases) - set(journals.judgings)):
        lines, _ = sealed[name]
        lost = ("its judgments would silently vanish" if name.startswith(JUDGINGS)
                else "its case would silently become unstarted")
        found.problems.append(f"{name}: the run journal committed to this journal ({lines} "
                              f"lines) but it is missing (deleted or moved): {lost}")
    found.notes += _old_journal_notes(unchained, journals)
    return found


def _commitment(shown: str, read: JournalRead, recorded: tuple[int, str] | None,
                done: bool) -> list[str]:
    if recorded is None:
        if not done:
            return []
        if read.path is not None and not read.path.exists():  # sealed: never a crash of ours
            return [(f"{shown}: this finished case journal is sealed but the run journal holds "
                     "no case_sealed record of it (the run journal was cut or edited, or the "
                     "journal replaced): its lines are not what the run recorded")]
        return [(f"{shown}: the run journal holds no case_sealed record of this finished "
                 "journal (the run journal was cut or edited, or a crash came before the "
                 "record: a resume records it)")]
    lines, head = recorded
    actual = read.chains[lines - 1] if 0 < lines <= len(read.chains) else None
    if actual != head:
        return [(f"{shown}: line {lines} does not carry the chain head the run journal recorded "
                 "when the case was sealed: the journal was rewritten, cut or replaced")]
    if read.lines > lines and not read.damaged:
        return [(f"{shown}: lines {lines + 1}-{read.lines} come after the run journal's last "
                 "case_sealed record of this journal (added by hand, or a crash came before "
                 "the record: a resume records it)")]
    return []


def _old_journal_notes(unchained: list[str], journals: Journals) -> list[str]:
    notes = []
    if unchained:
        notes.append(f"{len(unchained)} journal(s) written before chained lines (journal "
                     f"schema 1: {', '.join(unchained[:3])}{', ...' if len(unchained) > 3 else ''}"
                     "): their lines and commitments cannot be checked")
    old = sorted(set(journals.judgings) - journals.committed)
    if old:
        notes.append(f"{len(old)} judging(s) written before judgings were committed in the run "
                     f"journal ({', '.join(old[:3])}{', ...' if len(old) > 3 else ''}): their "
                     "lines are checked against their chain, a cut or deleted judging is not")
    return notes


def judging_journals(run_dir: Path) -> tuple[dict[str, Path], frozenset[str]]:
    """(`judgments/<judging>` -> its journal file, the names of those whose info file says
    they are committed in the run journal: written since issue 24)."""
    folder = run_dir / "judgments"
    if not folder.is_dir():
        return {}, frozenset()
    paths, committed = {}, set()
    for path in sorted(folder.glob("*.jsonl")):
        if path.name.endswith(".batches.jsonl"):
            continue
        name = JUDGINGS + path.name[: -len(".jsonl")]
        paths[name] = path
        try:
            info = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
            if not isinstance(info, dict) or info.get("committed") is True:
                committed.add(name)
        except (OSError, ValueError, RecursionError):
            committed.add(name)  # an unreadable or missing info file excuses nothing
    return paths, frozenset(committed)
