"""The corpus: Parquet filings, their snapshot, sidecar index and questions.

Owns the corpus schema (`schema`), snapshots (`snapshot`), the tool-ready layout (`prepare`,
`layout`, `pages`), the sidecar index and header parsing (`index`, `headers`), question sets
(`questions`), the synthetic corpus and the bundled sample (`synthetic`, `sample`), importers
of real filings (`importer`) and `verify`.
May import: the shared layer (`errors`, `files`, `checks`, `stats`, `progress`). Nothing above.
"""
