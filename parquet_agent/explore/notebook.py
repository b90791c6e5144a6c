"""Helpers that keep the notebooks in `notebooks/` thin: paths, parameter overrides, run lookup.

    path = find_path("configs/demo.toml")      # cwd first, then its parent (a kernel started in
                                               #   notebooks/ and papermill run from the repo
                                               #   root both find the repo's configs/)
    config = notebook_config(path, sample_n=10, seed=3, strategies=["sql"], models=["baseline"])
    ensure_corpus(config)                      # builds the bundled sample if it is the one missing
    latest_runs("runs", 2)                     # newest run folders first (by manifest created_at)
    output_path("runs/audit-notebook")         # where a notebook writes a relative path: the
                                               #   repo root, also from a kernel in notebooks/
    find_dataset("data/sample")                # find_path; the bundled sample built if missing

Overrides follow the notebook parameters of `run_experiment.ipynb`; `None` keeps the config's
value. Paths given as overrides resolve against the current folder. Errors are `UsageError` /
`ConfigError` naming the parameter and what to pass instead.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from parquet_agent.errors import UsageError
from parquet_agent.experiment.config import ExperimentConfig


def find_path(path: str | Path, *, what: str = "path") -> Path:
    """`path` if absolute, else the first of cwd/path and cwd/../path that exists."""
    p = Path(path).expanduser()
    if p.is_absolute():
        if not p.exists():
            raise UsageError(f"{what} {p} does not exist")
        return p
    tried = [Path.cwd() / p, Path.cwd().parent / p]
    for candidate in tried:
        if candidate.exists():
            return candidate.resolve()
    raise UsageError(f"{what} {str(path)!r} not found (looked in {tried[0].parent} and "
                     f"{tried[1].parent}); pass an absolute path or run from the repo root")


def output_path(path: str | Path) -> Path:
    """Where a notebook writes `path`: as given when absolute, else under the current folder,
    or under its parent when the current folder is `notebooks/` (JupyterLab starts a kernel in
    the notebook's folder, papermill in the caller's), so the defaults land in the repo's
    `runs/` and `data/`, never in a stray `notebooks/runs/`."""
    p = Path(path).expanduser()
    if p.is_absolute():
        return p
    base = Path.cwd()
    return (base.parent if base.name == "notebooks" else base) / p


def find_dataset(dataset: str | Path) -> Path:
    """`find_path(dataset)`; a missing relative `.../sample` folder is the bundled sample,
    built at `output_path(dataset)` (as `run_experiment.ipynb` builds it)."""
    try:
        return find_path(dataset, what="dataset")
    except UsageError:
        if Path(dataset).is_absolute() or Path(dataset).name != "sample":
            raise
    from parquet_agent.corpus.sample import ensure_sample

    return ensure_sample(output_path(dataset))


def notebook_config(config_path: str | Path, *, sample_n: int | None = None,
                    seed: int | None = None, ids: Sequence[str] | None = None,
                    models: Sequence[str | dict] | None = None,
                    strategies: Sequence[str] | None = None, cache_policy: str | None = None,
                    corpus: str | Path | None = None, questions: str | Path | None = None,
                    runs_dir: str | Path | None = None, name: str | None = None
                    ) -> ExperimentConfig:
    """The config at `config_path` with the notebook's overrides applied (None = keep).

    `models`: names of the config's models to keep, or full `[[models]]` tables (dicts) to use
    instead. `sample_n` with `seed` (default 7) or `ids` replace the sample. `corpus` also moves
    `questions` to `<corpus>/questions.jsonl` unless `questions` is given."""
    path = find_path(config_path, what="config")
    config = ExperimentConfig.from_toml(path)
    data = config.to_dict()
    if name is not None:
        data["name"] = name
    if corpus is not None:
        data["corpus"] = str(Path(corpus).resolve())
        if questions is None:
            data["questions"] = str(Path(corpus).resolve() / "questions.jsonl")
    if questions is not None:
        data["questions"] = str(Path(questions).resolve())
    if runs_dir is not None:
        data["runs_dir"] = str(Path(runs_dir).resolve())
    if ids is not None and sample_n is not None:
        raise UsageError("give sample_n (with seed) or ids, not both")
    if ids is not None:
        data["sample"] = {"ids": list(ids)}
    elif sample_n is not None:
        data["sample"] = {"n": int(sample_n), "seed": 7 if seed is None else int(seed)}
    elif seed is not None:
        current = data["sample"]
        if not (isinstance(current, dict) and "n" in current):
            raise UsageError(f"seed={seed} needs sample_n: the config samples {current!r}")
        data["sample"] = {"n": current["n"], "seed": int(seed)}
    if strategies is not None:
        data["strategies"] = list(strategies)
    if models is not None:
        data["models"] = _models(data["models"], models)
    if cache_policy is not None:
        if cache_policy not in ("on", "off"):
            raise UsageError(f"cache_policy must be 'on' or 'off', got {cache_policy!r}")
        data["limits"] = {**data["limits"], "cache": cache_policy}
    return ExperimentConfig.from_dict(data, base_dir=path.parent, source=path.name)


def _models(configured: list[dict], wanted: Sequence[str | dict]) -> list[dict]:
    if isinstance(wanted, (str, dict)):
        wanted = [wanted]
    by_name = {m["name"]: m for m in configured}
    out = []
    for item in wanted:
        if isinstance(item, dict):
            out.append(dict(item))
        elif item in by_name:
            out.append(by_name[item])
        else:
            raise UsageError(f"models: {item!r} is not a model of the config (it has "
                             f"{', '.join(sorted(by_name))}); pass one of those names or a full "
                             "model table as a dict")
    return out


def ensure_corpus(config: ExperimentConfig) -> Path:
    """Build the bundled sample corpus when the config points at a missing `.../sample` folder;
    UsageError for any other missing corpus (say how to build one)."""
    folder = Path(config.corpus)
    if (folder / "questions.jsonl").exists() or any(folder.glob("*.parquet")):
        return folder
    if folder.name == "sample":
        from parquet_agent.corpus.sample import ensure_sample

        return ensure_sample(folder)
    raise UsageError(f"corpus {folder} is missing; build one with `parquet-agent corpus build "
                     f"--rows 2000 --out {folder}` or point the notebook's `corpus` at one")


def latest_runs(runs_dir: str | Path, n: int = 1, *, kind: str = "experiment") -> list[Path]:
    """The `n` newest run folders of `kind` in `runs_dir` (by the manifest's `created_at`),
    newest first: an audit folder beside the experiments is never "the newest experiment"."""
    folder = find_path(runs_dir, what="runs folder")
    found = []
    for child in folder.iterdir():
        manifest = child / "manifest.json"
        if child.is_dir() and manifest.is_file():
            try:
                data = json.loads(manifest.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(data, dict) and data.get("kind", "experiment") == kind:
                found.append((data.get("created_at") or "", child.name, child))
    found.sort(reverse=True)
    if len(found) < n:
        raise UsageError(f"{folder} holds {len(found)} {kind} run folder(s), {n} needed; run "
                         "notebooks/run_experiment.ipynb first or pass the run folders")
    return [p for _, _, p in found[:n]]


def resolve_run(run_dir: str | Path | None, runs_dir: str | Path, *, newest: int = 0) -> Path:
    """`run_dir` when given (found like `find_path`), else the `newest`-th latest run."""
    if run_dir is not None:
        return find_path(run_dir, what="run folder")
    return latest_runs(runs_dir, newest + 1)[newest]


def describe(config: ExperimentConfig) -> dict[str, Any]:
    """The few config facts a notebook prints before running."""
    return {"name": config.name, "corpus": str(config.corpus),
            "sample": config.sample.to_json(), "strategies": list(config.strategies),
            "models": [f"{m.name} ({m.provider}/{m.model})" for m in config.models],
            "judge": f"{config.judge.provider}/{config.judge.model}",
            "cache": config.limits.cache, "runs_dir": str(config.runs_dir)}
