"""The audit's judge costs and tokens (issue 25 item 6): a real audit of a Parquet folder, the
auditor and its judge evaluator official-SDK clients of fake OpenAI servers.

Before: a gate evaluation by an unpriced judge said `cost_usd: 0.0`; findings.json's `tokens`
left the judge's tokens out; a failed audit's findings.json said `cost_usd: 0.0` where its
failed calls' cost is unknown (an incomplete one says null)."""

from __future__ import annotations

import json

from parquet_agent.audit import AuditConfig, Auditor
from parquet_agent.models import ModelSpec, build_model
from parquet_agent.models.fakes import FakeReply, http_error, openai_server
from tests.audit.conftest import filings_dir  # noqa: F401  (fixture)
from tests.audit.test_guarantees import _baseline_over_http

KEY = "sk-fake-audit-key-0000"
RUN_GATE_ONLY = AuditConfig(gates={"action": ("rules",), "finding": ("rules",),
                                   "run": ("rules", "judge")})


def _model(server, name: str, **fields):
    return build_model(ModelSpec(name=name, provider="openai", model="gpt-4o-mini",
                                 api_key_env="KEY", base_url=server.url + "/v1", timeout_s=20.0,
                                 **fields), env={"KEY": KEY})


def test_an_unpriced_judge_makes_the_audit_cost_unknown_and_its_tokens_count(filings_dir,
                                                                             tmp_path):
    verdict = FakeReply(text='{"verdict": "PASS", "critique": "coverage as stated"}',
                        input_tokens=300, output_tokens=20)
    with openai_server(_baseline_over_http) as auditor, openai_server(lambda r: verdict) as judge:
        report = Auditor(RUN_GATE_ONLY, model=_model(auditor, "gpt", price="list"),
                         judge=_model(judge, "local-judge")).run(filings_dir,
                                                                 run_dir=tmp_path / "run")
    judged = [e for e in report.evaluations if e.evaluator == "judge"]
    assert judged and all(e.usage is not None and e.usage["cost_usd"] is None for e in judged)
    model_tokens = sum((s.usage["input_tokens"] or 0) + (s.usage["output_tokens"] or 0)
                       for s in report.steps if s.usage is not None)
    findings = json.loads((tmp_path / "run" / "findings.json").read_text())
    assert findings["tokens"] == model_tokens + 320 * len(judged)
    assert findings["cost_usd"] is None


def test_a_failed_audit_has_unknown_cost_not_zero(filings_dir, tmp_path):
    with openai_server(lambda r: http_error(500)) as auditor:
        report = Auditor(model=_model(auditor, "gpt", price="list", max_attempts=2)).run(
            filings_dir, run_dir=tmp_path / "run")
    assert report.status == "failed"
    findings = json.loads((tmp_path / "run" / "findings.json").read_text())
    assert findings["status"] == "failed" and findings["cost_usd"] is None
