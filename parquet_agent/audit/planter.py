"""The defect planter: copy a dataset and inject known defects, with a ground-truth manifest.

    manifest = plant("data/sample", "data/planted", seed=0, rate=0.01)

Every defect touches `rate` of the rows (at least one), each on rows no other defect touches,
so every planted row is attributable to one defect; rows keep their order and file, so a row's
key `(_file, _row)` is the same in the copy (the halved file is kept out of the other defects).
For the filings corpus the defects are the realistic ones of `FILINGS_DEFECTS`; any other
dataset gets the generic ones (nulls, a duplicated key, a scale error, a halved file, a changed
type). The manifest (`planted-defects.json` in `out`, schema_version 1) lists each defect's id,
category, columns, operation, affected row keys (or files) and the seed.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq

from parquet_agent.audit.dataset import Dataset
from parquet_agent.errors import UsageError
from parquet_agent.files import atomic_write_bytes

SCHEMA_VERSION = 1
RATES = (0.001, 0.01, 0.05)
MANIFEST = "planted-defects.json"  # in the copy's folder (a snapshot reads only *.parquet)


@dataclass(frozen=True)
class Defect:
    id: str
    category: str
    columns: tuple[str, ...]
    operation: str
    apply: Callable[[dict, random.Random, list[dict]], None]  # (row, rng, all rows of the file)


def _md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()


def _set(column: str, value: Callable[[dict, random.Random], Any]) -> Callable:
    def apply(row: dict, rng: random.Random, rows: list[dict]) -> None:
        row[column] = value(row, rng)
    return apply


def _unknown_filer(row: dict, rng: random.Random, rows: list[dict]) -> None:
    """A mistyped filer ID: file_stem's first 10 digits now name no company and no agent."""
    row["file_stem"] = f"{rng.randint(10**8, 10**9 - 1):010d}" + row["file_stem"][10:]


def _empty_md(row: dict, rng: random.Random, rows: list[dict]) -> None:
    row.update(parsed_md="", char_count=0, md5=_md5(""))


FILINGS_DEFECTS = (
    Defect("null_file_stem", "completeness", ("file_stem",), "file_stem set to null",
           _set("file_stem", lambda r, g: None)),
    Defect("duplicate_file_stem", "uniqueness", ("file_stem",),
           "file_stem copied from another filing", _set("file_stem", lambda r, g: None)),
    Defect("char_count_mismatch", "consistency", ("char_count", "parsed_md"),
           "char_count off by 1-50", _set("char_count", lambda r, g: r["char_count"] + g.randint(1, 50))),
    Defect("md5_mismatch", "consistency", ("md5", "parsed_md"), "md5 of other text",
           _set("md5", lambda r, g: _md5(f"other {g.random()}"))),
    Defect("month_mismatch", "coverage", ("month",), "month moved to the next month",
           _set("month", lambda r, g: r["month"] % 12 + 1)),
    Defect("accession_nondigit", "validity", ("accession",), "accession given a CIK prefix",
           _set("accession", lambda r, g: "CIK" + str(r["accession"]))),
    Defect("source_format_spelling", "validity", ("source_format",),
           "source_format respelled in capitals", _set("source_format", lambda r, g: str(r["source_format"]).upper() + " ")),
    Defect("empty_parsed_md", "completeness", ("parsed_md",), "parsed_md emptied (count and md5 kept consistent)",
           _empty_md),
    Defect("char_count_x10", "range", ("char_count",), "char_count multiplied by 10 in one file",
           _set("char_count", lambda r, g: r["char_count"] * 10)),
    # last, so the rows of the defects above stay those of earlier manifests for a seed
    Defect("unknown_filer", "referential", ("file_stem",),
           "file_stem's filer ID mistyped: it names neither the company nor a filing agent",
           _unknown_filer),
)


