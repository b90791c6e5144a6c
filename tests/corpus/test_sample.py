"""The bundled sample as the demo and the notebooks build it: indexed and with its skipping
index, as `corpus build` gives, so the README's tool commands over it read the skipping index
(they said "missing: build it with ... --skip-only")."""

from __future__ import annotations

from parquet_agent.corpus.sample import ensure_sample
from parquet_agent.corpus.skipindex import skip_index_exists
from parquet_agent.tools import Tools


def test_the_sample_is_built_with_its_skipping_index(tmp_path):
    folder = ensure_sample(tmp_path / "sample")
    assert skip_index_exists(folder)
    with Tools.open(folder, "sql+stream") as tools:
        result = tools.call("sql", query="SELECT count(*) FROM filings "
                                         "WHERE parsed_md ILIKE '%GF Technologies%'")
    skip = result.skip_index
    assert result.ok and skip is not None and skip["pages_total"] > 0, skip  # consulted
    assert not skip["reason"].startswith("missing"), skip
    assert ensure_sample(folder) == folder  # there already: nothing rebuilt
