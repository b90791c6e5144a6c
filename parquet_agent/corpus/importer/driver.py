"""Import a folder of real filings into a tool-ready corpus: `import_corpus(src, out)`.

Contract: every file under `src` (recursively, hidden files aside) is either
- a metadata file the importer reads and uses for the filings it describes: edgar-crawler's
  metadata CSV, a FinanceBench `corpus_manifest.jsonl`;
- a filing, read by the reader for its format: complete SGML submission (`.txt` with an SEC
  header), HTML / inline-XBRL (`.htm`, `.html`, `.xhtml`), EDGAR-CORPUS item JSON (`.json`),
  page-marked PDF text (`.md` / `.txt` starting `<!-- page 1 -->`);
- or skipped, with the reason (unsupported format, unreadable, empty, duplicate file_stem).

One unreadable file never stops the import. The output folder (which must be empty or absent)
gets: Parquet files in the corpus schema and the tool-ready layout, one per filing year
(`filings-YYYY.parquet`, `filings-undated.parquet`), the sidecar index (`_index/`, when
`parquet_agent.corpus.index` is available) and `manifest.json` of kind `imported` whose `origin`
lists every imported file with its provenance (source path and content hash, reader, each
metadata fact with where it came from, fallback notes) and every skipped file with its reason.

Each row's `parsed_md` is an SEC-header-style block (the filing's own SEC header for SGML
submissions; otherwise one built from the facts found, leaving out what is unknown) followed by a
blank line and the filing's Markdown. Two files resolving to the same `file_stem` are the same
filing: the more complete format is kept (SGML, then iXBRL, HTML, PDF text, item JSON).

Memory: every converted filing is held (as UTF-8 bytes) until written; measured peak RSS on the
200 real filings (97 MB of source) is in docs/real-filings.md. Parallel conversion with `jobs > 1`
uses a process pool.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pyarrow as pa
import xxhash

from parquet_agent.corpus.importer.edgar_corpus import is_edgar_corpus, read_edgar_corpus
from parquet_agent.corpus.importer.html_filing import (
    is_crawler_metadata,
    load_crawler_metadata,
    read_html_filing,
)
from parquet_agent.corpus.importer.pdf_text import (
    is_financebench_manifest,
    is_page_marked,
    load_financebench_manifest,
    read_page_marked,
)
from parquet_agent.corpus.importer.records import Converted, Skipped, header_block, resolve
from parquet_agent.corpus.importer.sgml import is_sgml, read_sgml
from parquet_agent.corpus.index import build_index
from parquet_agent.corpus.layout import LayoutWriter
from parquet_agent.corpus.manifest import write_corpus_manifest
from parquet_agent.corpus.schema import CORPUS_SCHEMA
from parquet_agent.corpus.snapshot import CorpusSnapshot
from parquet_agent.errors import UsageError

IMPORTER_VERSION = 1
_HTML_EXT = {".htm", ".html", ".xhtml"}
_PRIORITY = {"sgml": 0, "ixbrl": 1, "html": 2, "pdf_text": 3, "edgar_corpus_json": 4}
_SNIFF = 65536


@dataclass(frozen=True)
class ImportedFile:
    """Provenance of one imported filing (one corpus row)."""

    source: str
    source_hash: str
    source_bytes: int
    reader: str
    file_stem: str
    accession: str | None
    year: int | None
    month: int | None
    char_count: int
    md5: str
    facts: dict
    notes: tuple[str, ...]

    def to_json(self) -> dict:
        d = asdict(self)
        d["notes"] = list(self.notes)
        return d


@dataclass(frozen=True)
class ImportResult:
    out: Path
    imported: tuple[ImportedFile, ...]
    skipped: tuple[Skipped, ...]
    metadata_files: tuple[str, ...]
    parquet_files: tuple[str, ...]
    index_built: bool
    seconds: float

    def summary(self) -> str:
        by_reader: dict[str, int] = {}
        for f in self.imported:
            by_reader[f.reader] = by_reader.get(f.reader, 0) + 1
        noted = sum(1 for f in self.imported if f.notes)
        lines = [
            f"imported {len(self.imported)} filing(s) into {self.out} in {self.seconds:.1f} s "
            f"({', '.join(f'{k} {v}' for k, v in sorted(by_reader.items()))})",
            f"metadata files used: {len(self.metadata_files)}; files with notes: {noted}; "
            f"parquet files: {len(self.parquet_files)}; index: "
            f"{'built' if self.index_built else 'not built'}",
        ]
        if self.skipped:
            lines.append(f"skipped {len(self.skipped)} file(s):")
            lines += [f"  {s.source}: {s.reason}" for s in self.skipped]
        return "\n".join(lines)


def _classify(path: Path) -> tuple[str, str | None]:
    """(kind, reason): kind is a reader name, `crawler_csv`, `fb_manifest` or `skip`."""
    ext = path.suffix.lower()
    try:
        with open(path, "rb") as f:
            head = f.read(_SNIFF)
    except OSError as exc:
        return "skip", f"unreadable: {exc}"
    if not head.strip():
        return "skip", "empty file"
    if ext == ".csv":
        first = head.decode("utf-8", errors="replace").splitlines()[0].split(",")
        if is_crawler_metadata([c.strip() for c in first]):
            return "crawler_csv", None
        return "skip", "CSV that is not edgar-crawler filing metadata: unsupported"
    if ext == ".jsonl":
        try:
            first = json.loads(head.decode("utf-8", errors="replace").splitlines()[0])
        except (json.JSONDecodeError, IndexError):
            return "skip", "JSON-lines file whose first line is not JSON: unsupported"
        if is_financebench_manifest(first):
            return "fb_manifest", None
        return "skip", "JSON-lines file that is not a FinanceBench corpus_manifest: unsupported"
    if ext in _HTML_EXT:
        return "html", None
    if ext == ".json":
        return "edgar_corpus_json", None
    if ext in (".txt", ".md"):
        if is_sgml(head):
            return "sgml", None
        if is_page_marked(head):
            return "pdf_text", None
        return "skip", ("text without an SEC header or page markers: no metadata to import it "
                        "by (unsupported)")
    if ext == ".pdf":
        return "skip", ("PDF: convert it to page-marked text first (PyMuPDF, one "
                        "`<!-- page N -->` line per page; see docs/real-filings.md)")
    return "skip", f"unsupported file type {ext or '(no extension)'}"


def _convert(task: tuple[str, str, str, dict | None]) -> tuple[Converted | Skipped, str, int]:
    """Read one filing; never raises for a bad file (returns Skipped with the reason)."""
    path, rel, kind, side = task
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        return Skipped(rel, f"unreadable: {exc}"), "", 0
    digest = "xxh3_128:" + xxhash.xxh3_128_hexdigest(raw)
    try:
        if kind == "sgml":
            conv: Converted = read_sgml(raw, rel)
        elif kind == "html":
            conv = read_html_filing(raw, rel, side)
        elif kind == "pdf_text":
            conv = read_page_marked(raw, rel, side)
        else:
            obj = json.loads(raw)
            if not is_edgar_corpus(obj):
                return Skipped(rel, "JSON that is not an EDGAR-CORPUS filing (needs `cik` and "
                               "`item_*` keys): unsupported"), digest, len(raw)
            conv = read_edgar_corpus(obj, rel)
    except (ValueError, UnicodeDecodeError) as exc:
        return Skipped(rel, f"unreadable as {kind}: {exc}"), digest, len(raw)
    return conv, digest, len(raw)


def _prepare_out(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"{out} exists and is not an empty folder; import into a new folder")
    out.mkdir(parents=True, exist_ok=True)


def import_corpus(
    src: str | Path,
    out: str | Path,
    *,
    jobs: int = 1,
    index: bool = True,
    select: Callable[[str], bool] | None = None,
) -> ImportResult:
    """Import every filing under `src` into the new corpus folder `out` (see module docstring).
    `select(relative_posix_path)`, when given, picks the files to consider (others are ignored,
    not listed as skipped). Raises UsageError when `src` is not a folder or `out` is not empty."""
    started = time.perf_counter()
    src, out = Path(src), Path(out)
    if not src.is_dir():
        raise UsageError(f"{src} is not a folder; give the folder that holds the filings")
    _prepare_out(out)
    found = _scan(src, select)
    skipped, metadata_files = found.skipped, found.metadata_files
    candidates, tasks = found.candidates, found.tasks()
    pool = ProcessPoolExecutor(max_workers=jobs) if jobs > 1 and len(tasks) > 1 else None
    # consumed one by one, so only the compact UTF-8 rows pile up, not every Converted
    results = pool.map(_convert, tasks, chunksize=2) if pool else map(_convert, tasks)
    try:
        rows = _collect(results, candidates, skipped)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)

    imported = tuple(sorted((e[0] for e in rows.values()), key=lambda r: r.file_stem))
    parquet_files = _write(out, list(rows.values()))
    rows.clear()  # let the Markdown go before the index build reads it back
    snapshot = CorpusSnapshot.take(out) if imported else None  # hashed once: index + manifest
    if index and imported:
        build_index(out, snapshot=snapshot)
    skipped.sort(key=lambda s: s.source)
    origin = {
        "importer_version": IMPORTER_VERSION,
        "source_folder": str(src.resolve()),
        "metadata_files": metadata_files,
        "imported": [r.to_json() for r in imported],
        "skipped": [asdict(s) for s in skipped],
    }
    if imported:
        write_corpus_manifest(out, origin=origin, kind="imported", snapshot=snapshot)
    return ImportResult(
        out=out,
        imported=imported,
        skipped=tuple(skipped),
        metadata_files=tuple(metadata_files),
        parquet_files=tuple(parquet_files),
        index_built=bool(index and imported),
        seconds=time.perf_counter() - started,
    )


@dataclass
class _Found:
    """What a source folder holds: filings to convert, metadata read, files skipped."""

    candidates: list[tuple[Path, str, str]] = field(default_factory=list)  # path, rel, kind
    crawler: dict[str, dict] = field(default_factory=dict)  # EDGAR crawler rows by file name
    fb: dict[str, dict] = field(default_factory=dict)  # FinanceBench rows by document name
    metadata_files: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def tasks(self) -> list[tuple[str, str, str, dict | None]]:
        """One `_convert` task per candidate, with the metadata row that describes it."""
        return [(str(p), rel, kind, self.crawler.get(p.name) if kind == "html"
                 else self.fb.get(p.stem) if kind == "pdf_text" else None)
                for p, rel, kind in self.candidates]


def _scan(src: Path, select: Callable[[str], bool] | None) -> _Found:
    """Classify every file under `src` (hidden ones and those `select` refuses left out) and
    read the metadata files among them."""
    found = _Found()
    for path in sorted(p for p in src.rglob("*") if p.is_file()):
        rel = path.relative_to(src).as_posix()
        if any(part.startswith(".") for part in path.relative_to(src).parts):
            continue
        if select is not None and not select(rel):
            continue
        kind, reason = _classify(path)
        if kind == "skip":
            found.skipped.append(Skipped(rel, reason or "unsupported"))
        elif kind in ("crawler_csv", "fb_manifest"):
            try:
                if kind == "crawler_csv":
                    found.crawler.update(load_crawler_metadata(path))
                else:  # the first manifest to describe a document wins
                    for name, row in load_financebench_manifest(path).items():
                        found.fb.setdefault(name, row)
                found.metadata_files.append(rel)
            except (ValueError, KeyError, UnicodeDecodeError) as exc:
                found.skipped.append(Skipped(rel, f"metadata file unreadable: {exc}"))
        else:
            found.candidates.append((path, rel, kind))
    return found


def _collect(results, candidates, skipped: list[Skipped]) -> dict[str, tuple]:
    """Resolve each converted filing into (record, UTF-8 parsed_md, has_ocr, source_format) by
    file_stem, keeping the more complete of two files of one filing."""
    rows: dict[str, tuple[ImportedFile, bytes, bool, str]] = {}
    for (conv, digest, size), (_, rel, _) in zip(results, candidates):
        if isinstance(conv, Skipped):
            skipped.append(conv)
            continue
        doc_name = Path(rel).stem
        res = resolve(conv, doc_name)
        head = conv.header if conv.header is not None else header_block(conv.facts)
        parsed_md = (head + "\n\n" + conv.body) if head else conv.body
        data = parsed_md.encode("utf-8")  # once, for the md5 and for storage
        record = ImportedFile(
            source=rel,
            source_hash=digest,
            source_bytes=size,
            reader=conv.reader,
            file_stem=res.file_stem,
            accession=res.accession,
            year=res.year,
            month=res.month,
            char_count=len(parsed_md),
            md5=hashlib.md5(data).hexdigest(),
            facts={k: {"value": f.value, "source": f.source} for k, f in conv.facts.items()},
            notes=res.notes,
        )
        # held as UTF-8 bytes: a str with one non-ASCII character costs 2-4 bytes per character
        entry = (record, data, conv.has_ocr, conv.source_format)
        other = rows.get(res.file_stem)
        if other is None:
            rows[res.file_stem] = entry
            continue
        a, b = sorted([entry, other], key=lambda e: (_PRIORITY[e[0].reader], -e[0].char_count))
        rows[res.file_stem] = a
        skipped.append(Skipped(b[0].source, f"same filing as {a[0].source} (file_stem "
                               f"{res.file_stem}); kept the {a[0].reader} version"))

    return rows


def _write(out: Path, entries: list[tuple[ImportedFile, bytes, bool, str]]) -> list[str]:
    by_year: dict[str, list] = {}
    for e in entries:
        by_year.setdefault(str(e[0].year) if e[0].year else "undated", []).append(e)
    names = []
    for year, group in sorted(by_year.items()):
        group.sort(key=lambda e: e[0].file_stem)
        table = pa.table(
            {
                "accession": [e[0].accession for e in group],
                "file_stem": [e[0].file_stem for e in group],
                "year": [e[0].year for e in group],
                "month": [e[0].month for e in group],
                "parsed_md": pa.array([e[1] for e in group], pa.binary()).cast(pa.string()),
                "char_count": [e[0].char_count for e in group],
                "md5": [e[0].md5 for e in group],
                "has_ocr": [e[2] for e in group],
                "source_format": [e[3] for e in group],
            },
            schema=CORPUS_SCHEMA,
        )
        name = f"filings-{year}.parquet"
        with LayoutWriter(out / name) as writer:
            writer.write(table)
        names.append(name)
    return names


