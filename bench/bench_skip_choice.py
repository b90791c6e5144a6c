"""Which page summary to build: bytes, build time and pruning power of candidate designs.

    .venv/bin/python bench/bench_skip_choice.py --corpus data/sample [--real REALDATA] [--literals 300]

Pages: the real filing text of FinanceBench (`shared/realdata/financebench/docs_md`, cut into
128 KiB pages) and the pages of a built corpus (`--corpus`, read as the index reads them).
Literals: random substrings of the pages (4-30 characters, so mostly present somewhere) and a few
phrases. For each design: bytes per page, build time per page, and the false-positive page rate
(candidate pages without the literal / pages without it), mean and median over the literals.
Designs: n-gram bloom filters (n = 3, 4; 2**13-2**15 bits; without stop grams, and without the
grams found in more than 25 % / 80 % of sampled pages), token
bloom filters (tokenbf: only tokens the literal holds whole can be used), exact trigram sets
(posting lists, sized as delta-varint postings).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import re
import statistics
import time
from pathlib import Path

import numpy as np

from parquet_agent.corpus import skipgrams as sg
from parquet_agent.corpus import skipindex as sk
from parquet_agent.corpus.snapshot import CorpusSnapshot

PAGE = 128 * 1024
PHRASES = ["going concern", "goodwill impairment", "substantial doubt", "cybersecurity", "share repurchase"]


def real_pages(folder: Path) -> list[bytes]:
    pages = []
    for path in sorted(glob.glob(str(folder / "*.md"))):
        data = Path(path).read_bytes()
        pages += [data[i : i + PAGE] for i in range(0, len(data), PAGE)]
    return pages


def corpus_pages(folder: Path, limit: int) -> list[bytes]:
    snapshot = CorpusSnapshot.take(folder)
    pages, formats = sk._walk_pages(folder, snapshot)
    fds = {e.name: os.open(folder / e.name, os.O_RDONLY) for e in snapshot.files}
    step = max(1, len(pages) // limit)
    texts = [sk._page_text(p, fds, formats) for p in pages[::step]]
    return [t for t in texts if t]


def literals(pages: list[bytes], count: int, rng: random.Random) -> list[bytes]:
    out = [p.encode() for p in PHRASES]
    while len(out) < count:
        page = rng.choice(pages)
        n = rng.choice([4, 6, 8, 12, 16, 20, 30])
        i = rng.randrange(max(1, len(page) - n))
        lit = page[i : i + n]
        try:
            lit.decode("utf-8")
        except UnicodeDecodeError:
            continue
        out.append(lit)
    return out


STOP_SAMPLE = 512  # pages sampled to find stop grams
STOP_BITS = 20  # stop grams are kept as a hashed table of 2**20 slots
_MUL_STOP = 0x85EBCA6B


class StopGramRule(sk.GramRule):
    """The gram rule minus "stop grams": grams (hashed slots) in more than `share` of a sample
    of pages, left out on both sides (tried and not kept: it prunes worse)."""

    def __init__(self, pages, n, bits, share):
        super().__init__(n, bits)
        counts = np.zeros(1 << STOP_BITS, np.int32)
        seen = np.zeros(1 << STOP_BITS, bool)
        sample = pages[:: max(1, len(pages) // STOP_SAMPLE)]
        for text in sample:
            seen[:] = False
            seen[sg.gram_hash(sk.gram_values(text, n), _MUL_STOP, STOP_BITS)] = True
            counts += seen
        self.stop = counts > share * len(sample)

    def positions(self, data):
        v = sk.gram_values(data, self.n)
        return sg.gram_hash(v[~self.stop[sg.gram_hash(v, _MUL_STOP, STOP_BITS)]], sg._MUL, self.bits)


def bloom_design(pages, lits, n, bits, stop):
    rule = StopGramRule(pages, n, bits, stop) if stop else sk.GramRule(n, bits)
    started = time.perf_counter()
    matrix = np.zeros((len(pages), 1 << bits), bool)
    for i, page in enumerate(pages):
        matrix[i, rule.positions(page)] = True
    per_page_ms = (time.perf_counter() - started) * 1000 / len(pages)

    def candidates(lit):
        pos = rule.literal_positions(lit.decode("utf-8"), False)
        return np.ones(len(pages), bool) if pos is None else matrix[:, pos].all(axis=1)

    return {"design": f"bloom n={n} bits=2^{bits}" + (f" stop>{stop}" if stop else ""), "bytes_per_page": (1 << bits) // 8,
            "build_ms_per_page": round(per_page_ms, 2), "fill": round(float(matrix.mean()), 3)}, candidates


_TOKEN = re.compile(rb"[a-z0-9]+")


def token_design(pages, lits, bits):
    def hashes(tokens):
        return np.array([hash(t) % (1 << bits) for t in tokens], np.intp)

    started = time.perf_counter()
    matrix = np.zeros((len(pages), 1 << bits), bool)
    for i, page in enumerate(pages):
        matrix[i, hashes(set(_TOKEN.findall(page.lower())))] = True
    per_page_ms = (time.perf_counter() - started) * 1000 / len(pages)

    def candidates(lit):
        low = lit.lower()
        whole = [m.group() for m in _TOKEN.finditer(low) if m.start() > 0 and m.end() < len(low)]
        return np.ones(len(pages), bool) if not whole else matrix[:, hashes(whole)].all(axis=1)

    return {"design": f"token bloom bits=2^{bits}", "bytes_per_page": (1 << bits) // 8,
            "build_ms_per_page": round(per_page_ms, 2), "fill": round(float(matrix.mean()), 3)}, candidates


def trigram_sets(pages, lits):
    sets = [set(sk.gram_values(p, 3).tolist()) for p in pages]
    postings = sum(len(s) for s in sets)

    def candidates(lit):
        grams = set(sk.gram_values(lit, 3).tolist())
        return np.array([grams <= s for s in sets]) if grams else np.ones(len(pages), bool)

    return {"design": "trigram posting lists (exact)", "bytes_per_page": round(postings * 1.5 / len(pages)),
            "build_ms_per_page": None, "fill": None}, candidates


def score(pages, lits, truth, design, candidates):
    rates = []
    for lit, true in zip(lits, truth):
        cand = candidates(lit)
        assert not (true & ~cand).any(), f"false negative for {lit!r} in {design['design']}"
        negatives = int((~true).sum())
        if negatives:
            rates.append(float((cand & ~true).sum()) / negatives)
    return {**design, "fp_mean": round(statistics.mean(rates), 4), "fp_median": round(statistics.median(rates), 4)}


def run(name: str, pages: list[bytes], lits: list[bytes]) -> list[dict]:
    lowered = [p.lower() for p in pages]
    truth = [np.array([lit.lower() in p for p in lowered]) for lit in lits]  # case-folded: a superset
    rows = []
    for n in (3, 4):
        for bits in (13, 14, 15):
            for stop in (None, 0.25, 0.8):
                rows.append(score(pages, lits, truth, *bloom_design(pages, lits, n, bits, stop)))
    rows.append(score(pages, lits, truth, *token_design(pages, lits, 14)))
    rows.append(score(pages, lits, truth, *trigram_sets(pages, lits)))
    for r in rows:
        r["pages"] = name
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, help="a built corpus folder")
    ap.add_argument("--real", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "realdata")
    ap.add_argument("--literals", type=int, default=300)
    ap.add_argument("--pages", type=int, default=600, help="corpus pages sampled")
    args = ap.parse_args()
    rng = random.Random(0)
    out = []
    real = real_pages(args.real / "financebench" / "docs_md")
    if real:
        out += run(f"financebench ({len(real)} pages)", real, literals(real, args.literals, rng))
    if args.corpus:
        synth = corpus_pages(args.corpus, args.pages)
        out += run(f"{args.corpus.name} ({len(synth)} pages)", synth, literals(synth, args.literals, rng))
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
