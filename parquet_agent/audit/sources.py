"""The files an audit reads: found under a path, CSV and JSON lines snapshotted as Parquet.

`find_sources(path, convert_dir)` takes a Parquet, CSV or JSON-lines file, or a folder (nested
folders included), and returns `Sources`: the root, one `Source` per data file, and the files it
left out with the reason (nothing is skipped silently).

- Data files: `*.parquet`, `*.csv`, `*.tsv`, `*.jsonl`, `*.ndjson` (also `.gz`-compressed CSV
  and JSON lines). Names starting with `_` or `.` are sidecars (`_index/`, `_SUCCESS`, `.git`)
  and are left out, as are other files (`manifest.json`, `planted-defects.json`, notes).
- `key=value` folders are Hive partitions: their files belong to the table of the nearest folder
  above that is not a partition, with the keys as constant columns (an integer when every value
  of the key is one).
- The `questions.jsonl` beside a filings corpus is that corpus' questions file (DESIGN: `corpus
  build` writes it), not a table: it is left out, with that reason.
- CSV and JSON lines are converted once to Parquet (DuckDB's `read_csv` / `read_json` with
  auto-detection, one thread so rows keep their order: `_row` is the record's 0-based number;
  a CSV whose late rows break the sniffed types is read whole, then as text typed per column;
  a text column of numbers or dates with `NA`, `N/A`, `null` or `None` for some values gets
  its type, those values null)
  into `convert_dir`, named by the source's content hash, so a resume or a second audit of the
  same bytes reuses the conversion. The snapshot entry of such a file is the source itself (its
  name, size, content hash) with the rows and schema of its conversion, and `Source.converted`
  records what was read, how, and the Parquet written (path and content hash).
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.parquet as pq

from parquet_agent.corpus.schema import COLUMNS
from parquet_agent.corpus.snapshot import SnapshotFile, file_content_hash
from parquet_agent.errors import UsageError

_FORMATS = {".parquet": "parquet", ".csv": "csv", ".tsv": "csv", ".jsonl": "jsonl",
            ".ndjson": "jsonl", ".csv.gz": "csv", ".tsv.gz": "csv", ".jsonl.gz": "jsonl",
            ".ndjson.gz": "jsonl"}
_PARTITION = re.compile(r"^([^=]+)=(.*)$")
CONVERT_CACHE = "parquet-agent-snapshots"  # under the system temp folder, when no dir is given


@dataclass(frozen=True)
class Source:
    """One data file of the dataset."""

    name: str  # its path under the root, with `/` (the `_file` of its rows)
    format: str  # parquet | csv | jsonl
    parquet: Path  # what the sandbox reads: the file itself or its Parquet conversion
    folder: str  # the folder that owns its table ('' = the root): partitions are transparent
    partition: tuple[tuple[str, str], ...]  # Hive key=value folders between `folder` and it
    entry: SnapshotFile  # the snapshot's record of it
    converted: dict[str, Any] | None = None  # how a CSV/JSON-lines file became Parquet


@dataclass(frozen=True)
class Sources:
    root: Path
    single_file: bool  # the path given was one file
    files: tuple[Source, ...]
    ignored: tuple[dict[str, str], ...]  # {"file", "reason"}


def default_lineage(path: str | Path) -> str:
    """A dataset's name when none is given: its folder's name, or its file's without suffixes."""
    target = Path(path).expanduser().resolve()
    if target.is_file():
        name = target.name
        return name[: -len(s)] if (s := _suffix(name)) else target.stem
    return target.name


def _suffix(name: str) -> str | None:
    return next((s for s in _FORMATS if name.lower().endswith(s)), None)


def data_format(name: str) -> str | None:
    suffix = _suffix(name)
    return _FORMATS[suffix] if suffix else None


