"""The word summary of the skipping index: which pages hold each rare word, exactly.

Why: the 4-gram bloom filters (corpus/skipgrams.py) rule out a page only when one of the
literal's 4-grams is missing from it. Names, places and figures are made of common grams
("Calancor Corporation": "lanc" as in balance, "ncor" as in incorporated), so for them no page
is ruled out although the literal is in few filings. Its words are rare: this summary keeps,
for every word of the corpus, the pages that hold it (a posting list), for the words in at most
`cap` pages; more common words are listed without pages (they rule nothing out).

Words: maximal runs of word bytes, ASCII letters folded to lower case. Word bytes are ASCII
letters and digits, ',' and '.', and every byte >= 0x80; all other bytes separate words. A
byte's class does not depend on its neighbours, so a literal splits the way the text around it
does; ',' and '.' count as word bytes to keep figures whole ("1,234,567", "12.5"), at the price
of separate entries for "revenue" and "revenue." (a lookup finds both, see below).

What a literal requires (exact, never a false negative): a text holding the literal holds its
ASCII-folded bytes, so each run of word bytes of the folded literal lies inside one word of the
text: a run with a separator on both sides (within the literal) is a whole word; a run that
starts the literal ends a word (the text may go on before it: "Calancor" in "XCalancor"), one
that ends the literal starts a word, a run that is the whole literal lies inside a word. The
pages that may hold the literal are, for each run, the union of the pages of the vocabulary's
words that equal / end with / start with / contain it (every page when one of those is a common
word), intersected over the runs. Case-insensitive literals (ILIKE, lower(), regexp 'i') are
first cut at every non-ASCII character, whose side is then open: DuckDB lowers per code point and
RE2 folds case, so only the literal's ASCII bytes are known to be in the text (the few
characters whose case mapping is ASCII are the caller's: their pages are always read, as for the
grams). Words longer than MAX_WORD bytes are not listed; a page holding one is a candidate for
every literal (`long_words`). The cells of a page are joined by NUL, a separator: no word spans
two rows.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

MAX_WORD = 64  # bytes; longer runs (encoded blobs) are not listed: their pages are always read
CAP_SHARE = 0.02  # words in more than this share of the pages are listed without their pages
MIN_CAP = 16  # ...but the pages of a word in at most this many pages are always kept
MAX_RUN_POSTINGS = 1 << 20  # a run matching more postings than this rules out too little to read
_COMPACT_EVERY = 1 << 24  # postings collected before words past the cap are dropped from them

_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789,.") | frozenset(range(128, 256))
# bytes.translate table: word bytes to themselves (ASCII letters lowered), separators to b" "
_SPLIT = bytes((ord(chr(b).lower()) if b < 128 else b) if b in _WORD_BYTES else 32 for b in range(256))
WORDS_SCHEMA = pa.schema([("word", pa.binary()), ("pages", pa.int32())])


def page_words(text: bytes) -> tuple[set[bytes], bool]:
    """(distinct words of `text` up to MAX_WORD bytes, ASCII-folded; whether it has longer ones)."""
    found = set(text.translate(_SPLIT).split())
    long = [w for w in found if len(w) > MAX_WORD]
    found.difference_update(long)
    return found, bool(long)


@dataclass(frozen=True)
class Run:
    """A run of word bytes of a literal. Closed on a side: a separator of the literal is there,
    so the run's word of the text ends there too."""

    text: bytes
    closed_left: bool
    closed_right: bool


def literal_runs(text: str, fold: bool) -> list[Run]:
    """The runs of word bytes every text holding `text` holds (case-insensitively when `fold`)."""
    if fold:  # only ASCII is known under Unicode case mapping: cut at the rest, open there
        pieces = [p.encode("ascii") for p in "".join(c if c < "\x80" else "\x00" for c in text).split("\x00")]
    else:
        pieces = [text.encode("utf-8", "surrogatepass")]
    runs = []
    for piece in pieces:
        folded = piece.translate(_SPLIT)
        for start, word in _spans(folded):
            runs.append(Run(word, start > 0, start + len(word) < len(folded)))
    return runs


