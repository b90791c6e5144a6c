"""Deterministic discovery: the dependencies a dataset's tables almost obey, and the rows that
break them (the data-profiling literature's unique column combinations, inclusion, functional
and order dependencies, plus time grids, isolated outliers, cross-column arithmetic,
measurements outside their category's band, respelled categories and words standing in for
numbers).

    found = discover(tools, tables)      # tools: AuditTools (sandboxed); tables: scope.tables_of
    found.candidates                     # Candidate: write_finding arguments + rule + report/note
    found.to_json()                      # what an auditor's state holds

Every query runs through the audit's sandboxed tools, so discovery reads exactly what the finding
gate reads; each candidate is a row predicate over a table's view, which the gate re-counts
itself before anything is committed. A rule whose query fails becomes a note, never an error.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field, replace
from typing import Any

from parquet_agent.audit.discover import (crosscolumn, fds, groups, keys, order, outliers,
                                          placeholders, references, timeseries, variants)
from parquet_agent.audit.discover.base import Candidate, Probe, ProbeError, QueryTool, Table
from parquet_agent.audit.discover.profile import ColumnProfile, profile

__all__ = ["Candidate", "Discovery", "Table", "discover"]


@dataclass
class Discovery:
    tables: list[Table]
    profiles: dict[str, dict[str, ColumnProfile]] = field(default_factory=dict)
    candidates: list[Candidate] = field(default_factory=list)
    # (before `references`: the field's name would hide the module's in the annotations below it)
    composite_references: list[references.CompositeReference] = field(default_factory=list)
    references: list[references.Reference] = field(default_factory=list)
    keys: dict[str, list[str]] = field(default_factory=dict)  # view -> its unique columns
    notes: list[str] = field(default_factory=list)
    queries: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "tables": [{"view": t.view, "rows": t.rows, "columns": len(t.columns)} for t in self.tables],
            "candidates": [c.to_json() for c in self.candidates],
            "references": [r.to_json() for r in self.references],
            "composite_references": [r.to_json() for r in self.composite_references],
            "keys": self.keys, "notes": list(self.notes),
            "queries": self.queries, "seconds": round(self.seconds, 3),
        }


def discover(tools: QueryTool, tables: list[Table]) -> Discovery:
    started = time.perf_counter()
    probe = Probe(tools)
    found = Discovery(list(tables))
    for table in tables:
        _guard(found, f"profile of {table.view}", lambda t=table: found.profiles.__setitem__(
            t.view, profile(probe, t)))
    profiled = [t for t in tables if t.view in found.profiles and t.rows > 0]
    _guard(found, "references", lambda: _references(probe, profiled, found))
    for table in profiled:
        _guard(found, f"keys of {table.view}", lambda t=table: _keys(probe, t, found))
        _guard(found, f"dependencies of {table.view}", lambda t=table: _fds(probe, t, found))
        _guard(found, f"orders of {table.view}", lambda t=table: _orders(probe, t, found))
        _guard(found, f"outliers of {table.view}", lambda t=table: found.candidates.extend(
            outliers.find(probe, t, found.profiles[t.view], skip=_identifiers(t, found))))
        _guard(found, f"arithmetic of {table.view}", lambda t=table: found.candidates.extend(
            crosscolumn.arithmetic(probe, t, found.profiles[t.view])))
        _guard(found, f"bands of {table.view}", lambda t=table: found.candidates.extend(
            groups.find(probe, t, found.profiles[t.view], skip=_identifiers(t, found))))
        _guard(found, f"swaps of {table.view}", lambda t=table: found.candidates.extend(
            crosscolumn.swaps(probe, t, found.profiles[t.view])))
        _guard(found, f"spellings of {table.view}", lambda t=table: found.candidates.extend(
            variants.find(probe, t, found.profiles[t.view])))
        _guard(found, f"placeholders of {table.view}", lambda t=table: found.candidates.extend(
            placeholders.find(probe, t, found.profiles[t.view])))
        _guard(found, f"time series of {table.view}", lambda t=table: found.candidates.extend(
            timeseries.find(probe, t, found.profiles[t.view])))
        _guard(found, f"explained candidates of {table.view}", lambda t=table: _explained(probe, t, found))
    _guard(found, "references over column combinations", lambda: _composites(probe, profiled, found))
    found.queries = probe.queries
    found.seconds = time.perf_counter() - started
    return found


def _guard(found: Discovery, what: str, step) -> None:
    try:
        step()
    except ProbeError as exc:
        found.notes.append(f"{what}: skipped, a query failed: {exc}")


def _references(probe: Probe, tables: list[Table], found: Discovery) -> None:
    by_view = {t.view: t for t in tables}
    best: dict[tuple[str, str], list[tuple[references.Reference, bool]]] = {}
    for source, a, target, b, related in references.pairs(tables, found.profiles):
        ref = references.measure(probe, source, a, target, b)
        if references.accepted(ref, related, found.profiles[source.view][a]):
            best.setdefault((source.view, a), []).append((ref, related))
    for refs in best.values():
        # a foreign key refers to one key: the best-contained one; the others (an alternate
        # key that mostly holds the same values) are only noted
        refs.sort(key=lambda x: (-x[0].containment, not x[1], x[0].target, x[0].key))
        for rank, (ref, _) in enumerate(refs):
            found.references.append(ref)
            orphan = references.orphans(ref, by_view[ref.source], by_view[ref.target])
            if orphan is not None:
                found.candidates.append(orphan if rank == 0 else replace(orphan, report=False))


def _composites(probe: Probe, tables: list[Table], found: Discovery) -> None:
    """References over two or three same-named columns to a combination that identifies the
    target's rows, but no single column does (a team in a year: `(teamID, yearID)`)."""
    single = {(r.source, r.column, r.target) for r in found.references}
    for target in tables:
        unique = set(found.keys.get(target.view, []))
        is_key: dict[tuple[str, ...], bool] = {}  # combinations of the target, checked
        for source in tables:
            if source is target:
                continue
            pairs = [(a, b) for a, b in references.shared(source, target, found.profiles)
                     if b not in unique and (source.view, a, target.view) not in single]
            combos = [c for width in range(2, references.MAX_WIDTH + 1)
                      for c in itertools.combinations(pairs, width)]
            for combo in combos:  # narrower first: a key's supersets are skipped
                ref = _composite(probe, source, target, combo, is_key)
                if ref is not None:
                    found.composite_references.append(ref)
                    orphan = references.composite_orphans(ref, source)
                    if orphan is not None:
                        found.candidates.append(orphan)


