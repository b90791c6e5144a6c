"""The bundled sample corpus: 2,000 synthetic filings (seed 0) with questions and an index.

`ensure_sample(folder)` builds and indexes it into `folder` unless it is already there; the
demo (`parquet-agent demo`) and the notebooks (a config whose corpus is a missing `.../sample`
folder) both call it.
"""

from __future__ import annotations

from pathlib import Path

SAMPLE_ROWS = 2000
SAMPLE_SEED = 0


def ensure_sample(folder: Path) -> Path:
    """Build and index the bundled sample corpus into `folder` unless it is already there, with
    its sidecar index and its data-skipping index, as `corpus build` gives."""
    if (folder / "questions.jsonl").exists() and (folder / "_index" / "index.json").exists():
        return folder
    from parquet_agent.corpus.index import build_index
    from parquet_agent.corpus.manifest import read_corpus_manifest
    from parquet_agent.corpus.skipindex import build_skip_index
    from parquet_agent.corpus.synthetic import build_corpus

    print(f"building the sample corpus ({SAMPLE_ROWS} filings) in {folder} ...", flush=True)
    result = build_corpus(folder, rows=SAMPLE_ROWS, seed=SAMPLE_SEED)
    print(result.summary(), flush=True)
    snapshot = read_corpus_manifest(folder).snapshot  # hashed once
    build_index(folder, snapshot=snapshot)
    build_skip_index(folder, snapshot=snapshot)
    return folder
