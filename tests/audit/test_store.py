"""The findings store: the same schema and the same answers embedded (SQLite) and on a real
PostgreSQL server that the test starts itself."""

from __future__ import annotations

import pytest

from parquet_agent.audit import Auditor, FindingsStore
from parquet_agent.audit.planter import plant

from tests.audit.conftest import write_filings
from tests.audit.postgres import start_postgres


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    clean = write_filings(root / "clean")
    plant(clean, root / "dirty", seed=5, rate=0.05)
    store = root / "index.sqlite"
    first = Auditor(store=store).run(clean, run_dir=root / "runs" / "r1", lineage="filings")
    second = Auditor(store=store).run(root / "dirty", run_dir=root / "runs" / "r2", lineage="filings")
    return first, second


def _answers(store: FindingsStore, reports) -> dict:
    for report in reports:
        store.index(report)
        store.index(report)  # idempotent: indexing again replaces the rows
    key = reports[1].findings[0].key
    return {"runs": store.runs("filings"), "findings": store.findings("filings"),
            "observations": store.observations(key), "metrics": store.metrics("char_count"),
            "previous": store.previous_run("filings", exclude="r9"),
            "none": store.previous_run("other")}


def test_embedded_and_postgresql_give_the_same_results(runs, tmp_path):
    with FindingsStore.open(tmp_path / "embedded.sqlite") as embedded:
        expected = _answers(embedded, runs)
    assert [r["run_id"] for r in expected["runs"]] == ["r1", "r2"]
    assert len(expected["findings"]) == len(runs[1].findings) > 0
    assert expected["previous"]["run_id"] == "r2" and expected["none"] is None
    assert {m["metric"] for m in expected["metrics"]} == {"rows", "nulls", "distinct_approx"}
    with start_postgres() as url:
        with FindingsStore.open(url) as server:
            assert server.backend == "postgresql"
            assert _answers(server, runs) == expected
        # an audit can use the server as its store directly (--store postgresql://...)
        report = Auditor(store=url).run(runs[1].run_dir.parent.parent / "dirty",
                                        run_dir=tmp_path / "r3", lineage="filings")
        assert report.previous_run == "r2" and report.diff.unchanged
        with FindingsStore.open(url) as server:
            assert [r["run_id"] for r in server.runs("filings")] == ["r1", "r2", "r3"]


def test_a_bad_store_url_is_a_clear_error():
    with pytest.raises(Exception, match="cannot open the findings store postgresql://\\*\\*\\*@"):
        FindingsStore.open("postgresql://user:secret@127.0.0.1:1/x")
