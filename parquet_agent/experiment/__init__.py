"""The first job: grids of questions x answer models x retrieval strategies, judged.

- `experiment.config`: `ExperimentConfig`, the TOML file validated;
- `experiment.inputs`: the questions, corpus snapshot and prompts a run is frozen on;
- `experiment.runner`: `Experiment` (create or resume a run, run its cases on an engine);
- `experiment.watch`, `experiment.progress`: the live progress line and its forecast;
- `experiment.estimate`: the cost and time forecast before a run.

May import every layer up to the engine and report. Public names are imported on first use.
"""

from parquet_agent.lazy import lazy_names

__all__ = ["Experiment", "ExperimentConfig"]
__getattr__, __dir__ = lazy_names(__name__, {
    "Experiment": "parquet_agent.experiment.runner",
    "ExperimentConfig": "parquet_agent.experiment.config"})
