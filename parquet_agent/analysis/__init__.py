"""Analysis: functions over a run's typed fold, nothing written back but derived exports.

- `analysis.fold`: journals -> case views and run figures (the one fold);
- `analysis.frames`, `analysis.tables`: DataFrames and summary; their Parquet/CSV files;
- `analysis.compare`: two runs paired by case id; `analysis.agreement`, `analysis.judge_stats`:
  judge-vs-judge, repeats and checks; `analysis.status`: the runs listing; `analysis.stats`:
  seeded bootstrap intervals and percentiles.

May import: shared, corpus, models, tools, transcript, store. Nothing above.
"""
