"""Numbers written as text, with a word standing in for some of them (`nil`, `NA`, `-`, `?`):
a missing value in disguise, which a null count never sees and which turns the whole column
into text.

A text column is read as numbers when at least `NUMERIC` of its non-null values convert to a
number (and at least `MIN_VALUES` do); its other values are placeholders when they are at most
`MAX_WORDS` distinct values with no digit in them (a value with digits, like `T3` among ranks
or `K1A 0B1` among postal codes, is a code of another shape, not a stand-in).
"""

from __future__ import annotations

from parquet_agent.audit.discover.base import Candidate, Probe, Table, candidate, q
from parquet_agent.audit.discover.profile import ColumnProfile

NUMERIC = 0.9
MIN_VALUES = 20
MAX_WORDS = 3
_CHUNK = 20


def _not_number(c: str) -> str:
    return f"{c} IS NOT NULL AND TRY_CAST({c} AS DOUBLE) IS NULL"


def find(probe: Probe, table: Table, profiles: dict[str, ColumnProfile]) -> list[Candidate]:
    cols = [c for c, p in profiles.items() if p.kind == "text" and p.non_null >= MIN_VALUES
            and not p.free_text]

    def terms(i: int, c: str) -> str:
        x = q(c)
        return (f"count(TRY_CAST({x} AS DOUBLE)) AS n{i}, count({x}) AS nn{i}, "
                f"approx_top_k({x}, {MAX_WORDS + 1}) FILTER (WHERE {_not_number(x)}) AS w{i}, "
                f"count(DISTINCT {x}) FILTER (WHERE {_not_number(x)}) AS d{i}")

    out: list[Candidate] = []
    for c, get in probe.per_column(cols, terms, table.source, _CHUNK):
        numbers, non_null, words = int(get("n")), int(get("nn")), get("w") or []
        if (numbers < MIN_VALUES or numbers < NUMERIC * non_null or numbers == non_null
                or int(get("d")) > MAX_WORDS or any(ch.isdigit() for w in words for ch in w)):
            continue
        shown = ", ".join(repr(w) for w in words)
        out.append(candidate(
            "placeholders.words", "validity", table, [c],
            f"{c} holds words among numbers in {table.view}",
            f"{numbers} of its {non_null} values are numbers; the others are {shown}: a "
            "missing value written as a word (the column reads as text)",
            _not_number(q(c)), note=table.sampled,
            support={"numbers": numbers, "non_null": non_null, "words": list(words)}))
    return out