def _spans(folded: bytes) -> list[tuple[int, bytes]]:
    out, i = [], 0
    for word in folded.split(b" "):
        if word:
            out.append((i, word))
        i += len(word) + 1
    return out


# -- building --------------------------------------------------------------------------------


class BlockWords:
    """The words of one block of pages, page by page (`add`), as `result()`: (the block's
    vocabulary, page of each (page, word) pair, word of each pair as an index into the
    vocabulary, pages never ruled out by words: a long word, or unreadable)."""

    def __init__(self, pages: int):
        self.ids: dict[bytes, int] = {}
        self.pages: list[np.ndarray] = []
        self.word_ids: list[np.ndarray] = []
        self.long = np.zeros(pages, bool)

    def add(self, page: int, text: bytes | None) -> None:
        if text is None:
            self.long[page] = True
            return
        found, self.long[page] = page_words(text)
        self.pages.append(np.full(len(found), page, np.int32))
        self.word_ids.append(_ids(self.ids, found))

    def result(self) -> tuple[list[bytes], np.ndarray, np.ndarray, np.ndarray]:
        empty = np.empty(0, np.int32)
        return (list(self.ids), np.concatenate(self.pages) if self.pages else empty,
                np.concatenate(self.word_ids) if self.word_ids else empty, self.long)


def _ids(ids: dict[bytes, int], words: set[bytes] | list[bytes]) -> np.ndarray:
    """The ids of `words` in `ids`, new words numbered on (set and dict operations in C: 1.6x
    faster than a setdefault per word)."""
    new = (words if isinstance(words, set) else set(words)).difference(ids)
    ids.update(zip(new, range(len(ids), len(ids) + len(new))))
    return np.array(list(map(ids.__getitem__, words)), np.int32)


