"""Build a synthetic corpus folder: monthly Parquet files, `questions.jsonl`, `manifest.json`.

`build_corpus(out, *, rows, seed=0, jobs=None) -> BuildResult` is what `corpus build` calls.
The same `(rows, seed)` gives byte-identical Parquet files and questions (the manifest differs
only in its `created_at`). Months are written by separate processes when the corpus is large
(each month's text is a pure function of the plan and the seed, so the split changes nothing),
each streaming rows through `LayoutWriter` into the tool-ready layout, so memory stays bounded by
about one row group per process however many rows are asked for. Files are written under a
temporary name and renamed when complete.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from parquet_agent.corpus.layout import LayoutWriter
from parquet_agent.corpus.questions import write_questions
from parquet_agent.corpus.schema import CORPUS_SCHEMA
from parquet_agent.corpus.synthetic.companies import CompanyBook, make_companies
from parquet_agent.corpus.synthetic.forms import render
from parquet_agent.corpus.synthetic.plan import YEAR, FilingSpec, plan_corpus
from parquet_agent.corpus.synthetic.questions_gen import make_questions
from parquet_agent.corpus.synthetic.text import TextPool
from parquet_agent.errors import UsageError

GENERATOR_VERSION = "1"
MIN_ROWS = 300  # below this the plan has too few periodic reports for 100 questions
PARALLEL_FROM_ROWS = 20_000  # smaller builds run in-process: starting workers costs more
QUESTIONS_NAME = "questions.jsonl"
# written first and removed last: a folder holding it is a build of ours that was interrupted
BUILDING_NAME = ".corpus-build.json"
_BATCH_ROWS = 256
_BATCH_TEXT = 8 * 1024 * 1024


@dataclass(frozen=True)
class MonthFile:
    name: str
    rows: int
    bytes: int
    text_bytes: int
    row_groups: int
    seconds: float


@dataclass(frozen=True)
class BuildResult:
    out: Path
    seed: int
    rows: int
    files: tuple[MonthFile, ...]
    questions: int
    companies: int
    seconds: float
    jobs: int

    @property
    def bytes(self) -> int:
        return sum(f.bytes for f in self.files)

    @property
    def text_bytes(self) -> int:
        return sum(f.text_bytes for f in self.files)

    @property
    def compression_ratio(self) -> float:
        return self.text_bytes / self.bytes if self.bytes else 0.0

    def summary(self) -> str:
        mib = 1024 * 1024
        lines = [
            f"built {self.rows:,} rows in {len(self.files)} files into {self.out} "
            f"(seed {self.seed}, {self.companies:,} companies, {self.seconds:.1f} s, {self.jobs} job(s))",
            f"  {self.text_bytes / mib:,.1f} MiB of Markdown -> {self.bytes / mib:,.1f} MiB on disk "
            f"(ratio {self.compression_ratio:.2f}); {self.rows / max(self.seconds, 1e-9):,.0f} rows/s",
        ]
        lines += [f"  {f.name}: {f.rows:,} rows, {f.row_groups} row groups, {f.bytes / mib:,.1f} MiB" for f in self.files]
        lines.append(f"  {self.questions} questions in {QUESTIONS_NAME}")
        return "\n".join(lines)


def month_file_name(month: int) -> str:
    return f"{YEAR}-{month:02d}.parquet"


def _check_out(out: Path, rows: int, seed: int = 0, overwrite: bool = False) -> None:
    if rows < MIN_ROWS:
        raise UsageError(f"--rows {rows} is too small: a synthetic corpus needs at least {MIN_ROWS} rows "
                         "to carry its 100+ questions (the bundled sample uses 2000)")
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out} exists and is not a folder; give --out a folder to build into")
    ours = {month_file_name(m) for m in range(1, 7)}
    strangers = sorted(p.name for p in out.glob("*.parquet") if p.name not in ours) if out.exists() else []
    if strangers:
        raise UsageError(f"{out} already holds other Parquet files ({', '.join(strangers[:3])}); "
                         "build into an empty folder so the corpus snapshot holds only this build")
    origin = _built_with(out)
    if origin is None and out.is_dir() and any(out.iterdir()):
        names = ", ".join(sorted(p.name for p in out.iterdir())[:3])
        raise UsageError(f"{out} is not empty ({names}, ...) and holds no corpus that `corpus "
                         "build` made: build into an empty or new folder (nothing there was "
                         "changed)")
    if origin and (origin.get("rows"), origin.get("seed")) != (rows, seed) and not overwrite:
        raise UsageError(f"{out} holds a corpus built with --rows {origin.get('rows')} --seed "
                         f"{origin.get('seed')}; building --rows {rows} --seed {seed} there would "
                         "replace it (and invalidate the runs made on it): choose another --out, "
                         "or pass --overwrite")


def _built_with(out: Path) -> dict | None:
    """The `origin` of the synthetic corpus already in `out`, or of a build of ours interrupted
    there (None when there is neither)."""
    import json

    try:
        data = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        try:
            return json.loads((out / BUILDING_NAME).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
    origin = data.get("origin") if isinstance(data, dict) else None
    return origin if isinstance(origin, dict) and data.get("kind") == "synthetic" else None


def _write_month(out: str, month: int, specs: tuple[FilingSpec, ...], seed: int, n_companies: int,
                 book: CompanyBook | None = None, pool: TextPool | None = None) -> MonthFile:
    """Render and write one month. A worker process rebuilds the companies and the text pool
    from the seed (about a second); an in-process build passes its own to every month."""
    started = time.perf_counter()
    book = book or CompanyBook(seed, make_companies(seed, n_companies))
    pool = pool or TextPool(seed)
    path = Path(out) / month_file_name(month)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    cols: dict[str, list] = {name: [] for name in CORPUS_SCHEMA.names}
    pending_text = 0

    def flush(writer: LayoutWriter) -> None:
        arrays = {k: pa.array(v, type=CORPUS_SCHEMA.field(k).type) for k, v in cols.items() if k != "parsed_md"}
        # the Markdown arrives as UTF-8 bytes (already encoded for md5): viewing a binary array
        # as string skips a second conversion of every cell, a third of the write cost
        arrays["parsed_md"] = pa.array(cols["parsed_md"], type=pa.binary()).view(pa.string())
        writer.write(pa.table([arrays[k] for k in CORPUS_SCHEMA.names], schema=CORPUS_SCHEMA))
        for v in cols.values():
            v.clear()

    try:
        with LayoutWriter(tmp) as writer:  # closes the Parquet writer on error too
            for spec in specs:
                text = render(spec, book, pool).text
                cols["accession"].append(spec.accession)
                cols["file_stem"].append(spec.file_stem)
                cols["year"].append(spec.filed.year)
                cols["month"].append(spec.filed.month)
                data = text.encode("utf-8")
                cols["parsed_md"].append(data)
                cols["char_count"].append(len(text))
                cols["md5"].append(hashlib.md5(data).hexdigest())
                cols["has_ocr"].append(spec.ocr)
                cols["source_format"].append(spec.source_format)
                pending_text += len(data)
                if len(cols["file_stem"]) >= _BATCH_ROWS or pending_text >= _BATCH_TEXT:
                    flush(writer)
                    pending_text = 0
            if cols["file_stem"]:
                flush(writer)
            written = writer.close()
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)
    return MonthFile(path.name, written.rows, path.stat().st_size, written.text_bytes, written.row_groups,
                     time.perf_counter() - started)


def build_corpus(out: Path, *, rows: int, seed: int = 0, jobs: int | None = None,
                 overwrite: bool = False) -> BuildResult:
    """Build a synthetic corpus of `rows` rows into `out` (see module docstring).

    `jobs` is the number of worker processes (default: 2, or 1 below 20,000 rows).
    Raises UsageError for a too-small `rows`, an `out` holding someone else's Parquet files, or
    one holding a synthetic corpus built with other rows or another seed (unless `overwrite`).
    """
    from parquet_agent.corpus.manifest import write_corpus_manifest

    started = time.perf_counter()
    out = Path(out)
    _check_out(out, rows, seed, overwrite)
    out.mkdir(parents=True, exist_ok=True)
    building = out / BUILDING_NAME
    building.write_text(f'{{"rows": {rows}, "seed": {seed}}}\n', encoding="utf-8")
    plan = plan_corpus(seed, rows)
    if jobs is None:
        jobs = 1 if rows < PARALLEL_FROM_ROWS else min(2, os.cpu_count() or 1)
    jobs = max(1, int(jobs))
    tasks = [(str(out), m + 1, specs, seed, len(plan.companies)) for m, specs in enumerate(plan.months)]
    book = CompanyBook(seed, plan.companies)
    if jobs == 1:
        pool = TextPool(seed)
        files = [_write_month(*t, book=book, pool=pool) for t in tasks]
        items = make_questions(plan, book, pool)
    else:
        # biggest months first keeps both workers busy to the end
        order = sorted(range(len(tasks)), key=lambda i: -len(tasks[i][2]))
        ctx = multiprocessing.get_context("spawn")  # no fork of a process holding pyarrow threads
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as ex:
            futures = {i: ex.submit(_write_month, *tasks[i]) for i in order}
            items = make_questions(plan, book, TextPool(seed))  # meanwhile, in this process
            files = [futures[i].result() for i in range(len(tasks))]
    write_questions(out / QUESTIONS_NAME, items)
    write_corpus_manifest(out, origin={
        "generator": "parquet_agent.corpus.synthetic",
        "generator_version": GENERATOR_VERSION,
        "rows": rows,
        "seed": seed,
        "companies": len(plan.companies),
        "questions": len(items),
    })
    building.unlink()
    return BuildResult(out, seed, rows, tuple(files), len(items), len(plan.companies),
                       time.perf_counter() - started, jobs)
