"""The data-skipping index: build, tie to the snapshot, and the case-folding facts it relies on."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pytest

from parquet_agent.corpus.skipindex import (
    UNSAFE_FOLD, Literal, SkipIndex, build_skip_index, gram_values,
)
from parquet_agent.corpus.snapshot import CorpusSnapshot
from parquet_agent.errors import StaleIndexError
from tests.tools.conftest import write_files


def test_unsafe_fold_is_every_non_ascii_character_duckdb_or_re2_maps_to_ascii():
    # DuckDB's ILIKE lowers both sides per code point; regexp 'i' (RE2) case-folds. A non-ASCII
    # character that turns into an ASCII one would break "ASCII runs come from ASCII text".
    con = duckdb.connect()
    (found,) = con.execute(r"""
        SELECT list(cp ORDER BY cp) FROM range(128, 1114112) t(cp)
        WHERE (cp < 55296 OR cp > 57343) AND (
            regexp_matches(lower(chr(cp::INT)), '[\x00-\x7f]')
            OR regexp_matches(upper(chr(cp::INT)), '[\x00-\x7f]')
            OR regexp_matches(chr(cp::INT), '^[a-z]$', 'i'))
    """).fetchone()
    assert [chr(c) for c in found] == sorted(UNSAFE_FOLD)


def test_grams_fold_only_ascii_letters():
    assert gram_values("ABCD".encode()).tolist() == gram_values(b"abcd").tolist()
    assert gram_values("ÄBCD".encode()).tolist() != gram_values("äbcd".encode()).tolist()
    assert len(gram_values(b"abc")) == 0


@pytest.fixture
def corpus(tmp_path):
    folder = tmp_path / "corpus"
    write_files(folder)
    return folder


def test_build_then_candidates_are_exactly_what_can_match(corpus):
    summary = build_skip_index(corpus)
    snapshot = CorpusSnapshot.take(corpus)
    skip = SkipIndex.open(corpus, snapshot.snapshot_id)
    assert skip.count == summary.pages > 10
    assert (corpus / "_skip" / "skip.json").is_file()
    # a literal in exactly one filing: its page is a candidate, most others are not
    one = skip.candidates(Literal("END OF FILING 37\n"))
    assert 1 <= one.sum() <= 3
    # ILIKE-style: case variants find the same page
    assert (skip.candidates(Literal("end of filing 37\n", True)) >= one).all()
    # a literal in no filing: no candidate at all
    assert skip.candidates(Literal("zebra quantum marmalade")).sum() == 0
    # a literal in every filing: every page
    assert skip.candidates(Literal("total revenue was")).all()
    # non-ASCII text is matched byte for byte, case-sensitively
    assert skip.candidates(Literal("Ünïcödé ✓")).all()


def test_a_changed_corpus_makes_the_skipping_index_stale(corpus):
    build_skip_index(corpus)
    before = CorpusSnapshot.take(corpus).snapshot_id
    write_files(corpus.parent / "other")
    (corpus / "2025-02.parquet").write_bytes((corpus.parent / "other" / "2025-01.parquet").read_bytes())
    after = CorpusSnapshot.take(corpus).snapshot_id
    assert after != before
    with pytest.raises(StaleIndexError, match="built for snapshot .*--skip-only"):
        SkipIndex.open(corpus, after)


def test_missing_skipping_index_says_how_to_build_it(corpus):
    with pytest.raises(StaleIndexError, match="no skipping index; build it with `parquet-agent corpus index .* --skip-only`"):
        SkipIndex.open(corpus, "snap:x")


def test_bits_are_sliced_per_filter_bit(corpus):
    build_skip_index(corpus)
    bits = np.load(corpus / "_skip" / "bits.npy")
    skip = SkipIndex.open(corpus, CorpusSnapshot.take(corpus).snapshot_id)
    assert bits.shape == (1 << skip.rule.bits, (skip.count + 7) // 8)


def test_a_parallel_build_writes_the_same_bytes_as_a_serial_one(corpus):
    def built(**kwargs) -> dict:
        build_skip_index(corpus, **kwargs)
        info = json.loads((corpus / "_skip" / "skip.json").read_text())
        return {"bits": (corpus / "_skip" / "bits.npy").read_bytes(),
                "pages": (corpus / "_skip" / "pages.parquet").read_bytes(),
                "words": (corpus / "_skip" / "words.arrow").read_bytes(),
                "postings": (corpus / "_skip" / "postings.npy").read_bytes(),
                "info": {k: v for k, v in info.items() if k not in ("built_at", "build_seconds")}}

    serial = built(jobs=1)
    pages = serial["info"]["pages"]
    assert pages > 2 * 8 and pages % 8, "blocks of 8 pages must split it, with a short last block"
    # two spawned workers, many blocks (the last one short): byte for byte the serial files
    assert built(jobs=2, block=8) == serial
    assert built(jobs=1, block=16) == serial
    with pytest.raises(ValueError, match="multiple of 8"):
        build_skip_index(corpus, block=12)


def test_an_index_of_the_old_format_is_refused_with_the_command_that_rebuilds_it(corpus):
    build_skip_index(corpus)
    info_path = corpus / "_skip" / "skip.json"
    info = json.loads(info_path.read_text())
    info["schema_version"] = 1  # grams only: what main wrote before the word summary
    info_path.write_text(json.dumps(info))
    snapshot_id = CorpusSnapshot.take(corpus).snapshot_id
    with pytest.raises(StaleIndexError, match=r"schema_version 1, this version reads 2; rebuild it with "
                                              r"`parquet-agent corpus index .* --skip-only`"):
        SkipIndex.open(corpus, snapshot_id)


def test_the_word_summary_lists_rare_words_with_their_pages_and_common_ones_without(corpus):
    build_skip_index(corpus)
    skip = SkipIndex.open(corpus, CorpusSnapshot.take(corpus).snapshot_id)
    info = skip.info["words"]
    assert info["vocabulary"] > info["listed"] > 0 and info["postings"] > 0
    words = skip.words.words.to_pylist()
    assert words == sorted(words)
    common = skip.words.start[words.index(b"revenue")]
    assert common == -1 and skip.words.pages[words.index(b"revenue")] == skip.count
    # filing 37's accession number: its first word is in that filing only, "25" is everywhere
    one = skip.words.candidates("0000001037-25", False)
    assert one.sum() == 1 and skip.candidates(Literal("0000001037-25")).sum() == 1
    # words of a literal that are all common rule nothing out: None, not every page
    assert skip.words.candidates("OF FILING", False) is None
