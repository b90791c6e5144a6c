"""In-memory lookup structures the fork server builds once, before any child is forked.

Why: a child is forked per call, so anything it must load per call costs every call. At full
scale (638,067 rows) reading the index and scanning the header table per call took 40-80 ms;
built once in the server and inherited copy-on-write by every child, a lookup is a binary
search and a header-search page is a few boolean-mask operations over the rows.
Everything here is built from our own sidecar files by trusted code; the untrusted query only
ever becomes dictionary keys and binary-search probes, never code, SQL or a regular expression.

- `RowIndex`: `file_stem -> RowLocation` (file, row group, row, and the data page holding its
  `parsed_md`) from `_index/index.parquet`.
- `HeaderSearch`: every query word must match some field: a prefix of a word of the company
  name (as normalised by the index builder, so "Inc."/"Corp" carry no weight), the form type,
  the CIK (any zero padding), a period or filing-date prefix (YYYY, YYYY-MM, YYYY-MM-DD) or a
  file_stem. Results come in file_stem order with the total count.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from parquet_agent.corpus.headers import normalize_company, normalize_form
from parquet_agent.corpus.index import bisect_sorted

MAX_TERMS = 8
_DATE_PREFIX = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$", re.ASCII)
DISPLAY_COLUMNS = ("file_stem", "company", "form_type", "period", "filing_date", "cik", "file")
HEADER_COLUMNS = (*DISPLAY_COLUMNS, "company_norm", "cik_int")
PAGE_COLUMNS = ("md_page_offset", "md_page_bytes", "md_row_in_page")
INDEX_COLUMNS = ("file_stem", "file", "row_group", "row_in_group", *PAGE_COLUMNS)
_TOP = "\U0010ffff"


class RowLocation(NamedTuple):
    file: str
    row_group: int
    row_in_group: int
    page: tuple[int, int, int] | None  # parsed_md's data page: (offset, bytes, row in page)


class RowIndex:
    def __init__(self, table: pa.Table):
        table = _sorted_by_stem(table.select(list(INDEX_COLUMNS)))
        files = table.column("file").combine_chunks().dictionary_encode()
        self._stems = table.column("file_stem").combine_chunks()
        self._files = files.dictionary.to_pylist()
        self._codes = files.indices.to_numpy(zero_copy_only=False)
        self._groups = table.column("row_group").to_numpy()
        self._rows = table.column("row_in_group").to_numpy()
        # -1 where the row's page is unknown (its column chunk is not readable page by page)
        self._pages = [pc.fill_null(table.column(c), -1).to_numpy() for c in PAGE_COLUMNS]

    def locate(self, file_stem: str) -> RowLocation | None:
        i = bisect_sorted(self._stems, file_stem)
        if i == len(self._stems) or self._stems[i].as_py() != file_stem:
            return None
        offset, size, row = (int(column[i]) for column in self._pages)  # the PAGE_COLUMNS
        page = (offset, size, row)
        return RowLocation(self._files[self._codes[i]], int(self._groups[i]), int(self._rows[i]),
                           page if page[0] >= 0 else None)


def _sorted_by_stem(table: pa.Table) -> pa.Table:
    # The index builder writes both sidecars sorted by file_stem; sort (a full copy) only if not.
    stems = table.column("file_stem")
    if len(stems) < 2 or pc.all(pc.greater_equal(stems[1:], stems[:-1])).as_py():
        return table
    return table.sort_by([("file_stem", "ascending")])


class HeaderSearch:
    def __init__(self, table: pa.Table):
        table = _sorted_by_stem(table.select(list(HEADER_COLUMNS)))
        self.rows = table.num_rows
        display = table.select(list(DISPLAY_COLUMNS))
        # Repeated values as dictionaries: the server holds this for its whole life (full scale:
        # 62 -> ~35 MiB), and the date dictionaries double as the date-prefix index below.
        for name in ("file", "form_type", "company", "period", "filing_date", "cik"):
            i = display.schema.get_field_index(name)
            display = display.set_column(i, name, display.column(name).dictionary_encode())
        # One chunk per column: `take` over the ~40 chunks of a Parquet read cost 12 ms a page.
        self._display = display.combine_chunks()
        self._stems = table.column("file_stem").combine_chunks()
        # Inverted index over company words, with postings laid out in alphabetical word order
        # so that all words sharing a prefix are one contiguous slice.
        lists = pc.split_pattern(pc.fill_null(table.column("company_norm").combine_chunks(), ""), " ")
        words = pc.list_flatten(lists).dictionary_encode()
        rank = np.empty(len(words.dictionary), np.int64)
        rank[pc.array_sort_indices(words.dictionary).to_numpy()] = np.arange(len(words.dictionary))
        word_rank = rank[words.indices.to_numpy()]
        parents = pc.list_parent_indices(lists).to_numpy()
        order = np.lexsort((parents, word_rank))
        self._postings = parents[order].astype(np.int32)
        self._word_starts = np.searchsorted(word_rank[order], np.arange(len(rank) + 1))
        self._words = words.dictionary.take(pc.array_sort_indices(words.dictionary))
        forms = table.column("form_type").combine_chunks().dictionary_encode()
        self._form_codes = forms.indices.to_numpy(zero_copy_only=False)
        self._form_of = {f: i for i, f in enumerate(forms.dictionary.to_pylist())}
        self._ciks = pc.fill_null(table.column("cik_int"), -1).to_numpy()
        # Date prefixes: sorted distinct values (a few thousand) and each row's value code.
        self._dates = []
        for name in ("period", "filing_date"):
            column = self._display.column(name).chunk(0)
            order = pc.array_sort_indices(column.dictionary)
            codes = pc.fill_null(column.indices, -1).to_numpy(zero_copy_only=False)
            self._dates.append((column.dictionary.take(order), order.to_numpy(), codes))

    def _term_mask(self, term: str) -> np.ndarray | None:
        """Rows matching one query word in any field; None when the word carries no information."""
        norm = normalize_company(term)
        is_date = bool(_DATE_PREFIX.match(term))
        digits = term.isascii() and term.isdigit()  # "²".isdigit() is True, but int("²") fails
        if norm is None and not digits and not is_date:
            return None  # "Inc.", "&": legal suffixes are dropped from company_norm as well
        mask = np.zeros(self.rows, dtype=bool)
        if norm:
            company = None
            for word in norm.split()[:MAX_TERMS]:  # "A&B" -> "a and b": every word, as a prefix
                lo, hi = bisect_sorted(self._words, word), bisect_sorted(self._words, word + _TOP)
                hit = np.zeros(self.rows, dtype=bool)
                hit[self._postings[self._word_starts[lo] : self._word_starts[hi]]] = True
                company = hit if company is None else company & hit
            mask |= company
        form = normalize_form(term)
        if form in self._form_of:
            mask |= self._form_codes == self._form_of[form]
        if digits and len(term) <= 18:
            mask |= self._ciks == int(term)
        if is_date:
            for values, order, codes in self._dates:
                hit = np.zeros(len(values) + 1, dtype=bool)  # the extra last slot is "null" (-1)
                hit[order[bisect_sorted(values, term) : bisect_sorted(values, term + _TOP)]] = True
                mask |= hit[codes]
        lo, hi = bisect_sorted(self._stems, term), bisect_sorted(self._stems, term, right=True)
        mask[lo:hi] = True
        return mask

    def search(self, query: str, page: int, page_size: int,
               allowed: list[str] | None = None) -> tuple[int, list[dict]]:
        """(total matches, the page's rows as dicts); `allowed` limits rows to those file_stems."""
        matched = None
        for term in query.split()[:MAX_TERMS]:
            mask = self._term_mask(term)
            if mask is not None:
                matched = mask if matched is None else matched & mask
        if allowed is not None:
            scope = np.zeros(self.rows, dtype=bool)
            for stem in allowed:
                lo, hi = bisect_sorted(self._stems, stem), bisect_sorted(self._stems, stem, right=True)
                scope[lo:hi] = True
            matched = scope if matched is None else matched & scope
        if matched is None:
            total, rows = self.rows, np.arange((page - 1) * page_size, min(self.rows, page * page_size))
        else:
            ids = np.flatnonzero(matched)
            total, rows = len(ids), ids[(page - 1) * page_size : page * page_size]
        if len(rows) == 0:
            return int(total), []
        return int(total), self._display.take(pa.array(rows, pa.int64())).to_pylist()
