"""Unknown cost is never shown as 0 (issue 25 item 6): a grid whose model has no price (a local
server, not the vendor's endpoint, no `price` declared) over the harness corpus.

Before: the progress line said "$0.0000 so far" when no case's cost was known, and report.html's
"known USD" column said 0.0000 for 2 cases of 2 with unknown cost."""

from __future__ import annotations

import re

import pytest

from parquet_agent.experiment.runner import Experiment
from parquet_agent.models.fakes.llama_cpp import LlamaCpp, llama_cpp_server
from parquet_agent.experiment.progress import Progress
from tests.harness_corpus import make_harness_corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_harness_corpus(tmp_path_factory.mktemp("unknown-cost") / "corpus")


def test_a_grid_of_unknown_cost_shows_unknown_not_zero(corpus, tmp_path, capsys):
    with llama_cpp_server(LlamaCpp(text="Revenue was $812 million.")) as server:
        path = tmp_path / "exp.toml"
        path.write_text(f"""
name = "unpriced"
corpus = "{corpus}"
questions = "{corpus / 'questions.jsonl'}"
sample = {{ n = 2, seed = 1 }}
strategies = ["sql"]
runs_dir = "{tmp_path / 'runs'}"
[[models]]
name = "local"
provider = "openai"
model = "gpt-4o-mini"
base_url = "{server.url}/v1"
api_key_env = "LOCAL_KEY"
max_tokens_field = "max_tokens"
[judge]
provider = "rubric"
""")
        run = Experiment.from_toml(path, env={"LOCAL_KEY": "k"}, progress=True).run()
    progress = capsys.readouterr().err
    assert "2/2 cases, cost unknown so far" in progress and "$0.0000" not in progress
    cases = run.cases_df()
    assert cases["cost_usd"].isna().all() and (cases["cost_unknown_attempts"] > 0).all()
    html = (run.dir / "report.html").read_text()
    table = html[html.index('<table id="summary">'):].split("</table>")[0]
    cells = re.findall(r"<td>(.*?)</td>", table)
    known_usd = cells[13]  # the "known USD" column
    assert known_usd == "—" and cells[14] == "2"


def test_the_progress_line_sums_known_costs_only():
    progress = Progress(total=4, enabled=False)
    progress.update(None)
    assert progress.text().startswith("1/4 cases, cost unknown so far")
    progress.update(0.25)
    text = progress.text()
    assert "$0.2500 so far" in text and "1 with unknown cost" in text
    assert "forecast $0.7500" in text  # 0.25 per known case, two cases to go