class WordCollector:
    """Merges blocks' words, in page order, into the vocabulary and the posting lists of the
    words in at most `cap` pages (pages of words past it are dropped as they go)."""

    def __init__(self, cap: int):
        self.cap = cap
        self.ids: dict[bytes, int] = {}
        self.df = np.zeros(0, np.int64)
        self.parts: list[tuple[np.ndarray, np.ndarray]] = []
        self.collected = 0

    def add(self, vocab: list[bytes], pages: np.ndarray, word_ids: np.ndarray, first_page: int) -> None:
        ids = self.ids
        gid = _ids(ids, vocab)
        if len(ids) > len(self.df):
            self.df = np.concatenate([self.df, np.zeros(len(ids) - len(self.df), np.int64)])
        words = gid[word_ids]
        self.df += np.bincount(words, minlength=len(self.df))
        keep = self.df[words] <= self.cap
        # int32 (word ids and page numbers fit): the postings are the parent's largest arrays
        self.parts.append((words[keep], pages[keep].astype(np.int32) + np.int32(first_page)))
        self.collected += int(keep.sum())
        if self.collected > _COMPACT_EVERY:
            self.parts = [self._kept()]
            self.collected = len(self.parts[0][0])

    def _kept(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.parts:
            return np.empty(0, np.int32), np.empty(0, np.int32)
        words = np.concatenate([w for w, _ in self.parts])
        pages = np.concatenate([p for _, p in self.parts])
        keep = self.df[words] <= self.cap
        return words[keep], pages[keep]

    def finish(self) -> tuple[pa.Table, np.ndarray]:
        """(the words table sorted by word: word, pages holding it; the posting lists, uint32,
        of the words in at most `cap` pages, in that order)."""
        words, pages = self._kept()
        self.parts = []
        vocab = pa.array(list(self.ids), pa.binary())
        self.ids = {}  # the vocabulary's largest copy: freed before the sort's arrays are made
        order = pc.sort_indices(vocab).to_numpy()  # bytewise, as Python orders bytes
        rank = np.empty(len(vocab), np.int32)
        rank[order] = np.arange(len(vocab), dtype=np.int32)
        by_word = np.argsort(rank[words], kind="stable")  # pages stay ascending within a word
        postings = pages[by_word].astype(np.uint32)
        table = pa.table({"word": vocab.take(order), "pages": pa.array(self.df[order], pa.int32())},
                         schema=WORDS_SCHEMA)
        return table, postings


def word_cap(pages: int, share: float = CAP_SHARE) -> int:
    return max(MIN_CAP, int(share * pages))


def write_words(folder: Path, table: pa.Table, postings: np.ndarray) -> None:
    with pa.OSFile(str(folder / "words.arrow"), "wb") as sink, pa.ipc.new_file(sink, WORDS_SCHEMA) as out:
        out.write_table(table)
    np.save(folder / "postings.npy", postings)


# -- reading ---------------------------------------------------------------------------------


class WordIndex:
    """The word summary of a built index folder (`_skip/`), memory-mapped."""

    def __init__(self, base: Path, count: int, cap: int, long_words: np.ndarray):
        # read through a buffer over the map (zero-copy): an IPC reader over the mapped file
        # itself starts Arrow's I/O threads, and a fork server must stay single-threaded (its
        # children would then connect to DuckDB themselves on every call, ~20 ms of CPU each)
        mapped = pa.memory_map(str(base / "words.arrow")).read_buffer()
        table = pa.ipc.open_file(pa.BufferReader(mapped)).read_all()
        self.words = table.column("word").combine_chunks()
        self.pages = table.column("pages").to_numpy()
        listed = np.where(self.pages <= cap, self.pages, 0).astype(np.int64)
        # where each listed word's pages start in `postings` (-1: a common word, none listed)
        self.start = np.where(self.pages <= cap, np.cumsum(listed) - listed, -1)
        self.postings = np.load(base / "postings.npy", mmap_mode="r")
        self.count = count
        self.long_words = long_words

    def candidates(self, text: str, fold: bool) -> np.ndarray | None:
        """Boolean per page (True: may hold the literal), or None when its words rule out nothing."""
        found = None
        for run in literal_runs(text, fold):
            pages = self._run_pages(run)
            if pages is None:
                continue
            mask = np.zeros(self.count, bool)
            mask[pages] = True
            found = mask if found is None else found & mask
        return None if found is None else found | self.long_words

    def _run_pages(self, run: Run) -> np.ndarray | None:
        """Pages holding a word that can hold `run`, or None (a common word, or too many)."""
        ids = self._matching(run)
        if ids is None:
            return None
        if len(ids) == 0:
            return np.empty(0, np.int64)
        starts = self.start[ids]
        if (starts < 0).any():
            return None
        sizes = self.pages[ids].astype(np.int64)
        if sizes.sum() > MAX_RUN_POSTINGS:
            return None
        return np.concatenate([self.postings[s : s + n] for s, n in zip(starts.tolist(), sizes.tolist())])

    def _matching(self, run: Run) -> np.ndarray | None:
        """Vocabulary positions of the words `run` can lie in (None: cannot tell)."""
        if run.closed_left:  # the word starts with the run: a range of the sorted vocabulary
            vocab = _Sorted(self.words)
            lo = bisect.bisect_left(vocab, run.text)
            if run.closed_right:  # the word is the run
                return np.arange(lo, lo + 1) if lo < len(vocab) and vocab[lo] == run.text else np.empty(0, np.int64)
            after = _after_prefix(run.text)
            return np.arange(lo, len(vocab) if after is None else bisect.bisect_left(vocab, after, lo))
        try:
            pattern = run.text.decode("utf-8")
        except UnicodeDecodeError:  # a lone surrogate in the literal: no text holds it anyway
            return None
        if run.closed_right:
            mask = pc.ends_with(self.words, pattern=pattern)
        else:
            mask = pc.match_substring(self.words, pattern=pattern)
        return np.flatnonzero(mask.to_numpy(zero_copy_only=False))


class _Sorted:
    """The sorted vocabulary as a sequence of bytes, for `bisect`."""

    def __init__(self, words: pa.Array):
        self.words = words

    def __len__(self) -> int:
        return len(self.words)

    def __getitem__(self, i: int) -> bytes:
        return self.words[i].as_py()


def _after_prefix(prefix: bytes) -> bytes | None:
    """The least byte string above every string starting with `prefix` (None: there is none)."""
    trimmed = prefix.rstrip(b"\xff")
    if not trimmed:
        return None
    return trimmed[:-1] + bytes([trimmed[-1] + 1])
