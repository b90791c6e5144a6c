"""The audit tools in the real sandboxed workers, over any Parquet folder."""

from __future__ import annotations

from parquet_agent.audit.dataset import Dataset
from parquet_agent.audit.tools import AuditTools


def test_tools_over_the_filings_corpus(filings_dir):
    dataset = Dataset.open(filings_dir)
    assert dataset.is_filings and dataset.table_names == ("filings",)
    assert set(dataset.views()) == {"filings", "data", "f_2025_01", "f_2025_02", "f_2025_03"}
    with AuditTools.open(dataset) as tools:
        sample = tools.schema_sample(3)
        assert sample.ok and len(sample.output["sample"]["rows"]) == 3
        assert sample.output["columns"][0]["meaning"]  # column meanings given for filings
        stats = tools.get_stats("char_count")
        assert stats.ok and stats.output["rows"] == 120 and stats.output["nulls"] == 0
        assert [f["rows"] for f in stats.output["per_file"]] == [40, 40, 40]
        assert len(stats.output["values"]["quantiles"]) == 5
        text = tools.get_stats("parsed_md").output
        assert text["values"]["min_length"] > 1000 and text["values"]["empty"] == 0
        one = tools.run_query("SELECT count(*) AS n, min(_row) AS r FROM f_2025_02")
        assert one.ok and one.output["rows"] == [[40, 0]]
        # failures are values: the SQL gate refuses writes; unknown columns are a validation error
        refused = tools.run_query("COPY (SELECT 1) TO '/tmp/x.csv'")
        assert not refused.ok and refused.error.kind == "forbidden"
        bad = tools.get_stats("nope")
        assert not bad.ok and bad.error.kind == "validation"
        broken = tools.run_query("SELECT no_such_column FROM data")
        assert not broken.ok and broken.error.kind == "sql"
        outside = tools.run_query("SELECT * FROM read_parquet('/etc/passwd')")
        assert not outside.ok and outside.error.kind in ("forbidden", "sql")


def test_tools_over_any_schema(orders_dir):
    dataset = Dataset.open(orders_dir, lineage="orders")
    assert not dataset.is_filings and dataset.column_names == ("order_id", "customer", "amount", "sku")
    with AuditTools.open(dataset) as tools:
        stats = tools.get_stats("amount")
        assert stats.ok and stats.output["nulls"] == 1
        assert {f["_file"]: f["nulls"] for f in stats.output["per_file"]} == {
            "orders-0.parquet": 0, "orders-1.parquet": 1}
        value, result = tools.scalar("SELECT count(*) FROM data WHERE order_id IN "
                                     "(SELECT order_id FROM data GROUP BY 1 HAVING count(*) > 1)")
        assert result.ok and value == 2
