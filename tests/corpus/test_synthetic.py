"""The synthetic corpus, checked on real Parquet files with real DuckDB.

One 2,000-row build (the bundled sample's size) is shared by the module; determinism is checked
on smaller builds, once in-process and once through worker processes.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from parquet_agent.corpus.questions import load_questions
from parquet_agent.corpus.schema import CORPUS_SCHEMA
from parquet_agent.corpus.synthetic import build_corpus
from parquet_agent.corpus.synthetic.companies import make_companies
from parquet_agent.corpus.synthetic.plan import company_count, month_rows
from parquet_agent.errors import UsageError

SAMPLE_ROWS = 2000
STEM = re.compile(r"^\d{10}-25-\d{6}$")


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sample")
    result = build_corpus(out, rows=SAMPLE_ROWS, seed=0)
    assert result.rows == SAMPLE_ROWS and result.questions >= 100
    assert "2,000 rows" in result.summary() and "questions" in result.summary()
    return out


@pytest.fixture(scope="module")
def con(sample):
    c = duckdb.connect()
    c.execute(f"CREATE VIEW corpus AS SELECT *, filename FROM read_parquet('{sample}/*.parquet', filename=true)")
    yield c
    c.close()


def test_monthly_files_in_the_exact_schema_and_proportions(sample):
    files = sorted(p.name for p in sample.glob("*.parquet"))
    assert files == [f"2025-{m:02d}.parquet" for m in range(1, 7)]
    counts = []
    for name in files:
        pf = pq.ParquetFile(sample / name)
        assert pf.schema_arrow.equals(CORPUS_SCHEMA), name
        counts.append(pf.metadata.num_rows)
    assert tuple(counts) == month_rows(SAMPLE_ROWS) == (284, 404, 373, 342, 397, 200)
    assert (sample / "questions.jsonl").is_file() and (sample / "manifest.json").is_file()
    manifest = json.loads((sample / "manifest.json").read_text())
    assert manifest["origin"]["rows"] == SAMPLE_ROWS and manifest["origin"]["seed"] == 0


def test_rows_are_sorted_unique_and_self_consistent(sample):
    seen: set[str] = set()
    for month in range(1, 7):
        t = pq.read_table(sample / f"2025-{month:02d}.parquet")
        stems = t.column("file_stem").to_pylist()
        assert stems == sorted(stems)
        assert all(STEM.match(s) for s in stems)
        assert not seen & set(stems)
        seen |= set(stems)
        assert set(t.column("year").to_pylist()) == {2025} and set(t.column("month").to_pylist()) == {month}
        for md, n, h in zip(t.column("parsed_md").to_pylist(), t.column("char_count").to_pylist(), t.column("md5").to_pylist()):
            assert n == len(md) and h == hashlib.md5(md.encode()).hexdigest()


def test_untidiness_is_all_there(con):
    (padded, bare, ocr, near_empty, formats, biggest) = con.execute(
        """SELECT count(*) FILTER (accession LIKE '000%' AND length(accession) = 10),
                  count(*) FILTER (NOT accession LIKE '0%'),
                  count(*) FILTER (has_ocr), count(*) FILTER (char_count < 60),
                  count(DISTINCT source_format), max(char_count) FROM corpus"""
    ).fetchone()
    assert padded > 100 and bare > 100 and ocr >= 10 and near_empty >= 2 and formats >= 4
    assert biggest > 1_000_000  # heavy tail: multi-MB rows even at sample scale
    dup_md5, dup_rows = con.execute(
        "SELECT count(*), sum(n) FROM (SELECT md5, count(DISTINCT file_stem) n FROM corpus "
        "WHERE char_count > 100 GROUP BY md5 HAVING n > 1)"
    ).fetchone()
    assert dup_md5 >= 5 and dup_rows > dup_md5
    # OCR rows are visibly noisy: a clean row never has '0F' glyph swaps in 'FORM'
    assert con.execute("SELECT count(*) FROM corpus WHERE has_ocr AND source_format = 'pdf'").fetchone()[0] == \
        con.execute("SELECT count(*) FROM corpus WHERE has_ocr").fetchone()[0]


def test_one_company_appears_under_several_names(con):
    companies = make_companies(0, company_count(SAMPLE_ROWS))
    variants = 0
    for c in companies[:30]:
        names = con.execute(
            "SELECT count(*) FILTER (contains(parsed_md, ?)), count(*) FILTER (contains(parsed_md, ?)) "
            "FROM corpus WHERE ltrim(accession, '0') = ?",
            [c.name, c.conformed, str(c.cik)],
        ).fetchone()
        variants += names[0] > 0 and names[1] > 0
    assert variants >= 3


def test_every_gold_quote_is_found_at_its_offsets(sample, con):
    qs = load_questions(sample / "questions.jsonl")
    checked = 0
    for ref in qs.references:
        for ev in ref.gold_evidence:
            # DuckDB's substring counts characters from 1, as Python's slices count from 0
            got = con.execute(
                "SELECT substring(parsed_md, ? + 1, ? - ?) FROM corpus WHERE file_stem = ?",
                [ev.start, ev.end, ev.start, ev.file_stem],
            ).fetchall()
            assert got == [(ev.quote,)], (ref.question_id, ev)
            checked += 1
    assert checked >= 80


def test_question_set_shape(sample):
    qs = load_questions(sample / "questions.jsonl")
    assert len(qs) >= 100
    assert qs.ids == tuple(f"Q{i:03d}" for i in range(1, len(qs) + 1))
    kinds = {r.kind for r in qs.references}
    assert kinds == {"table_fact", "prose_fact", "header_fact", "comparison", "count", "alias", "unanswerable"}
    for ref in qs.references:
        if ref.kind == "unanswerable":
            assert not ref.gold_evidence and "cannot" in ref.reference_answer
        if ref.kind in ("table_fact", "prose_fact", "header_fact", "comparison"):
            assert ref.gold_evidence
    assert any(len(r.gold_evidence) == 2 and r.gold_evidence[0].file_stem != r.gold_evidence[1].file_stem
               for r in qs.references if r.kind == "comparison")


def test_company_counts_match_sql_over_the_markdown(sample, con):
    """A count's reference answer equals what an independent SQL count over the Markdown finds."""
    qs = load_questions(sample / "questions.jsonl")
    months = {m: i for i, m in enumerate(("January", "February", "March", "April", "May", "June"), start=1)}
    patterns = {"Form 8-K": r"FORM 8-K[^/]", "Form 10-Q": r"FORM 10-Q[^/]", "Form 4 ": r"^FORM 4\n",
                "Schedule 13G/A": r"FORM SC 13G/A"}
    checked = 0
    for q, ref in zip(qs.questions, qs.references):
        cik = re.search(r"company CIK (\d+)", ref.reference_answer)
        if ref.kind not in ("count", "alias") or not cik:
            continue
        month = months[re.search(r"in (?:the corpus for )?(\w+) 2025", q.question).group(1)]
        pattern = next(p for k, p in patterns.items() if k in q.question)
        rows, distinct = con.execute(
            "SELECT count(*), count(DISTINCT md5) FROM corpus WHERE ltrim(accession, '0') = ? AND month = ? "
            "AND regexp_matches(parsed_md, ?)",
            [cik.group(1), month, pattern],
        ).fetchone()
        assert ref.reference_answer.startswith(f"{rows} filing record"), (q, ref, rows)
        if rows != distinct:
            assert f"so {distinct} distinct" in ref.reference_answer
        checked += 1
    assert checked >= 8


