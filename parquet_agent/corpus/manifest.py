"""The corpus folder's `manifest.json`: what the folder holds and where it came from.

Contract of the file (`schema_version` 1)::

    {
      "schema_version": 1,
      "kind": "synthetic" | "prepared" | "imported",
      "created_at": "2026-11-30T07:40:00+00:00",      # UTC
      "rows": 2000, "bytes": 12345678,                 # over the snapshot's files
      "files": [{"name", "rows", "bytes", "row_groups", "content_hash"}, ...],
      "snapshot": {...CorpusSnapshot.to_json()...},
      "origin": {...},    # synthetic: generator params; prepared: lineage (source files + hashes)
      "layout": {"version": 1 | null, "tool_ready": bool, "reasons": [...]}
    }

`write_corpus_manifest(folder, *, origin)` takes the snapshot itself (so call it after the
Parquet files are final) and checks the layout with `is_tool_ready`; `read_corpus_manifest(folder)`
returns a frozen `CorpusManifest`. `files` repeats the snapshot's per-file figures (plus `rows_digest`, the order-independent
digest of (file_stem, md5) pairs from `verify.rows_digest`) in a flat,
human-readable form so that the same file can serve as an expected-shape manifest for
`corpus verify` (see `parquet_agent.corpus.verify`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from parquet_agent.corpus.snapshot import CorpusSnapshot
from parquet_agent.errors import CorpusError
from parquet_agent.files import atomic_write_bytes

SCHEMA_VERSION = 1
MANIFEST_NAME = "manifest.json"
KINDS = ("synthetic", "prepared", "imported")


@dataclass(frozen=True)
class CorpusManifest:
    kind: str
    snapshot: CorpusSnapshot
    origin: dict = field(compare=False)
    layout_version: int | None
    tool_ready: bool
    layout_reasons: tuple[str, ...]
    created_at: str
    rows_digests: dict = field(default_factory=dict, compare=False)  # file name -> rows_digest
    path: Path | None = field(default=None, compare=False)

    @property
    def rows(self) -> int:
        return self.snapshot.rows

    @property
    def bytes(self) -> int:
        return self.snapshot.size

    def to_json(self) -> dict:
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": self.kind,
            "created_at": self.created_at,
            "rows": self.rows,
            "bytes": self.bytes,
            "files": [
                {
                    "name": f.name,
                    "rows": f.rows,
                    "bytes": f.size,
                    "row_groups": f.row_groups,
                    "content_hash": f.content_hash,
                }
                | ({"rows_digest": self.rows_digests[f.name]} if f.name in self.rows_digests else {})
                for f in self.snapshot.files
            ],
            "snapshot": self.snapshot.to_json(),
            "origin": self.origin,
            "layout": {
                "version": self.layout_version,
                "tool_ready": self.tool_ready,
                "reasons": list(self.layout_reasons),
            },
        }


def write_corpus_manifest(
    folder: str | Path,
    *,
    origin: dict,
    kind: str = "synthetic",
    snapshot: CorpusSnapshot | None = None,
) -> Path:
    """Snapshot `folder` (unless `snapshot` is given), check its layout and write
    `folder/manifest.json` atomically. Returns the path written."""
    # imported here: layout checks read Parquet metadata and pull in pyarrow.compute
    from parquet_agent.corpus.layout import LAYOUT_VERSION, is_tool_ready
    from parquet_agent.corpus.verify import rows_digest

    if kind not in KINDS:
        raise CorpusError(f"manifest kind {kind!r} is not one of {', '.join(KINDS)}")
    try:
        json.dumps(origin)
    except TypeError as exc:
        raise CorpusError(f"manifest origin must be JSON-serialisable: {exc}") from exc
    folder = Path(folder)
    snapshot = snapshot or CorpusSnapshot.take(folder)
    ready, reasons = is_tool_ready(folder)
    manifest = CorpusManifest(
        kind=kind,
        snapshot=snapshot,
        origin=origin,
        layout_version=LAYOUT_VERSION if ready else None,
        tool_ready=ready,
        layout_reasons=tuple(reasons),
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        rows_digests={f.name: rows_digest(folder / f.name) for f in snapshot.files},
    )
    path = folder / MANIFEST_NAME
    atomic_write_bytes(path, (json.dumps(manifest.to_json(), indent=2) + "\n").encode())
    return path


def read_corpus_manifest(folder: str | Path) -> CorpusManifest:
    """Read `folder/manifest.json` (or the manifest file itself when given a file)."""
    folder = Path(folder)
    path = folder if folder.is_file() else folder / MANIFEST_NAME
    if not path.exists():
        raise CorpusError(
            f"{path} does not exist; write it with `parquet-agent corpus build` or "
            "`parquet-agent corpus prepare`"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise CorpusError(f"{path} is not valid JSON: {exc}") from exc
    if data.get("schema_version") != SCHEMA_VERSION:
        raise CorpusError(
            f"{path}: schema_version {data.get('schema_version')!r} is not supported "
            f"(expected {SCHEMA_VERSION})"
        )
    for key in ("kind", "snapshot", "origin", "layout"):
        if key not in data:
            raise CorpusError(f"{path}: missing key {key!r}; is this a corpus manifest?")
    layout = data["layout"]
    return CorpusManifest(
        kind=data["kind"],
        snapshot=CorpusSnapshot.from_json(data["snapshot"], root=path.parent),
        origin=data["origin"],
        layout_version=layout.get("version"),
        tool_ready=bool(layout.get("tool_ready")),
        layout_reasons=tuple(layout.get("reasons", ())),
        created_at=data.get("created_at", ""),
        rows_digests={f["name"]: f["rows_digest"] for f in data.get("files", []) if "rows_digest" in f},
        path=path,
    )
