"""The word summary of the skipping index: how text and literals split into words, and that a
literal's candidate pages hold every page that holds it, on planted tricky text."""

from __future__ import annotations

import hashlib

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from parquet_agent.corpus.layout import LayoutWriter
from parquet_agent.corpus.skipindex import Literal, SkipIndex, build_skip_index
from parquet_agent.corpus.skipwords import MAX_WORD, Run, WordCollector, literal_runs, page_words
from parquet_agent.corpus.snapshot import CorpusSnapshot


def test_words_keep_figures_whole_and_fold_only_ascii():
    found, long = page_words("Calancor Corporation, Inc. paid $1,234,567.\x00CAFÉ café 12.5%".encode())
    assert found == {b"calancor", b"corporation,", b"inc.", b"paid", b"1,234,567.", "cafÉ".encode(),
                     "café".encode(), b"12.5"}
    assert not long
    found, long = page_words(b"short " + b"x" * (MAX_WORD + 1))
    assert found == {b"short"} and long


def test_the_vocabulary_is_sorted_bytewise_with_each_words_pages_ascending():
    # the lookups bisect words.arrow as Python orders bytes: unsigned, a prefix first
    words = [b"caf\xc3\xa9", b"Zeta", b"a", b"ab", b"a\x80", b"a\x7f", b"1,234", b"\xff", b"ab"]
    blocks = ((0, words[:5]), (8, words[4:]))  # first page, each page's word: a\x80 in both
    collector = WordCollector(cap=16)
    for first_page, block in blocks:
        vocab = sorted(set(block), key=block.index)
        pages = np.array([i % 3 for i in range(len(block))], np.int32)
        collector.add(vocab, pages, np.array([vocab.index(w) for w in block], np.int32), first_page)
    table, postings = collector.finish()
    assert table.column("word").to_pylist() == sorted(set(words))
    counts = table.column("pages").to_pylist()
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    for word, start, count in zip(table.column("word").to_pylist(), starts, counts):
        held = sorted({first + i % 3 for first, block in blocks for i, w in enumerate(block) if w == word})
        assert postings[start : start + count].tolist() == held, word


@pytest.mark.parametrize("text, fold, runs", [
    # a run at the literal's start may be the end of a longer word, one at its end the start of one
    ("Calancor Corporation", False, [Run(b"calancor", False, True), Run(b"corporation", True, False)]),
    ("$1,234,567 in cash", False, [Run(b"1,234,567", True, True), Run(b"in", True, True), Run(b"cash", True, False)]),
    ("ancor", False, [Run(b"ancor", False, False)]),
    (" Inc. ", False, [Run(b"inc.", True, True)]),
    # case-sensitive: non-ASCII bytes are word bytes, matched as they are
    ("Café Noir", False, [Run("café".encode(), False, True), Run(b"noir", True, False)]),
    # case-insensitive: only ASCII is known in the text, so the literal is cut open at the rest
    ("Café Noir", True, [Run(b"caf", False, False), Run(b"noir", True, False)]),
    ("the İstanbul office", True, [Run(b"the", False, True), Run(b"stanbul", False, True), Run(b"office", True, False)]),
    ("--", False, []),
])
def test_literal_runs(text, fold, runs):
    assert literal_runs(text, fold) == runs


# Every page has all the 4-grams of "Calancor Corporation" (so the grams rule nothing out) but not
# its words; the planted rows hold the literal in the shapes a word index could get wrong.
FILLER = "Calancora decor for corporate incorporation, the balance. " * 20
PLANTED = {
    3: "Calancor Corporation",  # plain, mid-row
    11: "XCalancor Corporations",  # inside longer words at both ends: contains must still find it
    19: "CALANCOR CORPORATION",  # only case-insensitively
    27: "Çalancor Corporation",  # a non-ASCII letter before: contains finds it, as a substring
    35: "paid $1,234,567.89 in",  # a figure, and pieces of it
    43: "Calancor",  # row ends with one half...
    44: " Corporation",  # ...the next row starts with the other: no row holds the literal
    51: "Zentrix İNDUSTRIES",  # a character whose lower case is ASCII ('İ' -> 'i')
}


