"""The price table prices a vendor's own endpoint only (issue 25 item 5).

Before: a llama.cpp server on 127.0.0.1 answering as `gpt-4o-mini` (it echoes the requested
name) was billed from the table: `cost $0.000037 (price_table)` for a free local model."""

from __future__ import annotations

import logging

import pytest

from parquet_agent.experiment.estimate import estimate_config
from parquet_agent.experiment.config import load_config
from parquet_agent.models.fakes.llama_cpp import LlamaCpp, llama_cpp_server
from parquet_agent.models.prices import table_applies
from tests.models.conftest import ask, make_model


def test_a_local_server_answering_as_a_vendor_model_is_not_priced_from_the_table(sink, caplog):
    with llama_cpp_server(LlamaCpp()) as server, caplog.at_level(logging.WARNING):
        model = make_model("openai", server, model="gpt-4o-mini", price=None)
        first = model.complete(ask(label="Q1/turn-01", tools=()), sink)
        second = model.complete(ask(label="Q1/turn-02", tools=()), sink)
        url = server.url
    assert first.reply.model == "gpt-4o-mini"  # the echoed name the table would have matched
    for result in (first, second):
        cost = result.attempts[-1].cost
        assert cost.usd is None and cost.source == "unknown"
        assert "not the vendor's endpoint" in cost.note and url in cost.note
    warnings = [r for r in caplog.records if "cost unknown" in r.getMessage()]
    assert len(warnings) == 1  # said once per model, not once per call
    assert "price" in warnings[0].getMessage()


@pytest.mark.parametrize("price,source,usd", [("list", "price_table", True),
                                              ("free", "declared", False)])
def test_a_declared_price_prices_it(sink, price, source, usd):
    with llama_cpp_server(LlamaCpp()) as server:
        model = make_model("openai", server, model="gpt-4o-mini", price=price)
        cost = model.complete(ask(tools=()), sink).attempts[-1].cost
    assert cost.source == source and (cost.usd > 0 if usd else cost.usd == 0.0)


@pytest.mark.parametrize("base_url,price,applies", [
    (None, None, True),
    ("https://api.openai.com/v1", None, True),
    ("https://us-central1-aiplatform.googleapis.com", None, True),
    ("https://openrouter.ai/api/v1", None, True),
    ("http://127.0.0.1:8080/v1", None, False),
    ("http://localhost:11434/v1", None, False),
    ("https://llm-proxy.example.com/v1", None, False),
    ("https://llm-proxy.example.com/v1", "list", True),
    ("https://api.openai.com.evil.example/v1", None, False),
])
def test_which_endpoints_the_table_prices(base_url, price, applies):
    assert table_applies(base_url, price) is applies


def test_the_estimate_does_not_price_a_local_server_either(tmp_path):
    (tmp_path / "q.jsonl").write_text('{"question_id": "Q1", "question": "What?"}\n')
    path = tmp_path / "c.toml"
    path.write_text(f"""
name = "e"
corpus = "{tmp_path}"
questions = "{tmp_path / 'q.jsonl'}"
strategies = ["sql"]
[[models]]
name = "local"
provider = "openai"
model = "gpt-4o-mini"
base_url = "http://127.0.0.1:8080/v1"
api_key_env = "K"
[judge]
provider = "rubric"
""")
    (local, _judge) = estimate_config(load_config(path), ("Q1",), {"Q1": "What?"})
    assert local.usd is None and "not the vendor's endpoint" in local.price
