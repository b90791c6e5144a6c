"""`corpus verify`: compare a corpus folder with a manifest, and say whether it is tool-ready.

Two kinds of manifest are accepted (both JSON with `schema_version` 1):

- a corpus manifest (`manifest.json` written by `write_corpus_manifest`, or a copy of one in
  `data_manifest/`): files by name, each with exact `rows`, `bytes`, `row_groups`,
  `content_hash`, and optionally `rows_digest` (see below);
- an expected-shape manifest (`"kind": "expected-shape"`, e.g. `data_manifest/reference-2025h1.json`):
  totals and one entry per file, matched by `name` when given, else by the file's (`year`,
  `month`) read from the Parquet statistics. Its figures are exact integers (`rows`, `bytes`) or
  rounded ones (`gib`, compared within `tolerances.gib`, stated in the manifest).

`rows_digest` is an order-independent digest of the (file_stem, md5) pairs of a file: it says the
same filings are there even when the bytes differ (another writer version, another layout), which
a content hash cannot. Comparisons report every difference, file by file; nothing stops at the
first. A folder's layout readiness (`layout.is_tool_ready`) is reported alongside and only counts
towards `ok` when `require_tool_ready` is set.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq

from parquet_agent.corpus.layout import is_tool_ready
from parquet_agent.corpus.snapshot import file_content_hash
from parquet_agent.errors import CorpusError

SCHEMA_VERSION = 1
GIB = 1024**3


@dataclass(frozen=True)
class VerifyReport:
    folder: Path
    manifest: Path
    differences: tuple[str, ...]
    checked: tuple[str, ...]  # what was compared, one line per file
    tool_ready: bool
    layout_reasons: tuple[str, ...] = field(default=())
    require_tool_ready: bool = False

    @property
    def ok(self) -> bool:
        return not self.differences and (self.tool_ready or not self.require_tool_ready)

    def describe(self) -> str:
        lines = [f"verify {self.folder} against {self.manifest}:"]
        lines += [f"  ok    {c}" for c in self.checked]
        lines += [f"  DIFF  {d}" for d in self.differences]
        lines.append(
            "  matches the manifest" if not self.differences
            else f"  {len(self.differences)} difference(s) from the manifest"
        )
        if self.tool_ready:
            lines.append("  layout: tool-ready")
        else:
            lines.append("  layout: NOT tool-ready (run `parquet-agent corpus prepare SRC --out DIR`):")
            lines += [f"    - {r}" for r in self.layout_reasons]
        return "\n".join(lines)


def rows_digest(path: Path) -> str:
    """Order-independent digest of a file's (file_stem, md5) pairs: sha256 of the sorted pairs.
    Reads only those two small columns."""
    table = pq.read_table(path, columns=["file_stem", "md5"])
    pairs = sorted(zip(table.column("file_stem").to_pylist(), table.column("md5").to_pylist()))
    h = hashlib.sha256()
    for stem, md5 in pairs:
        h.update(f"{stem}\t{md5}\n".encode())
    return "sha256:" + h.hexdigest()


def _file_month(path: Path) -> tuple[int | None, int | None]:
    """(year, month) when every row of the file has the same ones (from the statistics)."""
    meta = pq.ParquetFile(path).metadata
    names = meta.schema.to_arrow_schema().names
    found = []
    for col in ("year", "month"):
        i = names.index(col)
        lo, hi = set(), set()
        for g in range(meta.num_row_groups):
            stats = meta.row_group(g).column(i).statistics
            if stats is None or not stats.has_min_max:
                return None, None
            lo.add(stats.min)
            hi.add(stats.max)
        found.append(lo.pop() if lo == hi and len(lo) == 1 else None)
    return found[0], found[1]


def _compare_exact(name: str, expected: dict, path: Path, diffs: list, checked: list) -> None:
    meta = pq.ParquetFile(path).metadata
    size = path.stat().st_size
    before = len(diffs)
    if "rows" in expected and meta.num_rows != expected["rows"]:
        diffs.append(f"{name}: rows {meta.num_rows:,}, manifest says {expected['rows']:,}")
    if "bytes" in expected and size != expected["bytes"]:
        diffs.append(f"{name}: bytes {size:,}, manifest says {expected['bytes']:,}")
    if "row_groups" in expected and meta.num_row_groups != expected["row_groups"]:
        diffs.append(
            f"{name}: row groups {meta.num_row_groups}, manifest says {expected['row_groups']}"
        )
    if "gib" in expected:
        tol = expected["_gib_tolerance"]
        gib = size / GIB
        if abs(gib - expected["gib"]) > tol:
            diffs.append(
                f"{name}: {gib:.4f} GiB, manifest says {expected['gib']} GiB (±{tol}, rounded)"
            )
    if expected.get("content_hash") and file_content_hash(path) != expected["content_hash"]:
        diffs.append(f"{name}: content hash differs from the manifest's {expected['content_hash']}")
    if expected.get("rows_digest") and rows_digest(path) != expected["rows_digest"]:
        diffs.append(f"{name}: the set of (file_stem, md5) rows differs from the manifest's")
    if len(diffs) == before:
        keys = [k for k in ("rows", "bytes", "gib", "row_groups", "content_hash", "rows_digest") if k in expected]
        checked.append(f"{name}: {', '.join(keys)}")


def load_manifest(path: Path) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise CorpusError(f"manifest {path} does not exist") from exc
    except json.JSONDecodeError as exc:
        raise CorpusError(f"manifest {path} is not valid JSON: {exc}") from exc
    if data.get("schema_version") != SCHEMA_VERSION or "files" not in data:
        raise CorpusError(
            f"{path} is not a corpus manifest (needs schema_version {SCHEMA_VERSION} and files)"
        )
    return data


def verify(
    folder: str | Path, manifest: str | Path | None = None, *, require_tool_ready: bool = False
) -> VerifyReport:
    folder = Path(folder)
    if not folder.is_dir():
        raise CorpusError(f"corpus folder {folder} does not exist or is not a folder")
    manifest = Path(manifest) if manifest else folder / "manifest.json"
    data = load_manifest(manifest)
    present = {p.name: p for p in sorted(folder.glob("*.parquet")) if p.is_file()}
    diffs: list[str] = []
    checked: list[str] = []
    tol = float(data.get("tolerances", {}).get("gib", 0.0005))
    matched: set[str] = set()
    months = None
    for entry in data["files"]:
        entry = dict(entry, _gib_tolerance=tol)
        name = entry.get("name")
        if name:
            label = name
            path = present.get(name)
        else:  # expected-shape entries without a name: match by the file's year and month
            if months is None:
                months = {n: _file_month(p) for n, p in present.items()}
            want = (entry.get("year"), entry.get("month"))
            label = f"{want[0]}-{want[1]:02d}"
            hits = [n for n, ym in months.items() if ym == want and n not in matched]
            if len(hits) > 1:
                diffs.append(f"{label}: {len(hits)} files hold only this month ({', '.join(hits)})")
            path = present.get(hits[0]) if hits else None
            label = f"{label} ({hits[0]})" if hits else label
        if path is None:
            diffs.append(f"{label}: missing (the manifest lists it)")
            continue
        matched.add(path.name)
        _compare_exact(label, entry, path, diffs, checked)
    for name in sorted(set(present) - matched):
        diffs.append(f"{name}: not in the manifest (extra file)")
    totals = data.get("totals", {"rows": data.get("rows"), "bytes": data.get("bytes")})
    if totals.get("files") is not None and len(present) != totals["files"]:
        diffs.append(f"total: {len(present)} files, manifest says {totals['files']}")
    all_rows = sum(pq.ParquetFile(p).metadata.num_rows for p in present.values())
    all_bytes = sum(p.stat().st_size for p in present.values())
    if totals.get("rows") is not None and all_rows != totals["rows"]:
        diffs.append(f"total: rows {all_rows:,}, manifest says {totals['rows']:,}")
    if totals.get("bytes") is not None and all_bytes != totals["bytes"]:
        diffs.append(f"total: bytes {all_bytes:,}, manifest says {totals['bytes']:,}")
    ready, reasons = is_tool_ready(folder)
    return VerifyReport(
        folder, manifest, tuple(diffs), tuple(checked), ready, tuple(reasons), require_tool_ready
    )