def _text(i: int) -> str:
    planted = PLANTED.get(i, f"filler row {i}")
    if i == 43:
        return FILLER + planted
    if i == 44:
        return planted + FILLER
    return FILLER + planted + " " + FILLER


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("words") / "corpus"
    folder.mkdir()
    rows = [{"accession": str(i), "file_stem": f"{i:010d}-25-{i:06d}", "year": 2025, "month": 1,
             "parsed_md": _text(i), "char_count": len(_text(i)),
             "md5": hashlib.md5(_text(i).encode()).hexdigest(), "has_ocr": False, "source_format": "html"}
            for i in range(60)]
    with LayoutWriter(folder / "2025-01.parquet", row_group_text_bytes=5_000) as out:
        out.write(pa.Table.from_pylist(rows))
    build_skip_index(folder)
    return folder


def _pages_holding(corpus, skip: SkipIndex, predicate: str) -> set[int]:
    """Pages (index numbers) of the rows DuckDB's scan says satisfy `predicate` on `parsed_md`."""
    rows = duckdb.connect().execute(
        f"SELECT file_row_number FROM read_parquet('{corpus / '2025-01.parquet'}', file_row_number = true) "
        f"WHERE {predicate}").fetchall()
    ends = np.cumsum(skip.pages.column("rows").to_numpy())  # one file: pages cover its rows in order
    return {int(np.searchsorted(ends, r, side="right")) for (r,) in rows}


@pytest.mark.parametrize("text, fold, predicate", [  # names: every 4-gram of them is on every page
    ("Calancor Corporation", False, "contains(parsed_md, 'Calancor Corporation')"),
    ("Calancor Corporation", True, "parsed_md ILIKE '%Calancor Corporation%'"),
    ("alancor Corp", False, "contains(parsed_md, 'alancor Corp')"),
    ("calancor corporation", True, "contains(lower(parsed_md), 'calancor corporation')"),
])
def test_words_rule_out_pages_the_grams_cannot(corpus, text, fold, predicate):
    skip = _candidates_cover_the_scan(corpus, text, fold, predicate)
    assert skip._gram_candidates(Literal(text, fold)).all()


@pytest.mark.parametrize("text, fold, predicate", [
    ("1,234,567", False, "contains(parsed_md, '1,234,567')"),
    ("34,567.8", False, "contains(parsed_md, '34,567.8')"),
    ("$1,234,5", False, "contains(parsed_md, '$1,234,5')"),
    ("Calancor Corporation\x00", False, "false"),
    ("zentrix industries", True, "parsed_md ILIKE '%zentrix industries%'"),
    ("ZENTRIX İndustries", True, "parsed_md ILIKE '%ZENTRIX İndustries%'"),
    ("Zentrix İNDUSTRIES", False, "contains(parsed_md, 'Zentrix İNDUSTRIES')"),
])
def test_figures_and_non_ascii_keep_every_page_the_scan_finds(corpus, text, fold, predicate):
    _candidates_cover_the_scan(corpus, text, fold, predicate)


def test_a_non_ascii_letter_in_a_case_insensitive_literal_leaves_only_its_ascii_pieces(corpus):
    # ILIKE '%Çalancor%': "alancor" may be inside any word (here every page's "Calancora")
    skip = SkipIndex.open(corpus, CorpusSnapshot.take(corpus).snapshot_id)
    truth = _pages_holding(corpus, skip, "parsed_md ILIKE '%Çalancor%'")
    assert len(truth) == 1 and skip.candidates(Literal("Çalancor", True)).all()


def _candidates_cover_the_scan(corpus, text: str, fold: bool, predicate: str) -> SkipIndex:
    skip = SkipIndex.open(corpus, CorpusSnapshot.take(corpus).snapshot_id)
    assert skip.count >= 20
    candidates = skip.candidates(Literal(text, fold))
    truth = _pages_holding(corpus, skip, predicate)
    assert truth <= set(candidates.nonzero()[0].tolist())  # never a false negative
    assert candidates.sum() <= len(truth) + 2  # and nearly all the others were ruled out
    return skip


def test_across_rows_no_page_is_needed_and_both_halves_are_found(corpus):
    skip = SkipIndex.open(corpus, CorpusSnapshot.take(corpus).snapshot_id)
    assert _pages_holding(corpus, skip, "contains(parsed_md, 'Calancor Corporation')") == \
        _pages_holding(corpus, skip, "contains(parsed_md, 'Calancor Corporation') AND NOT contains(parsed_md, 'filler row 43')")
    row_43 = _pages_holding(corpus, skip, "ends_with(parsed_md, 'Calancor')")
    assert row_43 <= set(skip.candidates(Literal("Calancor")).nonzero()[0].tolist())
