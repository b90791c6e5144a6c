"""Pruning over a distribution of literals: how many pages the skipping index rules out, per literal
and per query shape, against each literal's selectivity; every pruned answer checked exact.

    nice -n 10 .venv/bin/python bench/bench_skip_literals.py /work/scale/tenth --out before.json

Literals (deterministic for a `--seed`): `--companies` names drawn from the header table
(`_index/headers.parquet`), and from the Markdown of `--sample-groups` random row groups:
`--persons` person names (signatures, reporting persons, appointments, compensation tables),
`--places` places (street addresses, "City, ST 12345"), `--amounts` dollar amounts and table
figures, `--phrases` two-word phrases.

Truth (the scan): one pass over every row of the corpus files (pyarrow's row-group reader, not
the index's page reader) finds all literals at once (Aho-Corasick, `pip install pyahocorasick`):
per literal the filings and the `parsed_md` data pages holding it, case-sensitively (contains,
LIKE, regexp) and after lower-casing both (ILIKE; Python's `str.lower`, which agrees with DuckDB's
`lower` on this corpus's characters: a disagreement would show as a mismatch below), with the
count and the xor of DuckDB's `hash(file_stem)` of the matched rows. A DuckDB scan per literal
(17-60 CPU s each at full scale) is out of reach for hundreds of literals; this pass is one.

Per literal and shape (`contains`, `LIKE '%..%'`, `ILIKE '%..%'`, `regexp_matches` of the escaped
literal) the query `SELECT count(*), bit_xor(hash(file_stem)) FROM filings WHERE <shape>` goes
through the real `sql` tool (`Tools`, cache off) when the index answers it from candidate pages;
its rows must equal the scan's, else the benchmark stops. Queries the index leaves to the scan
(too many candidates, or nothing prunable) are scans whatever the index: pruning 1x; they run
through the tool only with `--run-scans` (at full scale every scan times out at 30 s). Whether a
query is pruned is decided in process by the same rule the worker applies and checked against
the tool's own report for every query that runs. `--tool-max-share S` sends only the literals in
fewer than S of the filings through the tool (at full scale, the commoner ones read thousands of
pages per call); the others get the in-process decision, marked by the absence of `run_ms`.

Pruning ratio = pages of `parsed_md` / pages read (1 for a scan). Each query also gets the ratio
the grams alone give (`grams_only_ratio`, decided in process from the same bit slices: what the
index of schema_version 1 read), so one run gives before and after. Reported: every literal, and
p10 / median / p90 of the ratio per selectivity band (share of filings matched) and shape.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow.parquet as pq

from parquet_agent.corpus.pages import PageFormatError, column_pages
from parquet_agent.corpus.skipindex import SkipIndex
from parquet_agent.corpus.snapshot import CorpusSnapshot
from parquet_agent.tools import Tools
from parquet_agent.tools import pruned as pruned_module
from parquet_agent.tools.prune import required_text

CATEGORIES = ("company", "person", "place", "amount", "phrase")
SHAPES = ("contains", "like", "ilike", "regexp")
BANDS = ((0.0, 0.0001, "< 0.01 %"), (0.0001, 0.001, "0.01-0.1 %"), (0.001, 0.01, "0.1-1 %"),
         (0.01, 1.01, ">= 1 %"))
_PERSON = re.compile(r"(?:/s/ |Reporting Person: |appointed |\| )([A-Z][a-z]+ [A-Z][a-z]+)(?=[,\n| ])")
_STREET = re.compile(r"\b\d{2,5} [A-Z][a-z]+(?: [A-Z][a-z]+)? (?:Street|Avenue|Drive|Way|Boulevard|Road)\b")
_CITY = re.compile(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)?, [A-Z]{2} \d{5}\b")
_MILLIONS = re.compile(r"\$\d{1,4}\.\d million")
_FIGURE = re.compile(r"(?<![\d,.])\$?\d{1,3}(?:,\d{3}){1,3}(?![\d,])")
_PHRASE = re.compile(r"(?<![A-Za-z])[A-Za-z]{3,} [A-Za-z]{3,}(?![A-Za-z])")


def _sql(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _regex_escape(text: str) -> str:
    return "".join("\\" + c if c in "\\.^$|?*+()[]{}" else c for c in text)


def _like(text: str) -> str:
    """A LIKE pattern matching `text` anywhere (ESCAPE '!' when it holds a wildcard)."""
    if not set(text) & set("%_!"):
        return f"LIKE {_sql('%' + text + '%')}"
    escaped = text.replace("!", "!!").replace("%", "!%").replace("_", "!_")
    return f"LIKE {_sql('%' + escaped + '%')} ESCAPE '!'"


def query(shape: str, text: str) -> str:
    where = {"contains": f"contains(parsed_md, {_sql(text)})",
             "like": f"parsed_md {_like(text)}",
             "ilike": f"parsed_md I{_like(text)}",
             "regexp": f"regexp_matches(parsed_md, {_sql(_regex_escape(text))})"}[shape]
    return f"SELECT count(*) AS n, bit_xor(hash(file_stem)) AS x FROM filings WHERE {where}"


# -- literals ----------------------------------------------------------------------------------


def _sample_text(folder: Path, files: list[str], groups: int, rng: random.Random) -> str:
    """The Markdown of `groups` random row groups (one string)."""
    where = [(name, g) for name in files for g in range(pq.read_metadata(folder / name).num_row_groups)]
    texts = []
    for name, g in sorted(rng.sample(where, min(groups, len(where)))):
        column = pq.ParquetFile(folder / name).read_row_group(g, columns=["parsed_md"]).column(0)
        texts += [t for t in column.to_pylist() if t]
    return "\n".join(texts)


def _pick(rng: random.Random, found, n: int) -> list[str]:
    distinct = sorted(set(found))
    return rng.sample(distinct, min(n, len(distinct)))


def pick_literals(folder: Path, files: list[str], args) -> list[dict]:
    rng = random.Random(args.seed)
    headers = pq.read_table(folder / "_index" / "headers.parquet", columns=["company"])
    companies = _pick(rng, (c for c in headers.column("company").to_pylist() if c and len(c) >= 4), args.companies)
    text = _sample_text(folder, files, args.sample_groups, rng)
    persons = _pick(rng, _PERSON.findall(text), args.persons)
    cities = _pick(rng, _CITY.findall(text), args.places // 2)  # few distinct: streets fill up
    places = _pick(rng, _STREET.findall(text), args.places - len(cities)) + cities
    amounts = (_pick(rng, _FIGURE.findall(text), args.amounts - args.amounts // 2)
               + _pick(rng, _MILLIONS.findall(text), args.amounts // 2))
    phrases = _pick(rng, _PHRASE.findall(text), args.phrases)
    out = []
    for category, items in zip(CATEGORIES, (companies, persons, places, amounts, phrases)):
        out += [{"category": category, "literal": lit} for lit in items]
    return out


# -- truth: the scan ---------------------------------------------------------------------------


def _page_starts(folder: Path, name: str) -> np.ndarray:
    """First row (in the file) of every data page of `parsed_md` of one file, in order; a row
    group not readable by page is one page."""
    meta = pq.read_metadata(folder / name)
    column = meta.schema.to_arrow_schema().get_field_index("parsed_md")
    starts, first = [], 0
    fd = os.open(folder / name, os.O_RDONLY)
    try:
        for g in range(meta.num_row_groups):
            try:
                starts += [first + s.first_row for s in column_pages(fd, meta, g, column)]
            except PageFormatError:
                starts.append(first)
            first += meta.row_group(g).num_rows
    finally:
        os.close(fd)
    return np.array(starts, np.int64)


def _automaton(keys: list[str]):
    import ahocorasick  # pip install pyahocorasick: every literal in one pass over the text

    automaton = ahocorasick.Automaton()
    for i, key in enumerate(keys):
        if key in automaton:
            automaton.get(key).append(i)
        else:
            automaton.add_word(key, [i])
    automaton.make_automaton()
    return automaton


def _file_truth(folder: Path, name: str, texts: list[str]) -> tuple[int, int, dict, float]:
    """One file's part of the truth: (rows, pages, per side a list per literal of [filings, xor,
    pages (numbered within the file)], CPU seconds)."""
    started = time.process_time()
    sides = {"cs": _automaton(texts), "ci": _automaton([t.lower() for t in texts])}
    acc: dict = {side: [[0, 0, set()] for _ in texts] for side in sides}
    con = duckdb.connect(config={"threads": 1})
    hashes = np.array([h for (h,) in con.execute(
        f"SELECT hash(file_stem) FROM read_parquet({_sql(str(folder / name))})").fetchall()], np.uint64)
    starts = _page_starts(folder, name)
    handle = pq.ParquetFile(folder / name)
    first = 0
    for g in range(handle.metadata.num_row_groups):
        cells = handle.read_row_group(g, columns=["parsed_md"]).column(0).to_pylist()
        for k, text in enumerate(cells):
            if not text:
                continue
            row = first + k
            page = int(np.searchsorted(starts, row, side="right")) - 1
            for side, haystack in (("cs", text), ("ci", text.lower())):
                for i in {i for _, ids in sides[side].iter(haystack) for i in ids}:
                    entry = acc[side][i]
                    entry[0] += 1
                    entry[1] ^= int(hashes[row])
                    entry[2].add(page)
        first += len(cells)
    return first, len(starts), acc, time.process_time() - started


def truth(folder: Path, files: list[str], literals: list[dict], jobs: int = 1) -> tuple[int, int, float]:
    """Fill each literal's `truth`: per side (`cs` as contains/LIKE/regexp see it, `ci` as ILIKE
    does: both lowered) the filings holding it, the xor of their `hash(file_stem)` (DuckDB's) and
    the pages holding it. One pass over every row (pyarrow's reader, not the index's page reader),
    all literals at once (Aho-Corasick), a file per task in `jobs` processes. Returns (filings,
    pages, CPU seconds of the pass)."""
    from concurrent.futures import ProcessPoolExecutor

    texts = [x["literal"] for x in literals]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        parts = list(pool.map(_file_truth, [folder] * len(files), files, [texts] * len(files)))
    rows = page_base = 0
    cpu = 0.0
    total = {side: [[0, 0, set()] for _ in literals] for side in ("cs", "ci")}
    for file_rows, file_pages, acc, seconds in parts:
        for side, entries in acc.items():
            for mine, (n, x, pages) in zip(total[side], entries):
                mine[0] += n
                mine[1] ^= x
                mine[2].update(page_base + p for p in pages)
        rows += file_rows
        page_base += file_pages
        cpu += seconds
    for i, item in enumerate(literals):
        item["truth"] = {side: {"filings": total[side][i][0], "xor": total[side][i][1] if total[side][i][0] else None,
                                "pages": len(total[side][i][2])} for side in total}
    return rows, page_base, cpu


# -- through the tool --------------------------------------------------------------------------


def predicted(con: duckdb.DuckDBPyConnection, sql: str, skip: SkipIndex, *, words: bool = True) -> tuple[bool, int]:
    """(pruned?, pages read) as the worker decides it (`tools/pruned.py`'s rule); by the grams
    alone when not `words` (what the index of schema_version 1 decided)."""
    ((tree,),) = con.execute("SELECT json_serialize_sql(?)", [sql]).fetchall()
    need = required_text(json.loads(tree))
    if need is None:
        return False, skip.count
    chosen = np.flatnonzero(skip.candidates(need, words=words))
    sizes = skip.pages.column("text_bytes").to_numpy()
    text_bytes = int(sizes[chosen].sum())
    limit = max(pruned_module.MAX_CANDIDATE_SHARE * int(sizes.sum()), pruned_module.SMALL_TEXT)
    if text_bytes > limit or text_bytes > pruned_module.MAX_CANDIDATE_TEXT:
        return False, skip.count
    return True, len(chosen)


def _ratio(skip: SkipIndex, pruned: bool, pages_read: int) -> float:
    return round(skip.count / max(pages_read, 1), 2) if pruned else 1.0


def measure(folder: Path, literals: list[dict], total_filings: int, run_scans: bool,
            tool_max_share: float = 1.01) -> None:
    snapshot = CorpusSnapshot.take(folder)
    skip = SkipIndex.open(folder, snapshot.snapshot_id)
    con = duckdb.connect()
    with Tools.open(folder, "sql", cache="off") as tools:
        for item in literals:
            item["shapes"] = {}
            for shape in SHAPES:
                sql = query(shape, item["literal"])
                side = "ci" if shape == "ilike" else "cs"
                expected = item["truth"][side]
                pruned, pages_read = predicted(con, sql, skip)
                grams = predicted(con, sql, skip, words=False)
                record = {"pruned": pruned, "pages_read": pages_read, "ratio": _ratio(skip, pruned, pages_read),
                          "grams_only_ratio": _ratio(skip, *grams)}
                if (pruned or run_scans) and item["truth"]["cs"]["filings"] < tool_max_share * total_filings:
                    result = tools.call("sql", query=sql)
                    record.update(run_ms=round(result.timings.run_ms, 1), ok=result.ok,
                                  error=result.error.kind if result.error else None)
                    report = result.skip_index or {}
                    if result.ok:
                        got = result.output["rows"][0]
                        if got[0] != expected["filings"] or (got[0] and got[1] != expected["xor"]):
                            raise SystemExit(f"MISMATCH {shape} {item['literal']!r}: tool {got}, scan {expected}")
                    if bool(report.get("used")) != pruned:
                        raise SystemExit(f"decision differs for {sql}: predicted {pruned}, tool {report}")
                item["shapes"][shape] = record
            item["share"] = item["truth"]["cs"]["filings"] / total_filings
            print(json.dumps({k: item[k] for k in ("category", "literal", "share")}
                             | {s: item["shapes"][s]["ratio"] for s in SHAPES}), file=sys.stderr, flush=True)


def _stats(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    q = np.percentile(values, [10, 50, 90])
    return {"n": len(values), "p10": round(float(q[0]), 1), "median": round(float(q[1]), 1),
            "p90": round(float(q[2]), 1)}


def bands(literals: list[dict]) -> list[dict]:
    out = []
    for lo, hi, label in BANDS:
        inside = [x for x in literals if lo <= x["share"] < hi and x["truth"]["cs"]["filings"] > 0]
        row = {"band": label, "literals": len(inside),
               "categories": {c: sum(x["category"] == c for x in inside) for c in CATEGORIES}}
        for shape in SHAPES:
            row[shape] = _stats([x["shapes"][shape]["ratio"] for x in inside])
            row[f"{shape}_grams_only"] = _stats([x["shapes"][shape]["grams_only_ratio"] for x in inside])
        out.append(row)
    absent = [x for x in literals if x["truth"]["cs"]["filings"] == 0]
    out.append({"band": "in no filing (case-sensitive)", "literals": len(absent),
                **{shape: _stats([x["shapes"][shape]["ratio"] for x in absent]) for shape in SHAPES}})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--seed", type=int, default=28)
    ap.add_argument("--companies", type=int, default=100)
    ap.add_argument("--persons", type=int, default=100)
    ap.add_argument("--places", type=int, default=50)
    ap.add_argument("--amounts", type=int, default=50)
    ap.add_argument("--phrases", type=int, default=50)
    ap.add_argument("--sample-groups", type=int, default=12, help="row groups whose text literals come from")
    ap.add_argument("--run-scans", action="store_true", help="also run the queries the index leaves to the scan")
    ap.add_argument("--jobs", type=int, default=2, help="processes of the truth pass (a file each)")
    ap.add_argument("--tool-max-share", type=float, default=1.01,
                    help="through the tool only literals in fewer than this share of filings (the "
                         "others' pruning is the in-process decision, unchecked)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    folder = args.corpus.resolve()
    files = [e.name for e in CorpusSnapshot.take(folder).files]
    out: dict = {"corpus": str(folder), "load_before": os.getloadavg(), "args": {
        k: v for k, v in vars(args).items() if k not in ("corpus", "out")}}
    literals = pick_literals(folder, files, args)
    filings, pages, cpu = truth(folder, files, literals, args.jobs)
    out["truth"] = {"filings": filings, "pages": pages, "cpu_s": round(cpu, 1)}
    started = time.monotonic()
    measure(folder, literals, filings, args.run_scans, args.tool_max_share)
    out["measure_wall_s"] = round(time.monotonic() - started, 1)
    skip = SkipIndex.open(folder, CorpusSnapshot.take(folder).snapshot_id)
    corpus_bytes = sum((folder / n).stat().st_size for n in files)
    out["index"] = {"bytes": skip.info["bytes"], "share_of_corpus": round(skip.info["bytes"] / corpus_bytes, 4),
                    "schema_version": skip.info["schema_version"]}
    out["bands"] = bands(literals)
    out["literals"] = literals
    out["load_after"] = os.getloadavg()
    text = json.dumps(out, indent=2, default=str)
    if args.out:
        args.out.write_text(text)
    print(json.dumps({k: out[k] for k in ("truth", "index", "bands", "measure_wall_s")}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
