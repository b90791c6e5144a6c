"""The dataset an audit reads: an immutable snapshot of any folder of Parquet files.

`Dataset.open(folder, lineage=None)` snapshots every `*.parquet` at the top of `folder` exactly as
experiments do (`corpus.snapshot`: names, sizes, xxh3-128 content hashes, schemas), without the
corpus schema check: an audit takes any schema. The agent sees the files through views:

- `data`: every file, unioned by column name, plus `_file` (the file's name) and `_row` (the
  row's 0-based number in its file): `(_file, _row)` is the key of every row;
- one view per file, `f_<stem>` (e.g. `f_2025_01` for `2025-01.parquet`), with the same columns.

`lineage` names the dataset across snapshots (default: the folder's name): findings, history and
diffs are per lineage, so a re-export of the same data keeps its history. The filings corpus is
recognised by its columns and gets its column meanings and known properties.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from parquet_agent.corpus.schema import COLUMN_MEANINGS, COLUMNS
from parquet_agent.corpus.snapshot import CorpusSnapshot
from parquet_agent.errors import UsageError

ROW_KEY = ("_file", "_row")
# What is documented about the filings corpus, so an auditor does not report it as a defect.
FILINGS_PROPERTIES = (
    "A row is a filing record, not a unique document: the same md5 under different file_stem "
    "values is a documented duplicate document, a defect only beyond what is expected.",
    "accession is the company CIK as text, sometimes zero-padded (the name is historical).",
    "file_stem is the per-filing id (the accession number) and should be unique and non-null.",
    "file_stem's first 10 digits are the ID of who submitted the filing: the company itself "
    "(its CIK, the accession column) or a filing agent, who submits for many companies.",
)


def view_name(file_name: str) -> str:
    """The per-file view of `file_name`: `f_` and its stem with non-alphanumerics as `_`."""
    return "f_" + re.sub(r"[^0-9A-Za-z]", "_", Path(file_name).stem).lower()


@dataclass(frozen=True)
class Dataset:
    root: Path
    snapshot: CorpusSnapshot
    lineage: str
    columns: tuple[tuple[str, str], ...]  # (name, Arrow type of its first file), union order
    is_filings: bool
    meanings: dict[str, str] = field(default_factory=dict)

    @classmethod
    def open(cls, folder: str | Path, lineage: str | None = None,
             snapshot: CorpusSnapshot | None = None) -> Dataset:
        root = Path(folder).resolve()
        snapshot = snapshot or CorpusSnapshot.take(root, check_schema=False)
        columns: dict[str, str] = {}
        for f in snapshot.files:
            for name, kind in f.schema:
                columns.setdefault(name, kind)
        if set(columns) & set(ROW_KEY):
            raise UsageError(f"{root}: a column is named _file or _row; the audit adds those "
                             "to every row (its key), rename the column first")
        is_filings = set(COLUMNS) <= set(columns)
        return cls(root, snapshot, lineage or root.name, tuple(columns.items()), is_filings,
                   dict(COLUMN_MEANINGS) if is_filings else {})

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.columns)

    @property
    def key_columns(self) -> tuple[str, ...]:
        """What examples show to identify a row: the row key, and file_stem for filings."""
        return (("file_stem",) if self.is_filings else ()) + ROW_KEY

    def views(self) -> dict[str, list[str]]:
        """View name -> the files it reads (what the sandbox builds)."""
        names = [f.name for f in self.snapshot.files]
        per_file = {view_name(n): [n] for n in names}
        if len(per_file) != len(names):
            raise UsageError(f"{self.root}: two files map to the same view name; rename one")
        return {"data": names, **per_file}

    def file_schemas(self) -> dict[str, dict[str, str]]:
        return {f.name: dict(f.schema) for f in self.snapshot.files}

    def describe(self) -> dict:
        """What the agent is told about the dataset before it reads anything."""
        return {
            "lineage": self.lineage,
            "snapshot_id": self.snapshot.snapshot_id,
            "rows": self.snapshot.rows,
            "files": [{"file": f.name, "view": view_name(f.name), "rows": f.rows,
                       "bytes": f.size} for f in self.snapshot.files],
            "columns": [{"column": n, "type": t, "meaning": self.meanings.get(n)}
                        for n, t in self.columns],
            "views": "`data` is every file (plus _file, _row: the row key); f_<stem> is one file",
            "documented_properties": list(FILINGS_PROPERTIES) if self.is_filings else [],
        }
