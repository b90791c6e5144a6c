"""Small real corpora on disk for the corpus tests (no dependency on the synthetic builder).

`make_corpus(folder, rows=..., layout="plain")` writes monthly files in the corpus schema with
filings whose first lines vary the way real corpora do: an SGML header, a cover page, labelled
fields, or nothing at all; zero-padded and bare CIKs; duplicates (same md5, other file_stem);
heavy-tailed sizes. `layout="plain"` is a pandas-style export (random order, one row group per
file); `layout="ready"` goes through LayoutWriter (sorted, byte-capped, bloom filter).
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from parquet_agent.corpus.layout import LayoutWriter
from parquet_agent.corpus.schema import CORPUS_SCHEMA

COMPANIES = [
    ("Northwind Mining Co", 1234567),
    ("Apex Fluid Dynamics, Inc.", 98765),
    ("Blue Harbor Holdings Corp", 7654321),
    ("Cedar & Pine Industries Ltd", 555),
]
FORMS = ["10-K", "10-Q", "8-K", "DEF 14A"]


def _head(style: str, company: str, cik: int, form: str, day: int, month: int) -> str:
    if style == "sgml":
        return (
            f"ACCESSION NUMBER:\t\tX\nCONFORMED SUBMISSION TYPE:\t{form}\n"
            f"CONFORMED PERIOD OF REPORT:\t2024{month:02d}{day:02d}\n"
            f"FILED AS OF DATE:\t\t2025{month:02d}{day:02d}\n\nFILER:\n\n\tCOMPANY DATA:\n"
            f"\t\tCOMPANY CONFORMED NAME:\t\t\t{company.upper()}\n"
            f"\t\tCENTRAL INDEX KEY:\t\t\t{cik:010d}\n"
        )
    if style == "cover":
        return (
            "UNITED STATES\n\nSECURITIES AND EXCHANGE COMMISSION\n\nWashington, D.C. 20549\n\n"
            f"FORM {form}\n\nFor the fiscal year ended December 31, 2024\n\n"
            f"Commission File Number: 001-{cik % 99999:05d}\n\n"
            f"**{company}**\n\n(Exact name of registrant as specified in its charter)\n\n"
            "Delaware\n\n(State or other jurisdiction of incorporation)\n"
        )
    if style == "labels":
        return (
            f"| Field | Value |\n| --- | --- |\n| Company | {company} |\n| CIK | {cik} |\n"
            f"| Form type | {form} |\n| Filing date | 2025-{month:02d}-{day:02d} |\n"
        )
    return "Exhibit 99.1 press release\n\n"  # no header at all


def make_rows(rows: int, *, seed: int = 0, months: tuple[int, ...] = (1, 2)) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(rows):
        company, cik = COMPANIES[i % len(COMPANIES)]
        form = FORMS[rng.randrange(len(FORMS))]
        month = months[i % len(months)]
        day = 1 + i % 28
        style = ("sgml", "cover", "labels", "none")[rng.randrange(4)]
        body = " ".join(rng.choice(["revenue", "segment", "liquidity", "risk", "net"])
                        for _ in range(int(rng.paretovariate(1.3) * 60)))
        md = _head(style, company, cik, form, day, month) + "\n## Item 1\n\n" + body
        if i % 25 == 24:  # duplicate document under another file_stem
            md = out[i - len(COMPANIES)]["parsed_md"]  # same company, another file_stem
        accession = f"{cik:010d}" if rng.random() < 0.5 else str(cik)
        out.append(
            dict(
                accession=accession,
                file_stem=f"{cik:010d}-25-{(i * 7919) % 10**6:06d}",  # unique, not in row order
                year=2025,
                month=month,
                parsed_md=md,
                char_count=len(md),
                md5=hashlib.md5(md.encode()).hexdigest(),
                has_ocr=rng.random() < 0.1,
                source_format=rng.choice(["html", "txt", "pdf"]),
            )
        )
    return out


def write_corpus(folder: Path, rows: list[dict], *, layout: str = "plain",
                 row_group_text_bytes: int = 20_000) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(rows, CORPUS_SCHEMA)
    for month in sorted({r["month"] for r in rows}):
        part = table.filter(pa.compute.equal(table["month"], month))
        path = folder / f"2025-{month:02d}.parquet"
        if layout == "plain":
            pq.write_table(part, path)  # one row group, insertion (random) order
        else:
            with LayoutWriter(path, row_group_text_bytes=row_group_text_bytes) as w:
                w.write(part.sort_by("file_stem"))
    return folder


@pytest.fixture
def make_corpus(tmp_path):
    def make(name: str = "corpus", *, rows: int = 120, seed: int = 0, layout: str = "plain",
             months: tuple[int, ...] = (1, 2)) -> Path:
        return write_corpus(tmp_path / name, make_rows(rows, seed=seed, months=months), layout=layout)

    return make