def test_same_seed_same_bytes_in_process_and_in_workers(tmp_path):
    a = build_corpus(tmp_path / "a", rows=300, seed=3, jobs=1)
    b = build_corpus(tmp_path / "b", rows=300, seed=3, jobs=2)
    c = build_corpus(tmp_path / "c", rows=300, seed=4, jobs=1)
    for name in [f.name for f in a.files] + ["questions.jsonl"]:
        assert (a.out / name).read_bytes() == (b.out / name).read_bytes(), name
    assert (a.out / "questions.jsonl").read_bytes() != (c.out / "questions.jsonl").read_bytes()
    strip = lambda p: {k: v for k, v in json.loads(p.read_text()).items() if k != "created_at"}  # noqa: E731
    ma, mb = strip(a.out / "manifest.json"), strip(b.out / "manifest.json")
    assert ma["files"] == mb["files"] and ma["origin"] == mb["origin"]
    # issue 19: another seed does not silently replace a built corpus; the same one rebuilds
    before = (a.out / "questions.jsonl").read_bytes()
    with pytest.raises(UsageError, match="built with --rows 300 --seed 3; building --rows 300 "
                                         "--seed 4 there would replace it"):
        build_corpus(a.out, rows=300, seed=4, jobs=1)
    assert (a.out / "questions.jsonl").read_bytes() == before
    build_corpus(a.out, rows=300, seed=3, jobs=1)
    again = build_corpus(a.out, rows=300, seed=4, jobs=1, overwrite=True)
    assert (again.out / "questions.jsonl").read_bytes() == (c.out / "questions.jsonl").read_bytes()


