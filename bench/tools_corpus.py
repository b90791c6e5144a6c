"""A tool-ready corpus with a chosen number of rows, for the tools benchmarks and tests.

`write_corpus(folder, rows, text_chars=..., files=6)` writes `files` monthly Parquet files in the
tool-ready layout (`corpus.layout.LayoutWriter`) whose filings start with an EDGAR SGML header
(company, CIK, form, period, filing date) followed by filler Markdown, then builds the sidecar
index. Row *count* can match the reference corpus (638,067) while the text stays small, which is
what header search and index lookups depend on; per-byte costs need the real-size corpus from
`parquet-agent corpus build`.

    python bench/tools_corpus.py OUT_DIR --rows 638067 --text-chars 300
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import time
from pathlib import Path

import pyarrow as pa

from parquet_agent.corpus.index import build_index
from parquet_agent.corpus.layout import LayoutWriter

_WORDS = ("revenue", "income", "liquidity", "segment", "risk", "capital", "margin", "lease",
          "inventory", "goodwill", "dividend", "guidance", "tariff", "backlog", "impairment")
_NAMES = ("Northwind", "Contoso", "Fabrikam", "Tailspin", "Wingtip", "Litware", "Adatum",
          "Proseware", "Lucerne", "Margie", "Coho", "Humongous", "Alpine", "Fourth Coffee")
_SUFFIXES = ("Inc.", "Corp", "Holdings, Inc.", "Co", "Group Ltd")
_FORMS = ("10-K", "10-Q", "8-K", "20-F")
_PERIODS = ("1231", "0930", "0630", "0331")


def filing_text(i: int, rng: random.Random, text_chars: int) -> tuple[str, str, str]:
    company = f"{_NAMES[i % len(_NAMES)]} {_NAMES[(i // 7) % len(_NAMES)]} {i // 49} {_SUFFIXES[i % 5]}"
    cik = str(100000 + i // 3)
    month = 1 + i % 6
    head = (
        f"ACCESSION NUMBER: {stem(i)}\nCONFORMED SUBMISSION TYPE: {_FORMS[i % 4]}\n"
        f"CONFORMED PERIOD OF REPORT: 2024{_PERIODS[i % 4]}\nFILED AS OF DATE: 2025{month:02d}15\n"
        f"COMPANY CONFORMED NAME: {company}\nCENTRAL INDEX KEY: {cik.zfill(10)}\n\n# {company}\n\n"
    )
    body = []
    size = len(head)
    while size < text_chars:
        sentence = " ".join(rng.choice(_WORDS) for _ in range(12)) + ".\n"
        body.append(sentence)
        size += len(sentence)
    return head + "".join(body), cik, company


def stem(i: int) -> str:
    return f"{100000 + i // 3:010d}-25-{i:06d}"


def write_corpus(folder: str | Path, rows: int, *, text_chars: int = 2000, files: int = 6,
                 seed: int = 7, row_group_text_bytes: int = 12 * 1024 * 1024) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    per_file = (rows + files - 1) // files
    for f in range(files):
        lo, hi = f * per_file, min(rows, (f + 1) * per_file)
        if lo >= hi:
            break
        with LayoutWriter(folder / f"2025-{f + 1:02d}.parquet", row_group_text_bytes=row_group_text_bytes) as out:
            batch: list[dict] = []
            for i in range(lo, hi):  # stems grow with i, so rows arrive sorted
                text, cik, _ = filing_text(i, rng, text_chars)
                batch.append({
                    "accession": cik.zfill(10) if i % 2 else cik, "file_stem": stem(i), "year": 2025,
                    "month": f + 1, "parsed_md": text, "char_count": len(text),
                    "md5": hashlib.md5(text.encode()).hexdigest(), "has_ocr": i % 50 == 0,
                    "source_format": ("html", "txt", "pdf")[i % 3],
                })
                if len(batch) == 5000:
                    out.write(pa.Table.from_pylist(batch))
                    batch = []
            if batch:
                out.write(pa.Table.from_pylist(batch))
    build_index(folder)
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--rows", type=int, required=True)
    parser.add_argument("--text-chars", type=int, default=2000)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    write_corpus(args.out, args.rows, text_chars=args.text_chars)
    print(f"wrote {args.rows:,} rows to {args.out} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
