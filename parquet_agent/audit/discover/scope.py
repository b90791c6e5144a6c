"""The tables of a dataset, as discovery sees them: one `Table` per table of the dataset model
(`audit.dataset.Dataset.tables`), read through its view. A one-table dataset is read through its
alias `data`, so the findings of a one-table dataset keep the keys they had before tables."""

from __future__ import annotations

from parquet_agent.audit.dataset import ALIAS, FILINGS_KEYS, Dataset
from parquet_agent.audit.discover.base import Table, kind_of


def tables_of(dataset: Dataset) -> list[Table]:
    return [Table(ALIAS if dataset.single else t.name,
                  tuple((c.name, kind_of(c.arrow or c.type)) for c in t.columns if not c.nested),
                  t.rows, FILINGS_KEYS if t.is_filings else ())
            for t in dataset.tables]
