"""The tables of a dataset, as discovery sees them.

Until the dataset model names its tables, files whose schemas agree are partitions of one table
(read through the union view `data`), and a folder of files with different schemas is one table
per file (its `f_<stem>` view).
"""

from __future__ import annotations

from parquet_agent.audit.dataset import Dataset, view_name
from parquet_agent.audit.discover.base import Table, kind_of


def tables_of(dataset: Dataset) -> list[Table]:
    files = dataset.snapshot.files
    schemas = {tuple(f.schema) for f in files}
    if len(schemas) <= 1:
        return [Table("data", tuple((n, kind_of(t)) for n, t in dataset.columns),
                      dataset.snapshot.rows)]
    return [Table(view_name(f.name), tuple((n, kind_of(t)) for n, t in f.schema), f.rows)
            for f in files]
