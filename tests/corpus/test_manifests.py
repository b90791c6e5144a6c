"""data_manifest/: the reference corpus's expected shape and the bundled sample's manifest,
checked against a real build of the sample (built once per module: ~5 s)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import duckdb
import pytest

from parquet_agent.corpus.index import CorpusIndex, build_index
from parquet_agent.corpus.verify import verify

MANIFESTS = Path(__file__).resolve().parents[2] / "data_manifest"
GIB = 1024**3


def test_reference_manifest_is_consistent():
    ref = json.loads((MANIFESTS / "reference-2025h1.json").read_text())
    assert ref["schema_version"] == 1 and ref["kind"] == "expected-shape"
    assert ref["totals"] == {"files": 6, "rows": 638067, "bytes": 6914044276}
    assert sum(f["rows"] for f in ref["files"]) == ref["totals"]["rows"]
    assert [f["month"] for f in ref["files"]] == [1, 2, 3, 4, 5, 6]
    rounded = sum(f["gib"] for f in ref["files"])
    assert abs(rounded - ref["totals"]["bytes"] / GIB) <= 6 * ref["tolerances"]["gib"]


def test_reference_manifest_names_every_difference(make_corpus):
    folder = make_corpus(rows=30, months=(1, 2))
    report = verify(folder, MANIFESTS / "reference-2025h1.json")
    text = "\n".join(report.differences)
    assert "2025-01 (2025-01.parquet): rows 15, manifest says 90,711" in text
    assert "GiB, manifest says 0.813 GiB (±0.0005, rounded)" in text
    for month in (3, 4, 5, 6):
        assert f"2025-{month:02d}: missing (the manifest lists it)" in text
    assert "total: 2 files, manifest says 6" in text and "total: rows 30, manifest says 638,067" in text


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    from parquet_agent.corpus.synthetic import build_corpus

    out = tmp_path_factory.mktemp("sample") / "sample"
    build_corpus(out, rows=2000, seed=0)
    build_index(out)
    return out


def test_sample_matches_its_manifest(sample):
    report = verify(sample, MANIFESTS / "sample-2000-seed0.json", require_tool_ready=True)
    assert report.ok, (
        report.describe() + "\nIf the generator changed on purpose, regenerate the manifest: "
        ".venv/bin/python bench/sample_corpus_manifest.py"
    )


def test_index_over_the_sample_equals_a_full_scan(sample):
    index = CorpusIndex.open(sample)
    con = duckdb.connect()
    stems = [s for (s,) in con.execute(f"SELECT file_stem FROM '{sample}/*.parquet'").fetchall()]
    for stem in random.Random(7).sample(stems, 30):
        cur = con.execute(f"SELECT * FROM '{sample}/*.parquet' WHERE file_stem = ?", [stem])
        names = [d[0] for d in cur.description]
        (row,) = cur.fetchall()
        assert index.read_row(stem) == dict(zip(names, row))


def test_sample_headers_are_parsed(sample):
    con = duckdb.connect()
    path = sample / "_index" / "headers.parquet"
    total, company, form = con.execute(
        f"SELECT count(*), count(company), count(form_type) FROM '{path}'"
    ).fetchone()
    assert total == 2000 and company >= 0.98 * total and form >= 0.98 * total
    # where an SGML header gives the conformed name, the cover's name is the same company
    # (SGML rows are read from the header: checks the header beats the cover)
    mismatched = con.execute(
        f"SELECT count(*) FROM '{path}' WHERE starts_with(header, '<SEC-DOCUMENT>') "
        "AND company <> upper(company)"
    ).fetchone()[0]
    assert mismatched == 0


def test_readme_examples_return_results_on_the_bundled_sample(sample):
    """Issue 19 finding 6: every tool example in README.md, run on the sample the demo builds
    (2,000 rows, seed 0), finds something; the question count the README gives is the real one."""
    import re
    import shlex

    from parquet_agent.tools import Tools

    readme = (MANIFESTS.parent / "README.md").read_text(encoding="utf-8")
    calls = []
    for line in readme.splitlines():
        if line.startswith("parquet-agent tool data/sample ") and "--args" in line:
            words = shlex.split(line.split("#")[0])
            calls.append((words[3], json.loads(words[words.index("--args") + 1])))
    python = re.findall(r'tools\.call\("(\w+)", (.+)\)\n', readme)
    for name, kwargs in python:
        calls.append((name, eval(f"dict({kwargs})")))  # noqa: S307 - our own README
    assert len(calls) >= 3
    with Tools.open(sample, "sql+stream") as tools:
        for name, args in calls:
            result = tools.call(name, **args)
            assert result.ok, (name, args, result.error)
            out = result.output
            found = (out.get("total") or out.get("row_count") or out.get("matches_total")
                     or len(out.get("text") or ""))
            assert found, (name, args, out)
    questions = sum(1 for _ in open(sample / "questions.jsonl", encoding="utf-8"))
    assert f"with {questions} questions" in readme
