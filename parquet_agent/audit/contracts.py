"""Contracts: what the user declares the data must obey, checked by the finding gate.

In the spirit of dbt tests, Soda checks and Great Expectations: a small typed model, in the audit
config (`[audit.contract]`) or in its own file (`[contract]`, given by `file = ...` there or by
`audit run --contract FILE`):

    [contract]
    [[contract.keys]]              # unique, non-null column (combination) of one table
    table = "planes"               # optional in a one-table dataset
    columns = ["tailnum"]
    [[contract.references]]        # every non-null value of `from` appears in `to`
    from = "flights.tailnum"
    to = "planes.tailnum"
    [[contract.ranges]]            # min and/or max: numbers, or dates/timestamps as text
    column = "flights.dep_delay"
    min = -60
    max = 1440
    [[contract.allowed]]
    column = "flights.origin"
    values = ["EWR", "JFK", "LGA"]
    [[contract.patterns]]          # the whole value matches (DuckDB regexp_full_match, RE2)
    column = "planes.tailnum"
    regex = "N[0-9]{1,5}[A-Z]{0,2}"
    [[contract.freshness]]         # the latest value: at least `not_before`, and/or no older
    column = "flights.time_hour"   #   than `max_age` ("90m", "36h", "7d") when the audit ran
    max_age = "2d"

Columns are refs (`table.column`; a plain name in a one-table dataset). Unknown keys are a
ConfigError naming the place, the closest allowed key and every allowed key, as in the rest of
the config. `Contract.checks(dataset, now)` turns each entry into `write_finding` arguments
(`Check`): a row predicate over a view (keys: duplicates and nulls; references: orphans; ranges,
allowed values, patterns: the rows outside), or count/denominator SQL (freshness: 1 of 1 when
stale). The auditor proposes every check to the finding gate before the model's first step: the
gate re-computes the evidence in the sandbox, commits a violation as a finding, and a check whose
count is 0 holds. A check naming a table or column the snapshot does not have is `not_checked`
with that reason (drift of the schema, said, never a crash). `audit.contract_writer` writes
what an audit found to hold as a contract file, so the next audit finds the drift.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Callable, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from parquet_agent.audit.dataset import Dataset, Table
from parquet_agent.checks import check_keys, fail, join
from parquet_agent.errors import ConfigError

Scalar = Union[bool, int, float, str]
_AGE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([mhd])\s*$")
_AGE_UNITS = {"m": "minutes", "h": "hours", "d": "days"}


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class KeyCheck(_Entry):
    table: str | None = None
    columns: list[str] = Field(min_length=1)


class ReferenceCheck(_Entry):
    from_: str = Field(alias="from")
    to: str


class RangeCheck(_Entry):
    column: str
    min: float | int | str | None = None
    max: float | int | str | None = None

    @model_validator(mode="after")
    def _bounded(self) -> RangeCheck:
        if self.min is None and self.max is None:
            raise ValueError("give min, max or both")
        return self


class AllowedCheck(_Entry):
    column: str
    values: list[Scalar] = Field(min_length=1)


class PatternCheck(_Entry):
    column: str
    regex: str = Field(min_length=1)

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from exc
        return value


class FreshnessCheck(_Entry):
    column: str
    max_age: str | None = None
    not_before: str | None = None

    @field_validator("max_age")
    @classmethod
    def _age(cls, value: str | None) -> str | None:
        if value is not None and not _AGE.match(value):
            raise ValueError(f"max_age {value!r} is not an age such as '90m', '36h' or '7d'")
        return value

    @model_validator(mode="after")
    def _bounded(self) -> FreshnessCheck:
        if self.max_age is None and self.not_before is None:
            raise ValueError("give max_age, not_before or both")
        return self


KINDS: dict[str, type[_Entry]] = {"keys": KeyCheck, "references": ReferenceCheck,
                                  "ranges": RangeCheck, "allowed": AllowedCheck,
                                  "patterns": PatternCheck, "freshness": FreshnessCheck}
_FIELDS = {kind: [f.alias or name for name, f in model.model_fields.items()]
           for kind, model in KINDS.items()}


class Contract(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    keys: list[KeyCheck] = Field(default_factory=list)
    references: list[ReferenceCheck] = Field(default_factory=list)
    ranges: list[RangeCheck] = Field(default_factory=list)
    allowed: list[AllowedCheck] = Field(default_factory=list)
    patterns: list[PatternCheck] = Field(default_factory=list)
    freshness: list[FreshnessCheck] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)  # the files it was read from

    @classmethod
    def from_table(cls, table: Any, where: str, base: Path | None = None) -> Contract:
        """A contract from a TOML table (`where` names it in errors). `file = PATH` (relative
        to `base`) adds that file's `[contract]` to the entries given here."""
        if not isinstance(table, dict):
            raise fail(where, "must be a table ([contract] with [[contract.keys]], ...)")
        check_keys(where, table, [*KINDS, "file", "sources"])
        entries: dict[str, list] = {kind: [] for kind in KINDS}
        # `sources`: the files a contract was read from (to_json's record, read back as is)
        sources: list[str] = [str(s) for s in table.get("sources") or []]
        if table.get("file") is not None:
            if not isinstance(table["file"], str):
                raise fail(join(where, "file"), "must be a path (text)")
            path = Path(table["file"])
            included = cls.from_toml(path if path.is_absolute() else (base or Path.cwd()) / path)
            for kind in KINDS:
                entries[kind] += getattr(included, kind)
            sources += included.sources
        for kind, model in KINDS.items():
            items = table.get(kind, [])
            if not isinstance(items, list):
                raise fail(join(where, kind), f"must be an array of tables ([[{where}.{kind}]])")
            for i, item in enumerate(items):
                entries[kind].append(_entry(model, item, f"{join(where, kind)}[{i}]", kind))
        return cls(**entries, sources=sources)

    @classmethod
    def from_toml(cls, path: str | Path) -> Contract:
        """The `[contract]` table of a contract file."""
        path = Path(path)
        try:
            data = tomllib.loads(path.read_text())
        except FileNotFoundError as exc:
            raise ConfigError(f"contract file {path} does not exist") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"contract file {path} is not valid TOML: {exc}") from exc
        check_keys(f"{path}:", data, ["contract"])
        contract = cls.from_table(data.get("contract", {}), f"{path}: [contract]", path.parent)
        return contract.model_copy(update={"sources": [*contract.sources, str(path)]})

    def merged(self, other: Contract) -> Contract:
        return Contract(**{k: getattr(self, k) + getattr(other, k) for k in KINDS},
                        sources=self.sources + other.sources)

    def __len__(self) -> int:
        return sum(len(getattr(self, kind)) for kind in KINDS)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)

    def checks(self, dataset: Dataset, now: datetime) -> list[Check]:
        """Every entry as the finding(s) it proposes, or why it cannot be checked here."""
        out: list[Check] = []
        for i, key in enumerate(self.keys):
            out += _key_checks(f"keys[{i}]", key, dataset)
        for kind in ("references", "ranges", "allowed", "patterns", "freshness"):
            for i, entry in enumerate(getattr(self, kind)):
                out.append(_CHECKERS[kind](f"{kind}[{i}]", entry, dataset, now))
        return out


