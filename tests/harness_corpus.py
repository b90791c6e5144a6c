"""A tiny tool-ready corpus with questions, for the agent, judge and experiment tests.

Three companies, two months, a handful of filings whose revenue sentence is the gold evidence;
written through the real LayoutWriter, indexed by the real `build_index`, with a questions file
in the contract format. Reference answers carry a canary string so tests can prove that no agent
request ever contains one.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow as pa

from parquet_agent.corpus.index import build_index
from parquet_agent.corpus.layout import LayoutWriter
from parquet_agent.corpus.questions import Evidence, Question, Reference, write_questions
from parquet_agent.corpus.schema import CORPUS_SCHEMA

CANARY = "CANARY-7f3a9c"
COMPANIES = [("Northwind Mining Co", 1234567, 812), ("Apex Fluid Dynamics, Inc.", 98765, 455),
             ("Blue Harbor Holdings Corp", 7654321, 1290)]


def _filing(company: str, cik: int, form: str, revenue: int, month: int) -> str:
    return (
        "UNITED STATES\n\nSECURITIES AND EXCHANGE COMMISSION\n\nWashington, D.C. 20549\n\n"
        f"FORM {form}\n\nFor the fiscal year ended December 31, 2024\n\n"
        f"Commission File Number: 001-{cik % 99999:05d}\n\n**{company}**\n\n"
        "(Exact name of registrant as specified in its charter)\n\nDelaware\n\n"
        f"Central Index Key: {cik:010d}\n\n## Item 7. Management's Discussion\n\n"
        + "Our operations continued across all segments. " * 20
        + f"\n\nTotal revenue for fiscal 2024 was ${revenue} million, compared with "
        f"${revenue - 40} million in fiscal 2023.\n\n"
        + "We monitor liquidity and capital resources closely. " * 20
    )


def make_harness_corpus(folder: Path) -> Path:
    """Write the corpus, its index and `questions.jsonl` into `folder`; return `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    rows, items = [], []
    n = 0
    for month in (1, 2):
        for company, cik, revenue in COMPANIES:
            n += 1
            md = _filing(company, cik, "10-K" if month == 1 else "10-Q", revenue + month, month)
            stem = f"{cik:010d}-25-{n:06d}"
            rows.append(dict(accession=str(cik), file_stem=stem, year=2025, month=month,
                             parsed_md=md, char_count=len(md),
                             md5=hashlib.md5(md.encode()).hexdigest(), has_ocr=False,
                             source_format="html"))
            if month == 1:
                sentence = f"Total revenue for fiscal 2024 was ${revenue + month} million"
                start = md.index(sentence)
                qid = f"Q{len(items) + 1:03d}"
                items.append((
                    Question(qid, f"What was {company}'s total revenue for fiscal 2024?"),
                    Reference(qid, f"${revenue + month} million ({CANARY})",
                              (Evidence(stem, sentence, start, start + len(sentence)),),
                              "single_filing_prose")))
    table = pa.Table.from_pylist(rows, CORPUS_SCHEMA)
    for month in (1, 2):
        part = table.filter(pa.compute.equal(table["month"], month)).sort_by("file_stem")
        with LayoutWriter(folder / f"2025-{month:02d}.parquet", row_group_text_bytes=4000) as w:
            w.write(part)
    write_questions(folder / "questions.jsonl", items)
    build_index(folder)
    return folder
