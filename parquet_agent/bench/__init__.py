"""Benchmark packs: real question sets turned into corpora, questions and configs that line up
with their papers (`financebench`), and the comparison with the papers' published results
(`paper`)."""
