"""The immutable list of Parquet files a run reads, and the check that they are still the same.

`CorpusSnapshot.take(folder)` records, for every `*.parquet` at the top of `folder` (never
subfolders: `_index/` and friends are sidecars): its name, size, mtime, content hash, row count,
row groups and schema, after validating the schema against the corpus contract.

The content hash is xxh3-128 over every byte of the file, tagged `xxh3_128:`. Why: a snapshot must
notice *any* change to a file a comparison depends on, so a footer-only or size+mtime check is not
enough; xxh3 hashes at >10 GB/s on one core, so hashing is bounded by reading the file (measured
here: 6.3 GB/s from the page cache, about 1 s for the 6.44 GiB reference corpus warm). A
cryptographic hash would be 5-10x slower and buys nothing against accidental change.

`check(folder)` reports separately: files that appeared since (excluded from the run and recorded),
files that are missing, and snapshotted files that changed (which invalidates a comparison:
`raise_for_changes()` raises SnapshotChangedError). `quick=True` compares size and mtime only,
for cheap drift checks during a run.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from functools import cached_property
from datetime import datetime, timezone
from pathlib import Path

import pyarrow.parquet as pq
import xxhash

from parquet_agent.corpus.schema import validate_schema
from parquet_agent.errors import CorpusError, SchemaError, SnapshotChangedError

SCHEMA_VERSION = 1
_BLOCK = 8 * 1024 * 1024


def file_content_hash(path: Path) -> str:
    """xxh3-128 over every byte of the file, as `xxh3_128:<hex>`."""
    h = xxhash.xxh3_128()
    with open(path, "rb") as f:
        while block := f.read(_BLOCK):
            h.update(block)
    return "xxh3_128:" + h.hexdigest()


@dataclass(frozen=True)
class SnapshotFile:
    name: str  # relative to the corpus folder
    size: int
    mtime_ns: int
    content_hash: str
    rows: int
    row_groups: int
    schema: tuple[tuple[str, str], ...]  # (column, Arrow type) in file order

    @classmethod
    def read(cls, path: Path, *, check_schema: bool = True, name: str | None = None) -> SnapshotFile:
        """The entry of the file at `path`, named `name` (default: its file name; an audit
        names a file in a sub-folder by its path under the dataset's root)."""
        try:
            meta = pq.ParquetFile(path).metadata
        except Exception as exc:  # pyarrow raises several types for a non-Parquet file
            raise SchemaError(f"{path.name}: not a readable Parquet file ({exc})") from exc
        schema = meta.schema.to_arrow_schema()
        if check_schema:
            validate_schema(schema, path.name)
        stat = path.stat()
        return cls(
            name=name or path.name,
            size=stat.st_size,
            mtime_ns=stat.st_mtime_ns,
            content_hash=file_content_hash(path),
            rows=meta.num_rows,
            row_groups=meta.num_row_groups,
            schema=tuple((f.name, str(f.type)) for f in schema),
        )


@dataclass(frozen=True)
class SnapshotCheck:
    """What differs between a snapshot and its folder now."""

    new: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    details: tuple[str, ...] = ()  # one human line per changed file

    @property
    def ok(self) -> bool:
        """True when every snapshotted file is present and unchanged (new files are excluded)."""
        return not self.missing and not self.changed

    def describe(self) -> str:
        lines = []
        if self.changed:
            lines.append(
                "CHANGED since the snapshot (results are no longer comparable): "
                + "; ".join(self.details)
            )
        if self.missing:
            lines.append("missing: " + ", ".join(self.missing))
        if self.new:
            lines.append("new since the snapshot (excluded from this run): " + ", ".join(self.new))
        return "\n".join(lines) or "unchanged"

    def raise_for_changes(self) -> None:
        if not self.ok:
            raise SnapshotChangedError(self.describe())


def _parquet_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise CorpusError(f"corpus folder {folder} does not exist or is not a folder")
    return sorted(p for p in folder.glob("*.parquet") if p.is_file())


@dataclass(frozen=True)
class CorpusSnapshot:
    files: tuple[SnapshotFile, ...]
    taken_at: str = field(default="")
    root: str = field(default="", compare=False)  # where it was taken; not part of identity

    @classmethod
    def take(cls, folder: str | Path, *, check_schema: bool = True) -> CorpusSnapshot:
        """Snapshot every `*.parquet` at the top of `folder` (schema-checked against the corpus
        contract unless `check_schema=False`: the audit snapshots any Parquet dataset)."""
        folder = Path(folder).resolve()
        paths = _parquet_files(folder)
        if not paths:
            raise CorpusError(
                f"{folder} holds no *.parquet files; build one with "
                "`parquet-agent corpus build --rows N --out DIR`"
            )
        taken_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        files = tuple(SnapshotFile.read(p, check_schema=check_schema) for p in paths)
        return cls(files, taken_at, str(folder))

    @cached_property  # frozen: the id never changes, and every tool call's cache key uses it
    def snapshot_id(self) -> str:
        """A tagged hash over the file entries (names, sizes, content hashes, shapes)."""
        entries = [[f.name, f.size, f.content_hash, f.rows, f.row_groups] for f in self.files]
        digest = hashlib.sha256(json.dumps(entries, separators=(",", ":")).encode()).hexdigest()
        return "snap:" + digest[:32]

    @property
    def rows(self) -> int:
        """Rows over all files of the snapshot."""
        return sum(f.rows for f in self.files)

    @property
    def size(self) -> int:
        """Bytes over all files of the snapshot."""
        return sum(f.size for f in self.files)

    def paths(self, folder: str | Path | None = None) -> list[Path]:
        """The snapshot's files as paths under `folder` (default: the folder it was taken of)."""
        base = Path(folder or self.root)
        return [base / f.name for f in self.files]

    def check(self, folder: str | Path | None = None, *, quick: bool = False) -> SnapshotCheck:
        """Compare with the folder now. `quick` compares size and mtime only (no re-hash)."""
        present = {p.name: p for p in _parquet_files(Path(folder or self.root))}

        def differs(entry: SnapshotFile, path: Path) -> str | None:
            stat = path.stat()
            if stat.st_size != entry.size:
                return f"size {entry.size} -> {stat.st_size} bytes"
            if quick:
                return "modified (mtime changed)" if stat.st_mtime_ns != entry.mtime_ns else None
            return "content hash differs" if file_content_hash(path) != entry.content_hash else None

        return self._compare(present, differs)

    def diff(self, later: CorpusSnapshot) -> SnapshotCheck:
        """What differs in a later snapshot of the same folder, from the hashes both recorded
        (no file is read again)."""
        present = {f.name: f for f in later.files}

        def differs(entry: SnapshotFile, now: SnapshotFile) -> str | None:
            if now.size != entry.size:
                return f"size {entry.size} -> {now.size} bytes"
            return "content hash differs" if now.content_hash != entry.content_hash else None

        return self._compare(present, differs)

    def _compare(self, present: dict, differs) -> SnapshotCheck:
        known = {f.name: f for f in self.files}
        changed, details = [], []
        for name, entry in known.items():
            why = differs(entry, present[name]) if name in present else None
            if why:
                changed.append(name)
                details.append(f"{name}: {why}")
        return SnapshotCheck(
            new=tuple(sorted(set(present) - set(known))),
            missing=tuple(sorted(set(known) - set(present))),
            changed=tuple(changed),
            details=tuple(details),
        )

    def to_json(self) -> dict:
        """The snapshot as JSON (what a run's manifest freezes)."""
        return {
            "schema_version": SCHEMA_VERSION,
            "snapshot_id": self.snapshot_id,
            "taken_at": self.taken_at,
            "rows": self.rows,
            "bytes": self.size,
            "files": [asdict(f) | {"schema": [list(c) for c in f.schema]} for f in self.files],
        }

    @classmethod
    def from_json(cls, data: dict, root: str | Path = "") -> CorpusSnapshot:
        """A snapshot from `to_json()`'s form; ValueError for another schema version."""
        if data.get("schema_version") != SCHEMA_VERSION:
            raise CorpusError(
                f"snapshot schema_version {data.get('schema_version')!r} is not supported "
                f"(expected {SCHEMA_VERSION})"
            )
        files = tuple(
            SnapshotFile(**(f | {"schema": tuple(tuple(c) for c in f["schema"])}))
            for f in data["files"]
        )
        snap = cls(files, data.get("taken_at", ""), str(root))
        if data.get("snapshot_id") not in (None, snap.snapshot_id):
            raise CorpusError("snapshot JSON is inconsistent: its snapshot_id does not match its files")
        return snap