def _entry(model: type[_Entry], item: Any, where: str, kind: str) -> _Entry:
    if not isinstance(item, dict):
        raise fail(where, "must be a table")
    check_keys(where, item, _FIELDS[kind])
    try:
        return model.model_validate(item)
    except ValidationError as exc:
        first = exc.errors()[0]
        place = ".".join(str(p) for p in first["loc"])
        raise fail(join(where, place) if place else where,
                   first["msg"].removeprefix("Value error, ")) from None


@dataclass(frozen=True)
class Check:
    """One contract entry's proposal: `arguments` for write_finding, or `problem` (why it
    cannot be checked on this snapshot)."""

    id: str  # e.g. "keys[0].duplicates", "ranges[2]"
    description: str
    arguments: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None


def _column(ref: str, dataset: Dataset) -> tuple[Table, str] | str:
    """(table, column's name in its view), or why the ref names nothing here."""
    found = dataset.resolve(ref)
    if found is None and dataset.single and "." in ref:  # `table.column` in a one-table dataset
        head, _, rest = ref.partition(".")
        if head in (dataset.tables[0].name, "data"):
            found = dataset.resolve(rest)
    if found is None:
        return f"no column {ref!r} in this snapshot (columns: {', '.join(dataset.column_names[:40])})"
    return found[0], found[1].name


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(value: Scalar) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def _proposal(category: str, table: Table, dataset: Dataset, columns: list[str], title: str,
              rationale: str, **sql: str) -> dict[str, Any]:
    return {"category": category, "columns": sorted({dataset.ref(table, c) for c in columns}),
            "title": f"contract: {title}", "rationale": f"declared in the contract: {rationale}",
            "view": "data" if dataset.single else table.name, **sql}


def _key_checks(cid: str, entry: KeyCheck, dataset: Dataset) -> list[Check]:
    refs = [c if entry.table is None else f"{entry.table}.{c}" for c in entry.columns]
    found = [_column(r, dataset) for r in refs]
    text = f"{', '.join(refs)} is a key"
    problems = [f for f in found if isinstance(f, str)]
    tables = {f[0].name for f in found if not isinstance(f, str)}
    if problems or len(tables) != 1:
        return [Check(cid, text, problem=problems[0] if problems else "a key's columns are one table's")]
    table = next(f[0] for f in found if not isinstance(f, str))
    names = [f[1] for f in found if not isinstance(f, str)]
    cols = ", ".join(_q(n) for n in names)
    view = "data" if dataset.single else table.name
    dup = _proposal("uniqueness", table, dataset, names, f"{text}, but values repeat",
                    f"{text} (unique)", predicate=f"({cols}) IN (SELECT {cols} FROM {view} "
                                                  f"GROUP BY ALL HAVING count(*) > 1)")
    nulls = _proposal("completeness", table, dataset, names, f"{text}, but it is null",
                      f"{text} (never null)",
                      predicate=" OR ".join(f"{_q(n)} IS NULL" for n in names))
    return [Check(f"{cid}.duplicates", text, dup), Check(f"{cid}.nulls", text, nulls)]


