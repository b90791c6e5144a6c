"""Near-foreign-keys across tables (inclusion dependencies that almost hold) and their orphans.

A reference `A.a -> B.b` is a candidate when `b` is (nearly) unique in B, `a` has the same kind
(integer or text code) and a comparable range (number range, text lengths), and either their
names are related (`tailnum`/`tailnum`, `customer_id`/`customers.id`, `teamID`/`teams.teamID`)
or, for text codes, at least 90 % of a's distinct values are b's (and a has at least 20 of
them): integers coincide too easily to be matched on values alone. The containment is
counted exactly (distinct values of a found in b, an anti-join); a reference whose
containment is at least `MIN_CONTAINMENT` but below 1 has orphans: rows of A whose value is
absent from B, the finding. Complete references (containment 1) are returned too: a rare
category that is in its referenced table is valid, whatever its frequency.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from parquet_agent.audit.discover.base import Candidate, Probe, Table, candidate, lit, q
from parquet_agent.audit.discover.profile import ColumnProfile

NEAR_UNIQUE = 0.95  # the referenced column's approximate distinct share
MIN_CONTAINMENT = 0.5  # with related names
VALUE_CONTAINMENT = 0.9  # text codes with unrelated names
MIN_DISTINCT_BY_VALUE = 20
MAX_PAIRS = 400


@dataclass(frozen=True)
class Reference:
    source: str  # view
    column: str
    target: str  # view
    key: str
    distinct: int  # distinct non-null values of the source column
    found: int  # of which in the target
    orphans: tuple[str, ...]  # a few absent values, most frequent first

    @property
    def containment(self) -> float:
        return self.found / self.distinct if self.distinct else 0.0

    def to_json(self) -> dict:
        return {"from": f"{self.source}.{self.column}", "to": f"{self.target}.{self.key}",
                "containment": round(self.containment, 4), "distinct": self.distinct,
                "orphan_values": list(self.orphans)}


def _norm(name: str) -> str:
    return re.sub(r"[^0-9a-z]", "", name.lower())


def _singular(name: str) -> str:
    n = _norm(re.sub(r"^f_", "", name))
    return n[:-3] + "y" if n.endswith("ies") else n[:-1] if n.endswith("s") else n


def names_related(a: str, b: str, target_view: str) -> bool:
    na, nb, table = _norm(a), _norm(b), _singular(target_view)
    if na == nb:
        return len(na) >= 2
    if nb in ("id", "key", "code") or len(nb) < 3:
        return bool(table) and na in (table + nb, table)
    return na.endswith(nb) or (nb.endswith(na) and len(na) >= 3)


def comparable(a: ColumnProfile, b: ColumnProfile) -> bool:
    if a.kind != b.kind or a.kind not in ("integer", "text") or a.distinct < 2:
        return False
    if a.kind == "integer":
        return (a.low is not None and b.low is not None and a.high is not None
                and b.high is not None and a.low <= b.high and b.low <= a.high)
    if (a.min_length is None or a.max_length is None or b.min_length is None
            or b.max_length is None or a.mean_length is None or b.mean_length is None):
        return False
    return (a.min_length <= b.max_length and b.min_length <= a.max_length
            and 0.5 <= a.mean_length / max(b.mean_length, 1e-9) <= 2.0)


def target_like(p: ColumnProfile) -> bool:
    # a key is a code: free text (names with spaces) is unique by accident, not referred to
    return (p.kind in ("integer", "text") and not p.free_text and p.non_null >= 2 and p.distinct >= 2
            and p.distinct >= NEAR_UNIQUE * p.non_null)


def pairs(tables: list[Table], profiles: dict[str, dict[str, ColumnProfile]]) -> list[tuple]:
    """(A, a, B, b, related) worth an exact containment count, named pairs first."""
    out = []
    for target in tables:
        for b, pb in profiles[target.view].items():
            if not target_like(pb):
                continue
            for source in tables:
                if source.view == target.view:
                    continue
                for a, pa in profiles[source.view].items():
                    if not comparable(pa, pb) or pa.distinct > 2 * pb.distinct + 10:
                        continue
                    related = names_related(a, b, target.view)
                    if related or (pa.kind == "text" and not pa.free_text
                                   and pa.distinct >= MIN_DISTINCT_BY_VALUE):
                        out.append((source, a, target, b, related))
    out.sort(key=lambda p: (not p[4], p[0].view, p[1], p[2].view, p[3]))
    return out[:MAX_PAIRS]


def measure(probe: Probe, source: Table, a: str, target: Table, b: str) -> Reference:
    ca, cb = q(a), q(b)
    keys = (f"(SELECT DISTINCT {ca} AS k FROM {source.view} WHERE {ca} IS NOT NULL) s "
            f"LEFT JOIN (SELECT DISTINCT {cb} AS k FROM {target.view}) t ON s.k = t.k")
    row = probe.one(f"SELECT count(*) AS d, count(t.k) AS hit FROM {keys}")
    orphans: tuple[str, ...] = ()
    if 0 < row["hit"] < row["d"]:
        shown = probe.rows(
            f"SELECT CAST({ca} AS VARCHAR) AS v, count(*) AS n FROM {source.view} "
            f"WHERE {_orphan(a, target, b)} GROUP BY 1 ORDER BY n DESC, v LIMIT 5")
        orphans = tuple(str(r["v"]) for r in shown)
    return Reference(source.view, a, target.view, b, int(row["d"]), int(row["hit"]), orphans)


def _orphan(a: str, target: Table, b: str) -> str:
    return (f"{q(a)} IS NOT NULL AND {q(a)} NOT IN "
            f"(SELECT {q(b)} FROM {target.view} WHERE {q(b)} IS NOT NULL)")


def accepted(ref: Reference, related: bool, source_profile: ColumnProfile) -> bool:
    if ref.found < 3:
        return False
    if related:
        return ref.containment >= MIN_CONTAINMENT
    return ref.containment >= VALUE_CONTAINMENT and ref.distinct >= MIN_DISTINCT_BY_VALUE


def orphans(ref: Reference, source: Table, target: Table) -> Candidate | None:
    if ref.found == ref.distinct:
        return None
    missing = ref.distinct - ref.found
    shown = ", ".join(lit(v) for v in ref.orphans)
    return candidate(
        "references.orphans", "referential", source, [ref.column],
        f"{ref.column} in {ref.source} refers to {ref.target}.{ref.key} but {missing} value(s) are absent",
        f"{ref.found} of the {ref.distinct} distinct values of {ref.source}.{ref.column} are "
        f"{ref.target}.{ref.key} values (a key of {ref.target}); {missing} are not, e.g. {shown}",
        _orphan(ref.column, target, ref.key), support=ref.to_json())


# -- references over a column combination (`AllstarFull (teamID, yearID) -> Teams`) -------------

COMPOSITE_CONTAINMENT = 0.9  # sibling tables over other years share pairs too: a high bar
MAX_SHARED = 6  # same-named columns of two tables considered for a combination
MAX_WIDTH = 3
NEAR_KEY_ROWS = 0.01  # the share of the target's rows that may repeat its combination
_KINDS = ("integer", "text", "date", "timestamp")


@dataclass(frozen=True)
class CompositeReference:
    source: str
    columns: tuple[str, ...]
    target: str
    keys: tuple[str, ...]
    distinct: int  # distinct complete combinations in the source
    found: int

    @property
    def containment(self) -> float:
        return self.found / self.distinct if self.distinct else 0.0

    def to_json(self) -> dict:
        return {"from": f"{self.source}.({', '.join(self.columns)})",
                "to": f"{self.target}.({', '.join(self.keys)})",
                "containment": round(self.containment, 4), "distinct": self.distinct}


def shared(source: Table, target: Table, profiles: dict[str, dict[str, ColumnProfile]]) -> list[tuple[str, str]]:
    """(source column, target column) pairs with one name and one kind of code."""
    out = []
    for b, pb in profiles[target.view].items():
        for a, pa in profiles[source.view].items():
            if (_norm(a) == _norm(b) and len(_norm(a)) >= 2 and pa.kind == pb.kind
                    and pa.kind in _KINDS and not pa.free_text and not pb.free_text
                    and pa.distinct >= 2 and pb.distinct >= 2):
                out.append((a, b))
    return out[:MAX_SHARED]


def _row(columns: tuple[str, ...]) -> str:
    return f"row({', '.join(q(c) for c in columns)})"


def _complete(columns: tuple[str, ...]) -> str:
    return " AND ".join(f"{q(c)} IS NOT NULL" for c in columns)


def composite_key(probe: Probe, target: Table, keys: tuple[str, ...]) -> bool:
    """Whether `keys` (almost) identify the rows of `target`."""
    row = probe.one(f"SELECT count(*) AS n, count(DISTINCT {_row(keys)}) AS d FROM {target.view} "
                    f"WHERE {_complete(keys)}")
    n, d = int(row["n"]), int(row["d"])
    return n >= 0.9 * target.rows and n - d <= max(1.0, NEAR_KEY_ROWS * n)


def measure_composite(probe: Probe, source: Table, columns: tuple[str, ...], target: Table,
                      keys: tuple[str, ...]) -> CompositeReference:
    row = probe.one(
        f"SELECT count(*) AS d, count(t.k) AS hit FROM "
        f"(SELECT DISTINCT {_row(columns)} AS k FROM {source.view} WHERE {_complete(columns)}) s "
        f"LEFT JOIN (SELECT DISTINCT {_row(keys)} AS k FROM {target.view} WHERE {_complete(keys)}) t "
        f"ON s.k = t.k")
    return CompositeReference(source.view, columns, target.view, keys, int(row["d"]), int(row["hit"]))


def composite_orphans(ref: CompositeReference, source: Table) -> Candidate | None:
    if ref.found == ref.distinct:
        return None
    missing = ref.distinct - ref.found
    names, keys = ", ".join(ref.columns), ", ".join(ref.keys)
    return candidate(
        "references.composite_orphans", "referential", source, list(ref.columns),
        f"({names}) in {ref.source} refers to {ref.target}.({keys}) but {missing} combination(s) are absent",
        f"{ref.found} of the {ref.distinct} distinct ({names}) of {ref.source} are ({keys}) of "
        f"{ref.target}, which identify its rows; {missing} are not",
        f"{_complete(ref.columns)} AND {_row(ref.columns)} NOT IN "
        f"(SELECT {_row(ref.keys)} FROM {ref.target} WHERE {_complete(ref.keys)})",
        support=ref.to_json())
