"""Which files are one table, and what each table (and view) is called.

`group_files(sources)` puts the data files into tables: files of one folder (Hive `key=value`
folders are part of the folder above them) whose column names mostly agree are partitions of one
table; a file joins the first table of its folder whose first file has the same column names,
or shares at least half of the union of their column names *and* has a name of the same stem
(its letters: `flights-0`/`flights-1`, `2024-01`/`2024-02`), so a partition that changed a
column's type, or gained or lost a column, stays in its table (schema drift to report, not
another table) while related tables that share their key columns (`allstar` and `salaries`,
`batting` and `battingpost`) stay apart; other files start a table of their own; every folder is
its own table(s).

`table_names(groups, ...)` names them:

- a folder that holds one table gives it its name (the dataset's root: its folder name, or the
  file's name when one file was given; the filings corpus is `filings`);
- in a folder of several tables, a one-file table takes the file's name, a table of several files
  the common start of their names (`orders-0`, `orders-1` -> `orders`), else `<folder>_<n>`.

`safe_name(text)` makes an identifier no SQL needs to quote: lower case, runs of anything but
`a-z0-9_` as one `_`, `t_` before a leading digit, `_t` after a DuckDB reserved keyword (`order`
-> `order_t`), at most 60 characters. Clashes (two folders both named `2024`, a table called
`data` where `data` is the alias, a per-file view equal to a table) are resolved in order, first
come first served, by appending `_2`, `_3`, ...
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import PurePosixPath

import duckdb

from parquet_agent.audit.sources import Source, Sources

AGREE = 0.5  # shared share of the union of two files' column names for them to be one table
MAX_NAME = 60


def group_files(sources: Sources) -> list[list[Source]]:
    """The files as tables (lists of sources), in order of their folder and first file."""
    by_folder: dict[str, list[tuple[set[str], list[Source]]]] = {}
    for source in sources.files:
        names = {c for c, _ in source.entry.schema} | {k for k, _ in source.partition}
        groups = by_folder.setdefault(source.folder, [])
        for columns, files in groups:
            union = columns | names
            if columns == names or (len(columns & names) >= AGREE * len(union)
                                    and _name_stem(files[0].name) == _name_stem(source.name)):
                files.append(source)
                break
        else:
            groups.append((names, [source]))
    return [files for folder in sorted(by_folder) for _, files in by_folder[folder]]


def _name_stem(name: str) -> str:
    """The letters of a file's name without its folder and suffixes: what its partitions share."""
    return re.sub(r"[^a-z]+", "", _stem(PurePosixPath(name).name).lower())


def table_names(groups: list[list[Source]], sources: Sources, filings: list[bool],
                taken: set[str]) -> list[str]:
    """One safe, unique name per group (see the module docstring); `taken` grows."""
    per_folder: dict[str, int] = {}
    for files in groups:
        per_folder[files[0].folder] = per_folder.get(files[0].folder, 0) + 1
    names = []
    seen: dict[str, int] = {}
    for files, is_filings in zip(groups, filings):
        folder = files[0].folder
        seen[folder] = seen.get(folder, 0) + 1
        if is_filings:
            base = "filings"
        elif per_folder[folder] == 1:
            base = _stem(files[0].name) if sources.single_file else (
                PurePosixPath(folder).name if folder else sources.root.name)
        elif len(files) == 1:
            base = _stem(files[0].name)
        else:
            prefix = os.path.commonprefix([_stem(f.name) for f in files]).rstrip("-_. 0123456789")
            base = prefix or f"{PurePosixPath(folder).name or sources.root.name}_{seen[folder]}"
        names.append(unique(safe_name(base), taken))
    return names


def unique(name: str, taken: set[str]) -> str:
    """`name`, or `name_2`, `name_3`, ... : the first not in `taken` (which it joins)."""
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name[:MAX_NAME - 1 - len(str(n))]}_{n}"
    taken.add(candidate)
    return candidate


def safe_name(text: str) -> str:
    name = re.sub(r"[^a-z0-9_]+", "_", text.lower()).strip("_")
    name = re.sub(r"_+", "_", name) or "t"
    if name[0].isdigit():
        name = "t_" + name
    if name in _keywords():
        name += "_t"
    return name[:MAX_NAME]


def file_view_name(file_name: str) -> str:
    """The per-file view of `file_name` (a partition of a table of several files): `f_<stem>`."""
    return safe_name("f_" + _stem(file_name))


def _stem(name: str) -> str:
    base = PurePosixPath(name).name
    for suffix in (".gz", ".parquet", ".csv", ".tsv", ".jsonl", ".ndjson"):
        if base.lower().endswith(suffix):
            base = base[: -len(suffix)]
    return base


@functools.cache
def _keywords() -> frozenset[str]:
    """DuckDB's keywords that cannot name a table unquoted (measured: reserved and
    type_function ones; `FROM order` is a syntax error)."""
    con = duckdb.connect(":memory:")
    try:
        rows = con.execute("SELECT keyword_name FROM duckdb_keywords() "
                           "WHERE keyword_category IN ('reserved', 'type_function')").fetchall()
    finally:
        con.close()
    return frozenset(r[0].lower() for r in rows)