def _composite(probe: Probe, source: Table, target: Table, combo: tuple[tuple[str, str], ...],
               is_key: dict[tuple[str, ...], bool]) -> references.CompositeReference | None:
    """The reference of `combo`'s source columns to its target columns, when those are a
    minimal key of the target (`is_key` caches the checks) and hold the source's values."""
    keys = tuple(b for _, b in combo)
    if any(ok and set(k) < set(keys) for k, ok in is_key.items()):
        return None
    if keys not in is_key:
        is_key[keys] = references.composite_key(probe, target, keys)
    if not is_key[keys]:
        return None
    ref = references.measure_composite(probe, source, tuple(a for a, _ in combo), target, keys)
    return ref if ref.found >= 3 and ref.containment >= references.COMPOSITE_CONTAINMENT else None


def _fds(probe: Probe, table: Table, found: Discovery) -> None:
    for x, y in fds.candidates(probe, table, found.profiles[table.view]):
        broken = fds.violation(probe, table, x, y, found.profiles[table.view])
        if broken is not None:
            found.candidates.append(broken)


def _identifiers(table: Table, found: Discovery) -> set[str]:
    """Numeric columns that name things rather than measure them: key-named, or either end of
    a reference. An id far from the others (a range of ids added later) is not an outlier."""
    ends = {r.key for r in found.references if r.target == table.view}
    ends |= {r.column for r in found.references if r.source == table.view}
    return ends | {c for c in found.profiles[table.view] if keys.key_named(c)}


def _explained(probe: Probe, table: Table, found: Discovery) -> None:
    """Outliers and respellings whose rows all break a cross-column rule on the same column (a
    next-day delay, a swapped latitude, a code with two names) are that rule's defect, said
    once; outliers whose rows are all the rows of their category (the airports of one island,
    far east of the others) are a population of their own. Both become notes."""
    mine = [c for c in found.candidates if c.arguments.get("view") == table.view and c.report]
    rules = [c for c in mine if c.arguments["category"] == "consistency" and "predicate" in c.arguments]
    for i, c in enumerate(found.candidates):
        if not (c.report and c.rule.startswith(("outliers.", "variants.")) and c in mine):
            continue
        reason = None
        for rule in rules:
            if not set(c.arguments["columns"]) & set(rule.arguments["columns"]):
                continue
            row = probe.one(f"SELECT count(*) AS n FROM {table.view} WHERE ({c.arguments['predicate']}) "
                            f"AND NOT coalesce(({rule.arguments['predicate']}), FALSE)")
            if int(row["n"]) == 0:
                reason = rule.title
                break
        if reason is None and c.rule == "outliers.isolated":
            group = outliers.grouped(probe, table, c, found.profiles[table.view])
            reason = f"its rows are alone in their {group}" if group else None
        if reason is not None:
            found.candidates[i] = replace(c, report=False, support={**c.support, "explained_by": reason})


def _orders(probe: Probe, table: Table, found: Discovery) -> None:
    named, unnamed = order.candidates(probe, table, found.profiles[table.view])
    found.candidates.extend(named)
    if unnamed:
        found.notes.append(f"{table.view}: {unnamed} pair(s) of columns ordered in almost every row "
                           "with names that are not bounds of one quantity (not reported)")


def _keys(probe: Probe, table: Table, found: Discovery) -> None:
    profiles = found.profiles[table.view]
    referenced = {r.key for r in found.references if r.target == table.view}
    columns = [c for c, p in profiles.items() if keys.key_candidate(p) or c in referenced
               or c in table.documented_keys]
    counts = keys.count_keys(probe, table, columns)
    found.keys[table.view] = [c for c, k in counts.items() if k.unique]
    repeated = keys.repeated_rows(probe, table, profiles)
    if repeated is not None:
        found.candidates.append(repeated)
    for column, count in counts.items():
        dup = keys.duplicates(table, count, profiles[column], column in referenced,
                              column in table.documented_keys)
        if dup is not None and dup.report and repeated is not None and repeated.report:
            # a key repeated only by rows loaded twice is that defect, said once
            row = probe.one(f"SELECT count(*) AS n FROM {table.view} WHERE ({dup.arguments['predicate']}) "
                            f"AND NOT ({repeated.arguments['predicate']})")
            if int(row["n"]) == 0:
                dup = replace(dup, report=False, support={**dup.support, "explained_by": repeated.title})
        if dup is not None:
            found.candidates.append(dup)