def find_sources(path: str | Path, convert_dir: str | Path | None = None) -> Sources:
    """Every data file under `path` (see the module docstring); UsageError when there is none."""
    given = Path(path).expanduser()
    if not given.exists():
        raise UsageError(f"{given} does not exist: give a Parquet, CSV or JSON-lines file or a "
                         "folder of them")
    target = given.resolve()
    ignored: list[dict[str, str]]
    if target.is_file():
        if data_format(target.name) is None:
            raise UsageError(f"{given} is not a data file the audit reads (Parquet, CSV, TSV or "
                             "JSON lines: .parquet, .csv, .tsv, .jsonl, .ndjson)")
        found: list[tuple[str, str, tuple]] = [(target.name, "", ())]
        root, ignored = target.parent, []
    else:
        root = target
        found, ignored = _walk(root)
    ignored += _corpus_sidecars(root, found)
    found = [f for f in found if f[0] not in {i["file"] for i in ignored}]
    if not found:
        raise UsageError(
            f"{given} holds no data file the audit reads (*.parquet, *.csv, *.tsv, *.jsonl, "
            f"*.ndjson, in it or its sub-folders; names starting with _ or . are sidecars)"
            + (f"; left out: {', '.join(i['file'] for i in ignored[:5])}" if ignored else ""))
    work = (Path(convert_dir) if convert_dir is not None
            else Path(tempfile.gettempdir()) / CONVERT_CACHE).resolve()
    files = []
    for name, folder, partition in found:
        files.append(_source(root, name, folder, partition, work))
    return Sources(root, target.is_file(), tuple(files), tuple(ignored))


def _walk(root: Path) -> tuple[list[tuple[str, str, tuple]], list[dict[str, str]]]:
    """(name, owning folder, partition) of every data file under `root`, and what was left out."""
    found: list[tuple[str, str, tuple]] = []
    ignored: list[dict[str, str]] = []
    stack: list[tuple[Path, str, tuple]] = [(root, "", ())]
    while stack:
        folder, owner, partition = stack.pop()
        for entry in sorted(folder.iterdir(), key=lambda p: p.name):
            name = entry.relative_to(root).as_posix()
            if entry.name.startswith(("_", ".")):
                continue  # sidecars: _index/, _skip/, _SUCCESS, .git
            if entry.is_dir():
                match = _PARTITION.match(entry.name)
                if match:
                    stack.append((entry, owner, partition + ((match[1], match[2]),)))
                else:
                    stack.append((entry, name, ()))
            elif entry.is_file() and data_format(entry.name):
                if entry.stat().st_size == 0:
                    ignored.append({"file": name, "reason": "an empty file (0 bytes): no header, "
                                    "no rows"})
                else:
                    found.append((name, owner, partition))
            elif entry.is_file():
                ignored.append({"file": name, "reason": "not a data file (Parquet, CSV, JSON lines)"})
    found.sort(key=lambda f: f[0])
    return found, ignored


def _corpus_sidecars(root: Path, found: list[tuple[str, str, tuple]]) -> list[dict[str, str]]:
    """The questions file of a filings corpus folder is part of the corpus build, not a table."""
    top = [n for n, folder, _ in found if folder == "" and n.endswith(".parquet")]
    if "questions.jsonl" not in {n for n, _, _ in found} or not top:
        return []
    names = {f.name for f in pq.read_schema(root / top[0])}
    if not set(COLUMNS) <= names:
        return []
    return [{"file": "questions.jsonl", "reason": "the questions file of this filings corpus "
             "(written by `corpus build`), not a table: audit it by its own path"}]


def _source(root: Path, name: str, folder: str, partition: tuple, work: Path) -> Source:
    path = root / name
    kind = data_format(name) or "parquet"
    if kind == "parquet":
        return Source(name, kind, path, folder, partition, SnapshotFile.read(
            path, check_schema=False, name=name))
    stat = path.stat()
    content_hash = file_content_hash(path)
    parquet = work / (content_hash.split(":", 1)[1] + ".parquet")
    reader = _convert(path, kind, parquet)
    meta = pq.ParquetFile(parquet).metadata
    entry = SnapshotFile(name, stat.st_size, stat.st_mtime_ns, content_hash, meta.num_rows,
                         meta.num_row_groups, tuple((f.name, str(f.type))
                                                    for f in meta.schema.to_arrow_schema()))
    converted = {"format": kind, "reader": reader, "duckdb": duckdb.__version__,
                 "parquet": str(parquet), "parquet_hash": file_content_hash(parquet)}
    return Source(name, kind, parquet, folder, partition, entry, converted)


def _readers(path: Path, kind: str) -> list[str]:
    """The readers tried on `path`, in order: each later one copes with what broke the one before."""
    if kind == "jsonl":
        return ["read_json(format = 'newline_delimited')"]
    tab = ", delim = chr(9)" if ".tsv" in path.name.lower() else ""
    return [f"read_csv(auto_detect = true{tab})",
            # types sniffed from the first rows, broken by a late row ("100+" at line 53,384)
            f"read_csv(auto_detect = true, sample_size = -1{tab})",
            # a value no type of its column fits ("nil" among numbers), mixed line endings:
            # read as text, then each column typed where every value converts
            f"read_csv(auto_detect = true, all_varchar = true, strict_mode = false{tab})"]


