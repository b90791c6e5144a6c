"""Property: with the skipping index, every whole-corpus query returns exactly what the scan does.

Real workers over a small real corpus (real SEC filing text from the real-data folder when present,
else the synthetic tools corpus text, plus rows of awkward Unicode, `%`, `_` and backslashes):
hundreds of random literals (from the text and not in it, case variants, non-ASCII, LIKE
wildcards and escapes) in random query shapes, each run through a `Tools` that prunes and one
with `skip_index=False`; outputs must be equal row for row, and pruning must really happen.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import pyarrow as pa
import pytest

from parquet_agent.corpus.index import build_index
from parquet_agent.corpus.layout import LayoutWriter
from parquet_agent.corpus.skipindex import build_skip_index
from parquet_agent.tools import Tools
from tests.tools.conftest import filing
from tests.realdata import realdata

REALDATA = realdata("financebench/docs_md")
LITERALS = 240
AWKWARD = [
    "İstanbul İSTANBUL istanbul", "Kelvin: 300 \u212a and 300 K", "ſtraße STRASSE", "DIYARBAKIR dıyarbakır",
    "Growth of 100% (a_b_c) \\n not a newline \\\\ two", "Café CAFÉ café", "emoji 📈 up 12.5 %",
    "Ǆ ǅ ǆ title case", "ΣΊΣΥΦΟΣ σίσυφος", "tab\there, quote ' and \"", "under_score and per%cent",
    # only the non-ASCII spelling is in the text: DuckDB's lower('İZMİR') is 'izmir', RE2 folds
    # the Kelvin sign to 'k' and 'ſ' to 's' (a summary of ASCII-folded bytes alone would miss them)
    "Port of İZMİR, Türkiye", "cooled to 300 KELVIN here", "the ſtrasse ſtreet",
    # words, not grams, rule pages out for these (corpus/skipwords.py): whole and partial words,
    # figures, case variants, a non-ASCII letter glued to a word
    "Calancor Corporation paid $1,234,567.89 in cash", "XCalancor Corporations", "CALANCOR corporation",
    "Çalancor Corporation", "Zentrix İNDUSTRIES",
]
# ASCII spellings that match those rows only through Unicode case mapping
TWINS = ["izmir", "port of izmir", "300 kelvin", "KELVIN here", "strasse", "the strasse street",
         "zentrix industries"]
# literals whose words are rarer than their grams, in every shape
NAMES = ["Calancor Corporation", "alancor Corp", "calancor corporation", "1,234,567", "34,567.8",
         "$1,234,5", "Corporation paid", "lancor Corporations"]


def _texts() -> list[str]:
    if REALDATA.is_dir():
        docs = [p.read_text(encoding="utf-8") for p in sorted(REALDATA.glob("*.md"))[:6]]
        chunks = [doc[i : i + 5000] for doc in docs for i in range(0, min(len(doc), 75_000), 5000)]
    else:
        chunks = [filing(i)["parsed_md"] for i in range(60)]
    rng = random.Random(7)
    for awkward in AWKWARD:  # awkward text inside ordinary rows
        k = rng.randrange(len(chunks))
        chunks[k] = chunks[k][:2000] + "\n" + awkward + "\n" + chunks[k][2000:]
    return chunks + AWKWARD


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("skip") / "corpus"
    folder.mkdir()
    texts = _texts()
    for month in (1, 2):
        rows = [
            {"accession": str(1000 + i), "file_stem": f"{1000 + i:010d}-25-{i:06d}", "year": 2025,
             "month": month, "parsed_md": t, "char_count": len(t),
             "md5": hashlib.md5(t.encode()).hexdigest(), "has_ocr": i % 7 == 0, "source_format": "html"}
            for i, t in enumerate(texts) if i % 2 == month - 1
        ]
        with LayoutWriter(folder / f"2025-{month:02d}.parquet", row_group_text_bytes=12_000) as out:
            out.write(pa.Table.from_pylist(rows))
    build_index(folder)
    build_skip_index(folder)
    return folder


def _q(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _regex_escape(text: str) -> str:
    return "".join("\\" + c if c in "\\.^$|?*+()[]{}" else c for c in text)


def _like_escape(text: str) -> str:
    return text.replace("!", "!!").replace("%", "!%").replace("_", "!_")


SHAPES = [
    lambda a, b: f"SELECT file_stem FROM filings WHERE contains(parsed_md, {_q(a)}) ORDER BY file_stem",
    lambda a, b: f"SELECT count(*) FROM filings WHERE parsed_md ILIKE {_q('%' + a + '%')}",
    lambda a, b: f"SELECT file_stem, char_count FROM filings WHERE parsed_md LIKE {_q('%' + a + '%')} LIMIT 7",
    lambda a, b: f"SELECT count(*) FROM filings WHERE parsed_md LIKE {_q('%' + _like_escape(a) + '%')} ESCAPE '!'",
    lambda a, b: (f"SELECT month, count(*), sum(char_count) FROM filings WHERE "
                  f"regexp_matches(parsed_md, {_q(_regex_escape(a))}, 'i') GROUP BY month ORDER BY month"),
    lambda a, b: (f"SELECT file_stem FROM filings WHERE starts_with(parsed_md, {_q(a)}) "
                  f"OR contains(lower(parsed_md), {_q(b.lower())}) ORDER BY file_stem"),
    lambda a, b: (f"SELECT count(*), min(file_stem) FROM filings WHERE contains(parsed_md, {_q(a)}) "
                  f"AND parsed_md ILIKE {_q('%' + b + '%')} AND char_count > 10"),
    lambda a, b: (f"SELECT file_stem, substr(parsed_md, 1, 30) FROM filings WHERE parsed_md ILIKE "
                  f"{_q('%' + a.replace(' ', '_') + '%')} ORDER BY char_count DESC, file_stem LIMIT 3"),
    lambda a, b: f"SELECT count(*) FROM filings WHERE regexp_matches(parsed_md, {_q(_regex_escape(a))})",
    lambda a, b: (f"SELECT has_ocr, count(*) FROM filings WHERE contains(parsed_md, {_q(a)}) "
                  f"OR contains(parsed_md, {_q(b)}) GROUP BY ALL ORDER BY ALL"),
    lambda a, b: (f"SELECT file_stem FROM filings WHERE contains(lower(substr(parsed_md, 1900, 400)), "
                  f"{_q(a.lower())}) ORDER BY 1"),
]


def _literals(texts: list[str], count: int, rng: random.Random) -> list[str]:
    out = []
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 %_\\'.,$-()İıſ\u212aßéÉΣσ📈"
    for n in range(count):
        kind = n % 7
        if kind in (0, 1, 2):  # a piece of the corpus text
            t = rng.choice(texts)
            length = rng.choice([1, 2, 3, 4, 5, 7, 10, 14, 20, 30])
            i = rng.randrange(max(1, len(t) - length))
            lit = t[i : i + length]
            lit = [lit, lit.upper(), lit.swapcase()][kind]
        elif kind == 3:  # random characters: almost never in the text
            lit = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
        elif kind == 4:  # an awkward row's word, case-changed, or an ASCII twin of one
            word = rng.choice(" ".join(AWKWARD).split())
            lit = rng.choice([word, word.upper(), word.lower(), word.casefold(), rng.choice(TWINS)])
        elif kind == 6:  # one to three whole words, as a name or phrase is written
            words = rng.choice(texts).split()
            i = rng.randrange(max(1, len(words) - 3))
            lit = " ".join(words[i : i + rng.randint(1, 3)])
            lit = rng.choice([lit, lit.upper(), lit.lower()])
        else:  # a corpus word with a wildcard or an escape character inside
            t = rng.choice(texts)
            i = rng.randrange(max(1, len(t) - 12))
            lit = t[i : i + 12]
            j = rng.randrange(len(lit) + 1)
            lit = lit[:j] + rng.choice(["%", "_", "\\", "!", "%%", "_x"]) + lit[j:]
        out.append(lit or "x")
    return out


def test_pruned_queries_equal_scans_row_for_row(corpus):
    rng = random.Random(20261201)
    texts = _texts()
    literals = _literals(texts, LITERALS, rng)
    queries = [SHAPES[n % len(SHAPES)](lit, literals[(n * 7 + 3) % len(literals)])
               for n, lit in enumerate(literals)]
    # every ASCII twin in every case-insensitive shape (ILIKE, regexp 'i', lower(...))
    queries += [SHAPES[k](twin, twin) for twin in TWINS for k in (1, 4, 7, 10)]
    queries += [shape(name, name) for name in NAMES for shape in SHAPES]
    pruned = used = 0
    with Tools.open(corpus, "sql", cache="off") as skip, \
            Tools.open(corpus, "sql", cache="off", skip_index=False) as scan:
        assert skip.skip_status == "ok"
        for query in queries:
            a, b = skip.call("sql", query=query), scan.call("sql", query=query)
            assert (a.ok, a.output, a.error) == (b.ok, b.output, b.error), query
            assert b.skip_index == {"used": False, "reason": "disabled (skip_index = false)",
                                    "pages_total": 0, "pages_read": 0, "pages_skipped": 0}
            if a.skip_index["used"]:
                used += 1
                pruned += a.skip_index["pages_skipped"] > 0
        # a name in four rows (planted inside two texts and as two rows of their own, once inside
        # longer words) is read from their pages only
        name = skip.call("sql", query=SHAPES[0]("Calancor Corporation", ""))
        assert name.output["row_count"] == 4, (name.output, name.error)
        assert name.skip_index["used"] and name.skip_index["pages_read"] <= 5
    # the property is not vacuous: many queries were answered from candidate pages only
    assert used > LITERALS // 4
    assert pruned > LITERALS // 5


def test_every_query_runs_without_a_skipping_index_and_says_so(tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    rows = [filing(i) for i in range(10)]
    with LayoutWriter(folder / "2025-01.parquet", row_group_text_bytes=8_000) as out:
        out.write(pa.Table.from_pylist(rows))
    build_index(folder)  # a corpus indexed before the skipping index existed
    query = "SELECT count(*) FROM filings WHERE contains(parsed_md, 'END OF FILING 3')"
    with Tools.open(folder, "sql", cache="off") as tools:
        assert tools.skip_status.startswith("missing: build it with `parquet-agent corpus index")
        result = tools.call("sql", query=query)
        assert result.output["rows"] == [[1]]
        assert result.skip_index["used"] is False and result.skip_index["reason"].startswith("missing")
    build_skip_index(folder)
    with Tools.open(folder, "sql", cache="off") as tools:
        result = tools.call("sql", query=query)
        assert result.output["rows"] == [[1]] and result.skip_index["used"] is True
    # the corpus changes after the skipping index was built: stale, scans, still right
    rows = [filing(i) for i in range(10, 14)]
    with LayoutWriter(folder / "2025-02.parquet", row_group_text_bytes=8_000) as out:
        out.write(pa.Table.from_pylist(rows))
    build_index(folder)
    with Tools.open(folder, "sql", cache="off") as tools:
        assert tools.skip_status.startswith("stale: ")
        result = tools.call("sql", query="SELECT count(*) FROM filings WHERE contains(parsed_md, 'END OF FILING 1')")
        assert result.output["rows"] == [[5]]
        assert result.skip_index["used"] is False and result.skip_index["reason"].startswith("stale")


def test_row_groups_not_readable_by_page_are_always_read(tmp_path):
    import pyarrow.parquet as pq

    from parquet_agent.corpus.schema import CORPUS_SCHEMA

    folder = tmp_path / "corpus"
    folder.mkdir()
    with LayoutWriter(folder / "2025-01.parquet", row_group_text_bytes=4_000) as out:
        out.write(pa.Table.from_pylist([filing(i) for i in range(0, 40, 2)]))
    # a file written by another tool: dictionary-encoded Markdown, one row group
    pq.write_table(pa.Table.from_pylist([filing(i) for i in range(1, 40, 2)], CORPUS_SCHEMA),
                   folder / "2025-02.parquet", use_dictionary=True)
    build_index(folder)
    build_skip_index(folder)
    queries = [f"SELECT file_stem FROM filings WHERE contains(parsed_md, 'END OF FILING {i}\n') ORDER BY 1"
               for i in (4, 5, 38, 39)]
    with Tools.open(folder, "sql", cache="off") as skip, \
            Tools.open(folder, "sql", cache="off", skip_index=False) as scan:
        for query in queries:
            a, b = skip.call("sql", query=query), scan.call("sql", query=query)
            assert a.output == b.output and a.output["row_count"] == 1
            assert a.skip_index["used"] is True and 0 < a.skip_index["pages_read"] < a.skip_index["pages_total"]