def test_refuses_tiny_corpora_and_foreign_files(tmp_path):
    with pytest.raises(UsageError, match="too small"):
        build_corpus(tmp_path / "x", rows=50)
    (tmp_path / "y").mkdir()
    (tmp_path / "y" / "other.parquet").write_bytes(b"")
    with pytest.raises(UsageError, match="other.parquet"):
        build_corpus(tmp_path / "y", rows=600)
    # issue 27 item 4: no command writes over a folder it did not make; nothing in it changes
    (tmp_path / "z").mkdir()
    (tmp_path / "z" / "questions.jsonl").write_text("mine\n")
    with pytest.raises(UsageError, match="is not empty .questions.jsonl.*holds no corpus that "
                                         "`corpus build` made"):
        build_corpus(tmp_path / "z", rows=600)
    assert [p.name for p in (tmp_path / "z").iterdir()] == ["questions.jsonl"]
    assert (tmp_path / "z" / "questions.jsonl").read_text() == "mine\n"


def test_an_interrupted_build_is_ours_to_finish(tmp_path):
    out = tmp_path / "c"
    out.mkdir()
    (out / ".corpus-build.json").write_text('{"rows": 300, "seed": 1}\n')  # what a kill leaves
    (out / "2025-01.parquet").write_bytes(b"half")
    with pytest.raises(UsageError, match="built with --rows 300 --seed 1; building --rows 300 "
                                         "--seed 2"):
        build_corpus(out, rows=300, seed=2, jobs=1)
    result = build_corpus(out, rows=300, seed=1, jobs=1)
    assert not (out / ".corpus-build.json").exists() and len(result.files) == 6


def _row(md: str, label: str, after: str) -> list[int]:
    """The numbers of the first table row `| label | ... |` after the heading `after`."""
    tail = md[md.index(after):]
    line = re.search(rf"^\| {re.escape(label)} \|(.*)\|$", tail, re.M).group(1)
    return [int(v.strip().replace(",", "").replace("(", "-").rstrip(")")) for v in line.split("|")]


def test_financials_agree_within_and_across_filings(con):
    """Quarters add up to the year in a 10-K; a 10-Q's balance-sheet comparison column equals the
    10-K's year-end column (the prior filing), for the same company."""
    rows = con.execute(
        "SELECT ltrim(accession, '0') AS cik, file_stem, parsed_md, month FROM corpus WHERE NOT has_ocr AND "
        "(regexp_matches(parsed_md, 'FORM 10-K[^/]') OR regexp_matches(parsed_md, 'FORM 10-Q[^/]')) ORDER BY file_stem"
    ).fetchall()
    annual = {cik: md for cik, _, md, _ in rows if re.search(r"FORM 10-K[^/]", md)}
    checked_sum = checked_cross = 0
    for cik, stem, md, _ in rows:
        if md is annual.get(cik):
            quarters = _row(md, "Total revenue", "Quarterly Results")
            year = _row(md, "Total revenue", "Statements of Operations")[0]
            assert sum(quarters) == year, stem
            checked_sum += 1
        elif cik in annual and "FORM 10-Q" in md:
            ten_k = annual[cik]
            year_end = re.search(r"^\| \(in thousands\) \| ([A-Z][a-z]+ \d+, \d{4}) \|", ten_k[ten_k.index("Consolidated Balance Sheets"):], re.M).group(1)
            q_head = re.search(r"^\| \(in thousands\) \| [^|]+ \| ([^|]+) \|", md[md.index("Balance Sheets"):], re.M).group(1).strip()
            if q_head == year_end:  # the 10-Q compares with the fiscal year this 10-K closed
                assert _row(md, "Total assets", "Balance Sheets")[1] == _row(ten_k, "Total assets", "Balance Sheets")[0], stem
                checked_cross += 1
    assert checked_sum >= 10 and checked_cross >= 3


def test_month_rows_follow_the_reference_at_any_scale():
    from parquet_agent.corpus.synthetic.plan import REFERENCE_MONTH_ROWS, REFERENCE_ROWS

    assert month_rows(REFERENCE_ROWS) == REFERENCE_MONTH_ROWS == (90_711, 128_993, 118_933, 109_085, 126_665, 63_680)
    assert month_rows(63_807) == (9_071, 12_899, 11_893, 10_909, 12_667, 6_368)
    for rows in (300, 2000, 12_345):
        assert sum(month_rows(rows)) == rows
