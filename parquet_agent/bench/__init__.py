"""Benchmark packs: real question sets turned into corpora, questions and configs that line up
with their papers (`financebench`), and the comparison with the papers' published results
(`paper`).

Part of the assembly layer, with the CLI: it may import any piece (corpus importers, the store);
no piece imports it."""
