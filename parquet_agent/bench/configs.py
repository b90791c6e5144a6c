"""Experiment configs mirroring the FinanceBench paper's configurations.

Contract: `write_configs(folder) -> [file names]` writes one TOML per paper mode into `folder`
(the pack's `configs/`; paths inside are relative to it, as the config loader resolves them):

| file | paper mode | corpus the agent may use | new keys (docs/financebench.md) |
|---|---|---|---|
| `closed_book.toml` | closedBook | none: no tools | strategy `"none"` |
| `shared_store.toml` | sharedStore | the whole corpus (question docs + distractors) | none |
| `single_store.toml` | singleStore | the question's own filing | `scope` |
| `oracle.toml` | oracle | only the gold evidence pages | `scope` |

Every config keeps the contract's keys unchanged; the tool-using ones list both strategies. The
models default to the offline baseline with the offline rubric judge, so the pack runs end to end
without keys; each file shows, commented, the paper's GPT-4 Turbo model to put in its place.
`PAPER_MODES` maps our config names to the paper's `eval_mode` values.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PAPER_MODES = {
    "closed_book": "closedBook",
    "shared_store": "sharedStore",
    "single_store": "singleStore",
    "oracle": "oracle",
}



@dataclass(frozen=True)
class _Mode:
    what: str
    corpus: str
    questions: str
    strategies: str  # a TOML array, written as is
    scope: str | None


_MODES: dict[str, _Mode] = {
    "closed_book": _Mode(
        what="closed book (paper: closedBook): the model answers from its own knowledge; no "
        "tools are offered (strategy \"none\")",
        corpus="../corpus", questions="../corpus/questions.jsonl", strategies='["none"]',
        scope=None),
    "shared_store": _Mode(
        what="shared store (paper: sharedStore): every question over the whole corpus (question "
        "documents + same-company distractors of adjacent years)",
        corpus="../corpus", questions="../corpus/questions.jsonl",
        strategies='["sql", "sql+stream"]', scope=None),
    "single_store": _Mode(
        what="single store (paper: singleStore): each question sees only its own filing "
        "(key `scope`)",
        corpus="../corpus", questions="../corpus/questions.jsonl",
        strategies='["sql", "sql+stream"]', scope="../scopes/single_store.json"),
    "oracle": _Mode(
        what="oracle (paper: oracle): each question sees only its gold evidence pages, one row "
        "per page (key `scope`)",
        corpus="../oracle", questions="../oracle/questions.jsonl",
        strategies='["sql", "sql+stream"]', scope="../scopes/oracle.json"),
}

_TEMPLATE = """\
# FinanceBench, {what}.
# Built by `parquet-agent bench financebench`; see docs/financebench.md. Relative paths resolve
# against this file's folder.
name = "financebench-{slug}"
corpus = "{corpus}"
questions = "{questions}"
sample = "all"
strategies = {strategies}
runs_dir = "../runs"
{scope_line}
[[models]]
name = "baseline"
provider = "baseline"                  # offline, deterministic, no key
# The paper's GPT-4 Turbo row (eval_mode {paper}) with your own key: replace the three lines above
# name = "gpt-4-turbo"
# provider = "openai"
# model = "gpt-4-1106-preview"
# api_key_env = "OPENAI_API_KEY"
# temperature = 0.01                   # the paper's setting

[judge]
provider = "rubric"                    # offline; for an LLM judge e.g.:
# provider = "anthropic"
# model = "claude-haiku-4-5"
# api_key_env = "ANTHROPIC_API_KEY"

[limits]
max_tool_calls = 12
max_rounds = 16
case_workers = 4
data_workers = 1
cache = "on"
"""


def render_config(mode: str) -> str:
    m = _MODES[mode]
    scope_line = (
        f'scope = "{m.scope}"   # question_id -> file_stems the tools may see\n'
        if m.scope else ""
    )
    return _TEMPLATE.format(what=m.what, slug=mode.replace("_", "-"), corpus=m.corpus,
                            questions=m.questions, strategies=m.strategies,
                            scope_line=scope_line, paper=PAPER_MODES[mode])


def write_configs(folder: Path) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for mode in _MODES:
        path = folder / f"{mode}.toml"
        path.write_text(render_config(mode), encoding="utf-8")
        names.append(path.name)
    return names