def plant(source: str | Path, out: str | Path, *, seed: int = 0, rate: float = 0.01) -> dict:
    """Copy `source` into `out` with the defects planted; returns (and writes) the manifest."""
    if not 0 < rate <= 0.1:
        raise UsageError(f"rate must be in (0, 0.1] (e.g. {', '.join(map(str, RATES))}), not {rate}")
    dataset = Dataset.open(source)
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"{out} is not empty; plant into a new folder")
    if len(dataset.snapshot.files) < 3:
        raise UsageError(f"{source}: the planter needs at least 3 files (one is halved, one "
                         "changes type, the rest take the row defects)")
    rng = random.Random(seed)
    tables = {f.name: pq.read_table(dataset.root / f.name) for f in dataset.snapshot.files}
    rows = {name: t.to_pylist() for name, t in tables.items()}
    names = sorted(rows)
    retyped = names[0]
    # halve the largest file (a file already short would hide the planted volume defect)
    halved = max(names[1:], key=lambda n: (len(rows[n]), n))
    total = sum(len(r) for r in rows.values())
    k = max(1, round(rate * total))
    defects = FILINGS_DEFECTS if dataset.is_filings else _generic_defects(dataset)
    free = [(n, i) for n in names if n != halved for i in range(len(rows[n]))]
    rng.shuffle(free)
    records = []
    for defect in defects:
        picked = _pick(defect, free, k, rows, rng)
        for name, i in picked:
            if defect.id == "duplicate_file_stem":
                source_name, j = free.pop()
                rows[name][i]["file_stem"] = rows[source_name][j]["file_stem"]
                picked = picked + [(source_name, j)]
            else:
                defect.apply(rows[name][i], rng, rows[name])
        records.append(_record(defect, sorted(set(picked)), seed))
    kept = len(rows[halved]) // 2
    rows[halved] = rows[halved][:kept]
    records.append({"id": "half_file", "category": "volume", "columns": ["_file"],
                    "operation": f"{halved} cut to its first {kept} rows",
                    "rows": [[halved, i] for i in range(kept)], "files": [halved], "seed": seed})
    retype_column = "year" if dataset.is_filings else _retype_column(dataset)
    records.append({"id": "type_change", "category": "schema_drift", "columns": [retype_column],
                    "operation": f"{retype_column} written with another type in {retyped}", "rows": [],
                    "files": [retyped], "seed": seed})
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        table = pa.Table.from_pylist(rows[name], schema=tables[name].schema)
        if name == retyped:
            index = table.schema.get_field_index(retype_column)
            old_type = table.schema.field(retype_column).type
            new_type = pa.large_string() if pa.types.is_string(old_type) else pa.string()
            table = table.set_column(index, pa.field(retype_column, new_type),
                                     table.column(retype_column).cast(new_type))
        pq.write_table(table, out / name)
    for extra in ("questions.jsonl",):
        if (dataset.root / extra).exists():
            shutil.copy2(dataset.root / extra, out / extra)
    manifest = {"schema_version": SCHEMA_VERSION, "source": str(dataset.root),
                "source_snapshot": dataset.snapshot.snapshot_id, "seed": seed, "rate": rate,
                "rows_per_defect": k, "defects": records}
    atomic_write_bytes(out / MANIFEST,
                       json.dumps(manifest, indent=1).encode())
    return manifest


def _pick(defect: Defect, free: list, k: int, rows: dict, rng: random.Random) -> list:
    if "in one file" not in defect.operation:
        return [free.pop() for _ in range(min(k, len(free)))]
    target = free[-1][0]  # every row of this defect comes from one file
    mine = [x for x in free if x[0] == target][:k]
    for x in mine:
        free.remove(x)
    return mine


def _record(defect: Defect, picked: list, seed: int) -> dict:
    return {"id": defect.id, "category": defect.category, "columns": list(defect.columns),
            "operation": defect.operation, "rows": [list(p) for p in picked],
            "files": sorted({p[0] for p in picked}), "seed": seed}


def _numeric_column(dataset: Dataset) -> str:
    for name, kind in dataset.columns:
        if kind.startswith(("int", "uint", "double", "float")):
            return name
    raise UsageError(f"{dataset.root}: the generic planter needs a numeric column")


def _retype_column(dataset: Dataset) -> str:
    """A text column (written as large_string: a writer change) when there is one, so the
    numeric column keeps its type for the other defects; else the numeric one, as text."""
    numeric = _numeric_column(dataset)
    first = dataset.columns[0][0]
    for name, kind in dataset.columns:
        if kind == "string" and name != first:
            return name
    return numeric


def _generic_defects(dataset: Dataset) -> tuple[Defect, ...]:
    numeric = _numeric_column(dataset)
    first = dataset.columns[0][0]
    return (
        Defect("null_value", "completeness", (numeric,), f"{numeric} set to null",
               _set(numeric, lambda r, g: None)),
        Defect("scale_error", "range", (numeric,), f"{numeric} multiplied by 1000 in one file",
               _set(numeric, lambda r, g: None if r[numeric] is None else r[numeric] * 1000)),
        Defect("null_key", "completeness", (first,), f"{first} set to null",
               _set(first, lambda r, g: None)),
    )