def _convert(path: Path, kind: str, out: Path) -> str:
    """Write `path` as Parquet at `out` (kept when it is already there: named by content);
    returns the reader that read it (recorded beside it, for a reuse)."""
    used = out.with_name(out.name + ".reader")
    readers = _readers(path, kind)
    if out.exists():
        return used.read_text() if used.exists() else readers[0]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    con = duckdb.connect(":memory:", config={"threads": 1, "preserve_insertion_order": True})
    try:
        for reader in readers:
            call = reader.replace("(", "(" + _quote(str(path)) + ", ", 1)
            try:  # the typing scan reads the whole file too: a reader may fail in either
                select = (_typed(con, call, na_only="all_varchar" not in reader) if kind == "csv"
                          else f"SELECT * FROM {call}")
                con.execute(f"COPY ({select}) TO {_quote(str(tmp))} (FORMAT parquet)")
            except duckdb.Error as exc:
                error = exc
                continue
            os.replace(tmp, out)
            used.write_text(reader)
            return reader
        raise UsageError(f"{path.name}: could not be read as {kind.upper()} "
                         f"({str(error).strip().splitlines()[0]}); fix the file or convert it to "
                         "Parquet yourself") from error
    finally:
        con.close()
        tmp.unlink(missing_ok=True)


# each type with the test every value of a column must pass (TRY_CAST alone rounds '20.5' to a
# BIGINT and cuts '2010-03-24 09:00' to a DATE; a code with a leading zero stays text)
_TYPES = (("BIGINT", "regexp_full_match(trim({c}), '[+-]?[1-9][0-9]*|0') "
                     "AND TRY_CAST({c} AS BIGINT) IS NOT NULL"),
          ("DOUBLE", "NOT regexp_matches(trim({c}), '^[+-]?0[0-9]') AND TRY_CAST({c} AS DOUBLE) IS NOT NULL"),
          ("DATE", "regexp_full_match(trim({c}), '[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}') "
                   "AND TRY_CAST({c} AS DATE) IS NOT NULL"),
          ("TIMESTAMP", "TRY_CAST({c} AS TIMESTAMP) IS NOT NULL"))
# how exports write a missing value in a text file (R's NA above all): null in a typed column
NA_TOKENS = ("NA", "N/A", "n/a", "null", "NULL", "None")


def _typed(con: duckdb.DuckDBPyConnection, call: str, *, na_only: bool = False) -> str:
    """A SELECT over a CSV read giving each text column the first of `_TYPES` that every one of
    its values fits, `NA_TOKENS` read as nulls (text otherwise); with `na_only`, only columns
    holding such a token are retyped (the sniffer typed the others on purpose)."""
    columns = con.execute(f"DESCRIBE SELECT * FROM {call}").fetchall()
    text = [name for name, kind, *_ in columns if kind == "VARCHAR"]
    if not text:
        return f"SELECT * FROM {call}"
    tokens = ", ".join(_quote(t) for t in NA_TOKENS)
    terms: dict[str, str] = {}  # alias -> aggregate, one scan for every text column
    for i, name in enumerate(text):
        c, na = _identifier(name), f"trim({_identifier(name)}) IN ({tokens})"
        terms[f"na{i}"] = f"count(*) FILTER (WHERE {na})"
        terms[f"n{i}"] = f"count({c}) FILTER (WHERE NOT {na})"
        for k, (_, test) in enumerate(_TYPES):
            terms[f"t{i}_{k}"] = f"count(*) FILTER (WHERE NOT {na} AND {test.format(c=c)})"
    counts = con.execute(f"SELECT {', '.join(terms.values())} FROM {call}").fetchone() or ()
    row = dict(zip(terms, counts))
    out = []
    for name, *_ in columns:
        c = _identifier(name)
        i = text.index(name) if name in text else -1
        kind = None
        if i >= 0 and row[f"n{i}"] > 0 and (row[f"na{i}"] > 0 or not na_only):
            kind = next((t for k, (t, _) in enumerate(_TYPES) if row[f"t{i}_{k}"] == row[f"n{i}"]), None)
        out.append(f"CAST(CASE WHEN trim({c}) IN ({tokens}) THEN NULL ELSE trim({c}) END AS {kind}) AS {c}"
                   if kind else c)
    return f"SELECT {', '.join(out)} FROM {call}"


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
