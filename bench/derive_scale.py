"""A bigger corpus derived from a built one by re-keyed copies (cheap stand-in for a full build).

    .venv/bin/python bench/bench_build.py --derive-from /work/scale/tenth --scale full --out /work/scale/full

Rendering a full-scale synthetic corpus costs ~1.5 h of both cores on a loaded machine; copying
the 1/10 one ten times costs a fraction (decompress, re-key, recompress). Each month's file is
written through `LayoutWriter` (the same tool-ready layout: 12 MiB row groups, ~128 KiB pages
of Markdown, zstd) as whole copies of the source month, one after another:

- copy k (k = 0..9) has `file_stem` = the source stem with its first character (always '0' in a
  synthetic corpus: 10-digit filer ids below 10^7) replaced by the digit k, so copy 0 is the
  source itself and the copies' stems sort as blocks; past ten copies, rows get the prefix '99'
  (after every '9…' stem), taken from the start of the source month;
- the month ends at the planned row count (`plan.month_rows`, the reference's proportions), cutting the
  last copy short where ten copies are too many.

Every other column (the Markdown, md5, `accession` = CIK, year, month) is copied unchanged. So
row counts per month, row groups, pages and bytes match a real build of that size, but the text
is the source's ten times over: every company, CIK and phrase occurs in ~10x as many filings as
in a real full build (a company-name literal selects ~10x the pages a real corpus would), the
copies are exact duplicates by md5, and count questions' reference answers (questions.jsonl is
the source's) are the source's counts. The manifest's origin says how the corpus was made.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from parquet_agent.corpus.layout import LayoutWriter
from parquet_agent.corpus.synthetic.plan import month_rows

_PREFIXES = [str(k) for k in range(10)]
_EXTRA_PREFIX = "99"


def _rekeyed(table: pa.Table, prefix: str) -> pa.Table:
    stems = pc.utf8_replace_slice(table.column("file_stem"), 0, len(prefix), prefix)
    return table.set_column(table.schema.get_field_index("file_stem"), "file_stem", stems)


def derive_month(src: str, out: str, rows: int) -> dict:
    """Write `out` with `rows` rows: re-keyed copies of the month file `src`, in stem order."""
    started = time.perf_counter()
    source = pq.ParquetFile(src)
    stems = source.read(columns=["file_stem"]).column("file_stem").to_pylist()
    if any(not s.startswith("0") for s in stems):
        raise SystemExit(f"{src}: a file_stem does not start with '0'; cannot re-key by prefix")
    tmp = Path(out).with_name(f".{Path(out).name}.{os.getpid()}.tmp")
    left = rows
    copies = [*_PREFIXES, _EXTRA_PREFIX]
    try:
        with LayoutWriter(tmp) as writer:
            for prefix in copies:
                for g in range(source.num_row_groups):
                    if left <= 0:
                        break
                    group = source.read_row_group(g)
                    group = group.slice(0, min(left, group.num_rows))
                    writer.write(_rekeyed(group, prefix))
                    left -= group.num_rows
            written = writer.close()
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if left > 0:
        tmp.unlink(missing_ok=True)
        raise SystemExit(f"{src}: {len(stems):,} rows cannot make {rows:,} with {len(copies)} copies")
    os.replace(tmp, out)
    return {"name": Path(out).name, "rows": written.rows, "row_groups": written.row_groups,
            "bytes": Path(out).stat().st_size, "text_bytes": written.text_bytes,
            "seconds": round(time.perf_counter() - started, 1)}


def derive_corpus(src: Path, out: Path, rows: int, jobs: int = 2) -> dict:
    """Derive a `rows`-row corpus in `out` from the built corpus in `src` (see module doc)."""
    from parquet_agent.corpus.manifest import read_corpus_manifest, write_corpus_manifest

    started = time.perf_counter()
    months = sorted(src.glob("*.parquet"))
    targets = month_rows(rows)
    if len(months) != len(targets):
        raise SystemExit(f"{src} has {len(months)} monthly files, not {len(targets)}")
    out.mkdir(parents=True, exist_ok=True)
    tasks = [(str(m), str(out / m.name), n) for m, n in zip(months, targets)]
    order = sorted(range(len(tasks)), key=lambda i: -tasks[i][2])  # biggest first
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=ctx) as ex:
        futures = {i: ex.submit(derive_month, *tasks[i]) for i in order}
        files = [futures[i].result() for i in range(len(tasks))]
    if (src / "questions.jsonl").exists():
        shutil.copyfile(src / "questions.jsonl", out / "questions.jsonl")
    source = read_corpus_manifest(src)
    write_corpus_manifest(out, origin={
        "derived_from": str(src), "source_snapshot_id": source.snapshot.snapshot_id,
        "source_origin": source.origin, "method": "re-keyed copies (bench/derive_scale.py)",
        "rows": rows, "copies_prefixes": [*_PREFIXES, _EXTRA_PREFIX]})
    return {"rows": sum(f["rows"] for f in files), "files": files, "jobs": jobs,
            "seconds": round(time.perf_counter() - started, 1)}