def _reference(cid: str, entry: ReferenceCheck, dataset: Dataset, now: datetime) -> Check:
    text = f"{entry.from_} refers to {entry.to}"
    source, target = _column(entry.from_, dataset), _column(entry.to, dataset)
    for found in (source, target):
        if isinstance(found, str):
            return Check(cid, text, problem=found)
    assert not isinstance(source, str) and not isinstance(target, str)
    (table, col), (other, key) = source, target
    target_view = "data" if dataset.single else other.name
    args = _proposal("referential", table, dataset, [col], f"{text}, but some values are absent "
                     f"there", text, predicate=f"{_q(col)} IS NOT NULL AND {_q(col)} NOT IN "
                     f"(SELECT {_q(key)} FROM {target_view} WHERE {_q(key)} IS NOT NULL)")
    args["columns"] = sorted({*args["columns"], dataset.ref(other, key)})
    return Check(cid, text, args)


def _range(cid: str, entry: RangeCheck, dataset: Dataset, now: datetime) -> Check:
    bounds = " and ".join(p for p in (entry.min is not None and f">= {entry.min}",
                                      entry.max is not None and f"<= {entry.max}") if p)
    text = f"{entry.column} {bounds}"
    found = _column(entry.column, dataset)
    if isinstance(found, str):
        return Check(cid, text, problem=found)
    table, col = found
    outside = [f"{_q(col)} < {_lit(entry.min)}" if entry.min is not None else "",
               f"{_q(col)} > {_lit(entry.max)}" if entry.max is not None else ""]
    return Check(cid, text, _proposal("range", table, dataset, [col], f"{entry.column} outside "
                                      "its declared range", text,
                                      predicate=" OR ".join(p for p in outside if p)))


def _allowed(cid: str, entry: AllowedCheck, dataset: Dataset, now: datetime) -> Check:
    text = f"{entry.column} in {{{', '.join(map(str, entry.values))}}}"
    found = _column(entry.column, dataset)
    if isinstance(found, str):
        return Check(cid, text, problem=found)
    table, col = found
    values = ", ".join(_lit(str(v).lower() if isinstance(v, bool) else str(v)) for v in entry.values)
    return Check(cid, text, _proposal("validity", table, dataset, [col], f"{entry.column} has "
                                      "a value the contract does not allow", text,
                                      predicate=f"{_q(col)} IS NOT NULL AND CAST({_q(col)} AS "
                                                f"VARCHAR) NOT IN ({values})"))


def _pattern(cid: str, entry: PatternCheck, dataset: Dataset, now: datetime) -> Check:
    text = f"{entry.column} matches {entry.regex}"
    found = _column(entry.column, dataset)
    if isinstance(found, str):
        return Check(cid, text, problem=found)
    table, col = found
    return Check(cid, text, _proposal(
        "validity", table, dataset, [col], f"{entry.column} does not match its declared pattern",
        text, predicate=f"{_q(col)} IS NOT NULL AND NOT regexp_full_match(CAST({_q(col)} AS "
                        f"VARCHAR), {_lit(entry.regex)})"))


def _freshness(cid: str, entry: FreshnessCheck, dataset: Dataset, now: datetime) -> Check:
    thresholds = []
    if entry.max_age is not None:
        match = _AGE.match(entry.max_age)
        assert match is not None  # validated
        since = now - timedelta(**{_AGE_UNITS[match[2]]: float(match[1])})
        thresholds.append(since.replace(tzinfo=None, microsecond=0).isoformat(sep=" "))
    if entry.not_before is not None:
        thresholds.append(entry.not_before)
    text = f"the latest {entry.column} is at least {max(thresholds)}" + (
        f" (max_age {entry.max_age} when audited at {now:%Y-%m-%d %H:%M}Z)" if entry.max_age else "")
    found = _column(entry.column, dataset)
    if isinstance(found, str):
        return Check(cid, text, problem=found)
    table, col = found
    view = "data" if dataset.single else table.name
    latest = f"max(CAST({_q(col)} AS TIMESTAMP))"
    stale = " OR ".join(f"{latest} < CAST({_lit(t)} AS TIMESTAMP)" for t in thresholds)
    return Check(cid, text, _proposal(
        "coverage", table, dataset, [col], f"{entry.column} is not fresh", text,
        count_sql=f"SELECT CASE WHEN {latest} IS NULL OR {stale} THEN 1 ELSE 0 END FROM {view}",
        denominator_sql="SELECT 1",
        examples_sql=f"SELECT {latest} AS latest FROM {view} HAVING {latest} IS NULL OR {stale}"))


_CHECKERS: dict[str, Callable[[str, Any, Dataset, datetime], Check]] = {"references": _reference, "ranges": _range, "allowed": _allowed,
             "patterns": _pattern, "freshness": _freshness}
