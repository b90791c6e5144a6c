"""How well `parse_header` reads issuer fields from the real filings in ../shared/realdata.

    .venv/bin/python bench/bench_corpus_headers.py [--realdata ../shared/realdata] [--show-misses]

Each filing is turned into text the way a corpus would hold it (SGML submissions as they are;
HTML and inline-XBRL through the importer's `html_to_markdown` and, separately, through a rough
bs4 `get_text`; EDGAR-CORPUS item JSON as its JSON text; FinanceBench page-marked PDF text as it
is) and its parsed fields are compared with the metadata in the folders' manifests. Prints, per
source and field, how many filings carry the expected value.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

from parquet_agent.corpus.headers import normalize_cik, normalize_company, parse_header

FIELDS = ("company", "cik", "form_type", "period", "filing_date")


def _rough_text(raw: bytes) -> str:
    from bs4 import BeautifulSoup

    return BeautifulSoup(raw, "lxml").get_text("\n")


def samples(root: Path):
    """(source, name, text, expected) for every filing with metadata."""
    from parquet_agent.corpus.importer.html import html_to_markdown

    for manifest in sorted(root.glob("*/manifest.jsonl")) + [root / "financebench/corpus_manifest.jsonl"]:
        if not manifest.exists():
            continue
        for line in manifest.read_text().splitlines():
            meta = json.loads(line)
            path = root / meta["file"]
            if not path.exists():
                continue
            expected = {
                "company": meta.get("company"),
                "cik": normalize_cik(meta.get("cik")),
                "form_type": meta.get("form") or meta.get("doc_type"),
                "period": meta.get("period_of_report"),
                "filing_date": meta.get("filing_date"),
            }
            raw = path.read_bytes()
            if path.suffix in (".html", ".htm", ".md"):
                # the CIK and the filing date are not printed on a cover page: they live in the
                # EDGAR header / index, which these texts do not carry
                expected["cik"] = expected["filing_date"] = None
            if path.suffix in (".html", ".htm"):
                yield "html->md (importer)", path.name, html_to_markdown(raw).markdown, expected
                yield "html->text (bs4)", path.name, _rough_text(raw), expected
            elif path.suffix == ".txt":
                yield "sgml", path.name, raw.decode("utf-8", "replace"), expected
            elif path.suffix == ".json":
                yield "edgar-corpus json", path.name, raw.decode("utf-8", "replace"), expected
            elif path.suffix == ".md":
                # FinanceBench's company is a short label ("3M"), doc_type "10k": compare what
                # the text can carry: form type from the cover, no period/filing metadata
                expected["company"] = None
                expected["form_type"] = {"10k": "10-K", "10q": "10-Q", "8k": "8-K"}.get(
                    expected["form_type"]
                )
                expected["filing_date"] = None
                yield "financebench pdf text", path.name, raw.decode("utf-8", "replace"), expected


def _same(field: str, got, want) -> bool:
    if field == "company":
        return normalize_company(got) == normalize_company(want)
    if field == "form_type":
        return (got or "").upper() == (want or "").upper()
    return got == want


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--realdata", default=str(Path(__file__).resolve().parents[1] / "../shared/realdata"))
    ap.add_argument("--show-misses", action="store_true")
    args = ap.parse_args()
    root = Path(args.realdata)
    if not root.exists():
        print(f"no real data at {root}", file=sys.stderr)
        return 1
    hit = defaultdict(lambda: defaultdict(int))
    total = defaultdict(lambda: defaultdict(int))
    seconds, chars = 0.0, 0
    for source, name, text, expected in samples(root):
        t0 = time.perf_counter()
        got = parse_header(text)
        seconds += time.perf_counter() - t0
        chars += min(len(text), 100_000)
        for f in FIELDS:
            if expected[f] is None:
                continue
            total[source][f] += 1
            if _same(f, getattr(got, f), expected[f]):
                hit[source][f] += 1
            elif args.show_misses:
                print(f"MISS {source:22} {name[:40]:40} {f:11} got {getattr(got, f)!r} want {expected[f]!r}")
    print(f"{'source':24}" + "".join(f"{f:>14}" for f in FIELDS))
    for source in total:
        cells = "".join(
            f"{hit[source][f]:>8}/{total[source][f]:<5}" if total[source][f] else f"{'-':>14}" for f in FIELDS
        )
        print(f"{source:24}{cells}")
    print(f"parse time {seconds:.2f} s for {chars / 1e6:.1f} MB of text heads")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
