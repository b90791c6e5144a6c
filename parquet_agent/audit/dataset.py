"""The dataset an audit reads: an immutable snapshot of its files, seen as tables.

    ds = Dataset.open("data/flights")          # a folder (nested folders too), or one file
    ds.tables                                  # (Table, ...): name, files, columns, rows
    ds.table("flights").columns                # (Column, ...): name, type (DuckDB), stored
    ds.column_names                            # refs: "flights.dep_delay", ... (see below)
    ds.resolve("flights.dep_delay")            # (Table, Column) or None

`Dataset.open(path, lineage=None, convert_dir=None)` finds the data files (`sources`: Parquet,
CSV, JSON lines; CSV and JSON lines are converted to Parquet in `convert_dir`, which the auditor
puts in the run folder) and records the snapshot (names, sizes, xxh3-128 content hashes, rows,
schemas; a converted file's entry is its source's bytes). Files whose columns agree are
partitions of one table; other schemas and other folders are other tables (`layout`: how they
are grouped and named). No corpus schema check: an audit takes any schema.

Views (what SQL reads; the sandbox builds them, `tools.sandbox.dataset_views`):

- one per table, named after it: its files unioned by column name, plus `_file` (the file's path
  under the root) and `_row` (the row's 0-based number in its file): `(_file, _row)` is the key
  of every row;
- `data`: the table, when the dataset is one table (as before tables existed, so the filings
  corpus' rules and the history of earlier audits keep working);
- `f_<stem>` per file of a table of several files (e.g. `f_2025_01` for `2025-01.parquet`).

Column names in views are unique ignoring case and never `_file`/`_row`: DuckDB binds names
case-insensitively, so of `region` and `Region` the second is exposed as `Region_1` (and a
stored `_file` as `_file_1`); `Column.stored` keeps the name in the file.

A column is named by its **ref**: its name when the dataset is one table (the findings of a
one-table dataset keep their keys), else `table.column` (a table name never holds a dot).

`lineage` names the dataset across snapshots (default: the folder's or file's name): findings,
history and diffs are per lineage. The filings corpus is recognised by its columns and gets its
column meanings and known properties.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb

from parquet_agent.audit.layout import file_view_name, group_files, table_names, unique
from parquet_agent.audit.sources import Source, find_sources
from parquet_agent.corpus.schema import COLUMN_MEANINGS, COLUMNS
from parquet_agent.corpus.snapshot import CorpusSnapshot

ROW_KEY = ("_file", "_row")
ALIAS = "data"  # the one table of a one-table dataset
# What is documented about the filings corpus, so an auditor does not report it as a defect.
FILINGS_KEYS = ("file_stem",)  # documented unique (FILINGS_PROPERTIES)
FILINGS_PROPERTIES = (
    "A row is a filing record, not a unique document: the same md5 under different file_stem "
    "values is a documented duplicate document, a defect only beyond what is expected.",
    "accession is the company CIK as text, sometimes zero-padded (the name is historical).",
    "file_stem is the per-filing id (the accession number) and should be unique and non-null.",
    "file_stem's first 10 digits are the ID of who submitted the filing: the company itself "
    "(its CIK, the accession column) or a filing agent, who submits for many companies.",
)
_NESTED = ("STRUCT", "MAP", "UNION")


def view_name(file_name: str) -> str:
    """The per-file view of `file_name`: `f_` and its stem (kept for callers of 0.x)."""
    return file_view_name(file_name)


@dataclass(frozen=True)
class Column:
    name: str  # in the views: unique ignoring case, never _file/_row
    type: str  # DuckDB type (of the first file that has it)
    stored: str  # the name in the files (a Hive partition key: the key)
    arrow: str = ""  # Arrow type of the first file that has it ('' for a partition key)
    partition: bool = False  # a Hive key=value folder's key, not stored in the files

    @property
    def nested(self) -> bool:
        """A list, struct, map or union: profiled by its leaves (`audit.profile`)."""
        return self.type.endswith("]") or self.type.upper().startswith(_NESTED)


@dataclass(frozen=True)
class Table:
    name: str  # its view; a safe identifier (`layout.safe_name`)
    folder: str  # under the dataset's root ('' = the root)
    files: tuple[str, ...]  # snapshot names
    columns: tuple[Column, ...]
    rows: int
    is_filings: bool = False
    partition_keys: tuple[str, ...] = ()

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def column(self, name: str) -> Column | None:
        return next((c for c in self.columns if c.name == name), None)


@dataclass(frozen=True)
class Dataset:
    root: Path
    snapshot: CorpusSnapshot
    lineage: str
    tables: tuple[Table, ...]
    sources: tuple[Source, ...] = ()
    ignored: tuple[dict[str, str], ...] = ()
    file_views: dict[str, str] = field(default_factory=dict)  # file -> its own view
    scans: dict[str, tuple[tuple[str, str, str], ...]] = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, path: str | Path, lineage: str | None = None, *,
             convert_dir: str | Path | None = None) -> Dataset:
        """Snapshot the data files at `path` (a file or a folder) as tables; UsageError when
        there is nothing to read. CSV/JSON lines are converted into `convert_dir` (default: a
        content-addressed cache in the system temp folder)."""
        found = find_sources(path, convert_dir)
        groups = group_files(found)
        with duckdb.connect(":memory:") as con:
            described = [[_describe(con, s) for s in files] for files in groups]
        filings = [set(COLUMNS) <= {c for d in ds for c, _, _ in d} for ds in described]
        taken: set[str] = set()
        names = table_names(groups, found, filings, taken)
        if len(groups) == 1:
            taken.add(ALIAS)
        tables = tuple(_table(name, files, ds, is_filings) for name, files, ds, is_filings
                       in zip(names, groups, described, filings))
        file_views = {f: unique(file_view_name(f), taken) for t in tables if len(t.files) > 1
                      for f in t.files}
        snapshot = CorpusSnapshot(tuple(s.entry for s in found.files), _now(), str(found.root))
        default = Path(found.files[0].name).stem if found.single_file else found.root.name
        scans = {s.name: tuple(d) for files, ds in zip(groups, described)
                 for s, d in zip(files, ds)}
        return cls(found.root, snapshot, lineage or default, tables, found.files, found.ignored,
                   file_views, scans)

    # -- tables and column refs ----------------------------------------------------------------

    @property
    def single(self) -> bool:
        """One table: its columns are named plainly and `data` is its alias."""
        return len(self.tables) == 1

    @property
    def is_filings(self) -> bool:
        """The dataset is the filings corpus (one table with the corpus columns)."""
        return self.single and self.tables[0].is_filings

    @property
    def meanings(self) -> dict[str, str]:
        return dict(COLUMN_MEANINGS) if self.is_filings else {}

    def table(self, name: str) -> Table:
        for t in self.tables:
            if t.name == name or (name == ALIAS and self.single):
                return t
        raise KeyError(f"no table {name!r}; the tables are {', '.join(self.table_names)}")

    @property
    def table_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tables)

    def ref(self, table: Table, column: Column | str) -> str:
        name = column if isinstance(column, str) else column.name
        return name if self.single else f"{table.name}.{name}"

    def resolve(self, ref: str) -> tuple[Table, Column] | None:
        """The table and column a ref names (None: no such column)."""
        table: Table | None = self.tables[0]
        name = ref
        if not self.single:
            head, dot, name = ref.partition(".")
            table = next((t for t in self.tables if t.name == head), None)
        if table is None or (not self.single and not dot):
            return None
        column = table.column(name)
        return None if column is None else (table, column)

    def refs(self, columns: tuple[str, ...], view: str) -> tuple[str, ...]:
        """`columns` as refs, sorted: a plain name of a column of `view`'s table becomes
        `view.name` (a finding over a table may name its columns either way); anything else is
        kept as it is (a column that does not exist is the finding gate's to refuse)."""
        if self.single:
            return tuple(sorted(set(columns)))
        table = next((t for t in self.tables if t.name == view), None)
        out = {c if self.resolve(c) is not None or table is None or table.column(c) is None
               else self.ref(table, c) for c in columns}
        return tuple(sorted(out))

    @property
    def columns(self) -> tuple[tuple[str, str], ...]:
        """(ref, type) of every column: the Arrow type where the files have one."""
        return tuple((self.ref(t, c), c.arrow or c.type) for t in self.tables for c in t.columns)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(ref for ref, _ in self.columns)

    @property
    def key_columns(self) -> tuple[str, ...]:
        """What examples show to identify a row: the row key, and file_stem for filings."""
        return (FILINGS_KEYS if self.is_filings else ()) + ROW_KEY

    # -- what the sandbox builds and the agent is told -----------------------------------------

    def path_of(self, name: str) -> Path:
        """The Parquet file the sandbox reads for snapshot file `name`."""
        return next(s.parquet for s in self.sources if s.name == name)

    def views(self) -> dict[str, list[dict[str, Any]]]:
        """View name -> its parts, one per file (what `tools.sandbox.dataset_views` builds)."""
        by_name = {s.name: s for s in self.sources}
        out: dict[str, list[dict[str, Any]]] = {}
        for t in self.tables:
            parts = [_part(t, by_name[f], self.scans[f]) for f in t.files]
            out[t.name] = parts
            if self.single and t.name != ALIAS:
                out[ALIAS] = parts
            for f, part in zip(t.files, parts):
                if f in self.file_views:
                    out[self.file_views[f]] = [part]
        return out

    def file_schemas(self, table: Table | None = None) -> dict[str, dict[str, str]]:
        """File -> {stored column: Arrow type} (of one table's files when given)."""
        files = set(table.files) if table is not None else None
        return {f.name: dict(f.schema) for f in self.snapshot.files
                if files is None or f.name in files}

    def describe(self) -> dict[str, Any]:
        """What the agent is told about the dataset before it reads anything."""
        table_of = {f: t.name for t in self.tables for f in t.files}
        return {
            "lineage": self.lineage,
            "snapshot_id": self.snapshot.snapshot_id,
            "rows": self.snapshot.rows,
            "tables": [{"table": t.name, "rows": t.rows, "files": len(t.files),
                        "columns": len(t.columns), "folder": t.folder or "."}
                       | ({"partition_keys": list(t.partition_keys)} if t.partition_keys else {})
                       for t in self.tables],
            "files": [{"file": f.name, "table": table_of[f.name], "rows": f.rows, "bytes": f.size}
                      | ({"view": self.file_views[f.name]} if f.name in self.file_views else {})
                      for f in self.snapshot.files],
            "columns": [{"column": self.ref(t, c), "type": c.type}
                        | ({"meaning": self.meanings[c.name]} if c.name in self.meanings else {})
                        | ({"table": t.name} if not self.single else {})
                        | ({"stored_as": c.stored} if c.stored != c.name else {})
                        | ({"partition_key": True} if c.partition else {})
                        for t in self.tables for c in t.columns],
            "views": self._views_text(),
            "converted": [{"file": s.name, **(s.converted or {})} for s in self.sources
                          if s.converted],
            "ignored": list(self.ignored),
            "documented_properties": list(FILINGS_PROPERTIES) if self.is_filings else [],
        }

    def _views_text(self) -> str:
        key = "plus _file, _row: the row key"
        if self.single:
            return (f"`{self.tables[0].name}` (alias `data`) is every file ({key}); "
                    "f_<stem> is one file")
        return (f"one view per table ({', '.join(self.table_names)}), each every file of its "
                f"table ({key}); f_<stem> is one file of a table of several; columns are named "
                "table.column")


def _describe(con: duckdb.DuckDBPyConnection, source: Source) -> list[tuple[str, str, str]]:
    """(stored name, DuckDB's name for it in a scan, DuckDB type) of each column, in file order:
    DuckDB renames a name equal to an earlier one but for case (`Region` -> `Region_1`)."""
    path = "'" + str(source.parquet).replace("'", "''") + "'"
    scan = con.execute(f"DESCRIBE SELECT * FROM read_parquet({path})").fetchall()
    stored = [c for c, _ in source.entry.schema]
    return [(name, row[0], row[1]) for name, row in zip(stored, scan)]


def _table(name: str, files: list[Source], described: list[list[tuple[str, str, str]]],
           is_filings: bool) -> Table:
    arrow = {c: t for s in reversed(files) for c, t in s.entry.schema}
    kinds: dict[str, str] = {}
    for columns in described:
        for stored, _, kind in columns:
            kinds.setdefault(stored, kind)
    keys = list(dict.fromkeys(k for s in files for k, _ in s.partition if k not in kinds))
    taken = {k.lower() for k in ROW_KEY}
    out = []
    for stored, kind in kinds.items():
        out.append(Column(_exposed(stored, taken), kind, stored, arrow.get(stored, "")))
    for key in keys:
        values = [v for s in files for k, v in s.partition if k == key]
        kind = "BIGINT" if all(v.lstrip("-").isdigit() for v in values) else "VARCHAR"
        out.append(Column(_exposed(key, taken), kind, key, partition=True))
    return Table(name, files[0].folder, tuple(s.name for s in files), tuple(out),
                 sum(s.entry.rows for s in files), is_filings, tuple(keys))


def _exposed(name: str, taken: set[str]) -> str:
    candidate, n = name, 0
    while candidate.lower() in taken:
        n += 1
        candidate = f"{name}_{n}"
    taken.add(candidate.lower())
    return candidate


def _part(table: Table, source: Source, described: tuple[tuple[str, str, str], ...]) -> dict[str, Any]:
    """How one file is read into its table's view: DuckDB's scan names to the exposed ones,
    Hive keys as constants, and how `_row` is numbered."""
    by_stored = {c.stored: c for c in table.columns if not c.partition}
    select = [[scan, by_stored[stored].name] for stored, scan, _ in described]
    values = dict(source.partition)
    constants = [[c.name, int(values[c.stored]) if c.type == "BIGINT" else values[c.stored]]
                 for c in table.columns if c.partition and c.stored in values]
    # a stored `file_row_number` hides DuckDB's virtual row number: count the rows instead
    row = "window" if any(scan.lower() == "file_row_number" for _, scan, _ in described) else "virtual"
    return {"file": source.name, "select": None if all(a == b for a, b in select) else select,
            "constants": constants, "row": row}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
