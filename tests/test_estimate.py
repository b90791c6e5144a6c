"""Costs that never lie (issue 19, finding 5): an estimate before the run (a range from cases,
turns, prompt and tool-output sizes, priced), unknown where no price is known, checked against
the actual cost afterwards; unknown cost shown as "unknown" in the CLI summary, never 0."""

from __future__ import annotations

import re
from dataclasses import replace

import pandas as pd
import pytest

from parquet_agent.experiment.estimate import case_tokens, check_text, estimate_config, total
from parquet_agent.cli.experiment import demo_config, summary_text
from parquet_agent.experiment.config import load_config
from parquet_agent.models.fakes import openai_server
from parquet_agent.store.readable import cost_text
from tests.test_experiment import _answer_script
from tests.test_run_failures import _cli, _config, corpus  # noqa: F401 - the fixture


def test_case_tokens_grow_with_the_square_of_the_turns():
    one = case_tokens(4000, 1, 1000, 100)
    assert one == (1000, 100)
    four = case_tokens(4000, 4, 1000, 100)
    # 4 prompts + 6 exchanges of (1000 + 200 chars)/4 tokens + 100 output tokens each
    assert four == (4 * 1000 + 6 * (300 + 100), 400)


def test_estimate_is_a_priced_range_free_offline_and_unknown_without_a_price(corpus, tmp_path):
    offline = estimate_config(demo_config(corpus, tmp_path))
    assert [e.usd for e in offline] == [(0.0, 0.0), (0.0, 0.0)]
    assert offline[0].cases == 6 and offline[0].turns == (2, 13)
    config = load_config(_config(tmp_path, corpus, "http://127.0.0.1:9"))
    unknown = estimate_config(config)
    assert unknown[0].usd is None and total(unknown) is None
    # a fake at 127.0.0.1 is not the vendor's endpoint: priced only with price = "list"
    assert estimate_config(replace(config, models=(replace(
        config.models[0], model="gpt-4o-mini"),)))[0].usd is None
    priced = estimate_config(replace(config, models=(replace(config.models[0],
                                                             model="gpt-4o-mini",
                                                             price="list"),)))
    low, high = priced[0].usd
    assert 0 < low < high and priced[0].price.startswith("price table")
    assert priced[0].input_tokens[0] < priced[0].input_tokens[1]
    assert check_text(priced, (low + high) / 2).startswith("actual cost $")
    assert "within the estimate" in check_text(priced, (low + high) / 2)
    assert "above the estimate" in check_text(priced, high * 2)
    assert "unknown for 3 attempts" in check_text(priced, 0.1, unknown_attempts=3)


def test_run_prints_the_estimate_first_and_checks_the_actual_cost_after(corpus, tmp_path):
    with openai_server(_answer_script) as server:
        config = _config(tmp_path, corpus, server.url)
        config.write_text(config.read_text().replace('model = "gpt-fake"',
                                                     'model = "gpt-4o-mini"\nprice = "list"'))
        proc = _cli("run", str(config), "--run-dir", str(tmp_path / "runs" / "r"))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("estimated cost before the run")
    match = re.search(r"total: \$(\d+\.\d+) – \$(\d+\.\d+)", out)
    assert match and 0 < float(match[1]) < float(match[2])
    # afterwards: the actual cost (the gateway's 0.0005 per answer + the table's price of the
    # tool turns) placed against the range, in words that match the numbers
    check = re.search(r"actual cost \$(\d+\.\d+): (within|below|above) the estimate "
                      r"\$(\d+\.\d+) – \$(\d+\.\d+)", out)
    assert check, out
    actual, low, high = float(check[1]), float(check[3]), float(check[4])
    assert actual >= 6 * 0.0005
    assert check[2] == ("within" if low <= actual <= high else
                        "below" if actual < low else "above")


def test_unknown_cost_is_unknown_in_the_cli_summary_never_zero():
    # Run.summary()'s columns: summary.json's by_model_strategy figures, flattened
    summary = pd.DataFrame([{
        "model": "local", "strategy": "sql", "cases": 2, "complete": 2, "correctness": 50.0,
        "correctness_low": 0.0, "correctness_high": 100.0, "citation_support": float("nan"),
        "citation_support_low": float("nan"), "citation_support_high": float("nan"),
        "processed": 2, "cost_usd_known": 0.0, "cases_with_unknown_cost": 2,
        "latency_p50_ms": 12.0}])
    text = summary_text(summary)
    cost_column = text.splitlines()[1].split()[-2]  # the row's cost, before p50 ms
    assert cost_column == "unknown", text
    assert cost_text(0.0, 4) == "unknown"
    assert cost_text(0.5, 0) == "$0.5000"
    assert cost_text(0.5, 1) == "≥ $0.5000 (1 attempt of unknown cost)"
    assert cost_text(float("nan"), 0) == "unknown"


def test_a_batch_judge_is_estimated_at_the_batch_price(corpus, tmp_path):
    from parquet_agent.models.spec import ModelSpec

    config = load_config(_config(tmp_path, corpus, "http://127.0.0.1:9"))
    judge = ModelSpec(name="j", provider="openai", model="gpt-4o-mini", api_key_env="K")
    one = estimate_config(replace(config, judge=judge))[-1]
    batch = estimate_config(replace(config, judge=replace(judge, batch=True)))[-1]
    assert batch.usd[0] == pytest.approx(one.usd[0] * 0.5) and batch.usd[0] > 0
    assert batch.usd[1] == pytest.approx(one.usd[1] * 0.5)
    assert "batch price 0.5 x list" in batch.price and "batch" not in one.price
