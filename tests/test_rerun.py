"""Rerun what failed (issue 19, finding 4): `run --resume --retry-failed` runs the failed cases
again and keeps their earlier attempts; a resume allows config changes that cannot change
results (a base_url port, the display name, case_workers) and records them; one that can (model,
judge, tools) is refused, naming it. Real CLI, real run folders, the OpenAI SDK against the fake
server on 127.0.0.1."""

from __future__ import annotations

import pytest

from parquet_agent.errors import ResumeRefusedError, UsageError
from parquet_agent.experiment.runner import Experiment
from parquet_agent.explore.runs import RunStore
from parquet_agent.models.fakes import http_error, openai_server
from tests.test_experiment import _answer_script
from tests.test_run_failures import _cli, _config, corpus  # noqa: F401 - the fixture

ENV = {"FAKE_OPENAI_KEY": "sk-test"}


def _bad_request_after_health(request):
    if b"Reply with the single word" in request.body:
        return _answer_script(request)
    return http_error(400)  # not retryable: each case finishes `failed`


def test_retry_failed_reruns_failed_cases_and_keeps_their_earlier_attempts(corpus, tmp_path):
    run_dir = tmp_path / "runs" / "r"
    with openai_server(_bad_request_after_health) as server:
        config = _config(tmp_path, corpus, server.url)
        first = _cli("run", str(config), "--run-dir", str(run_dir), "--quiet")
    assert first.returncode == 1
    # a 400 is about the request, not the server: no breaker, every case finishes failed
    assert "6 x failed: model call failed" in first.stderr and "400" in first.stderr
    assert "could not reach its server" not in first.stderr
    assert f"--run-dir {run_dir} --resume --retry-failed" in first.stderr
    with openai_server(_answer_script) as server:  # fixed, and on another port
        config = _config(tmp_path, corpus, server.url)
        plain = _cli("run", str(config), "--run-dir", str(run_dir), "--quiet", "--resume")
        assert plain.returncode == 1 and "6 x failed" in plain.stderr  # failed stays final
        assert len(server.model_calls()) == 0
        again = _cli("run", str(config), "--run-dir", str(run_dir), "--quiet", "--resume",
                     "--retry-failed")
        assert again.returncode == 0, again.stderr
        assert len(server.model_calls()) == 1 + 6 * 2
    run = RunStore(run_dir.parent).open(run_dir)
    cases = run.cases_df()
    assert set(cases["status"]) == {"complete"} and cases["scored"].all()
    ledger = run.ledger()
    answers = ledger[ledger["purpose"].isin(["answer"]) | (ledger["category"] == "retries")]
    assert (answers["outcome"] == "failed").sum() == 6  # the 400s are still there
    assert (ledger["outcome"] == "ok").sum() >= 12
    started = [e.data for e in run.run_events() if e.event == "run_started"]
    assert [s["retry_failed"] for s in started] == [False, False, True]
    assert len(started[2]["allowed_changes"]) == 1
    assert started[2]["allowed_changes"][0].startswith("config.models[0].base_url:")


def test_retry_failed_needs_resume(corpus, tmp_path):
    with pytest.raises(UsageError, match="--resume"):
        Experiment.from_toml(_config(tmp_path, corpus, "http://127.0.0.1:9"), env=ENV,
                             progress=False).run(tmp_path / "r", retry_failed=True)


@pytest.mark.parametrize("edit, named", [
    (('model = "gpt-fake"', 'model = "gpt-other"'), "config.models[0].model: 'gpt-fake' -> "
                                                    "'gpt-other'"),
    (('provider = "rubric"', 'provider = "rubric"\nname = "judge-2"'), "config.judge.name"),
    (('strategies = ["sql", "sql+stream"]', 'strategies = ["sql"]'), "config.strategies"),
    (('base_url = "http://127.0.0.1', 'base_url = "http://localhost'), "base_url"),
])
def test_a_resume_refuses_changes_that_can_change_results(corpus, tmp_path, edit, named):
    with openai_server(_answer_script) as server:
        config = _config(tmp_path, corpus, server.url)
        Experiment.from_toml(config, env=ENV, progress=False).run(tmp_path / "runs" / "r")
        config.write_text(config.read_text().replace(*edit))
        with pytest.raises(ResumeRefusedError, match=named.replace("[", r"\[").replace(
                "]", r"\]").replace("(", r"\(")):
            Experiment.from_toml(config, env=ENV, progress=False).run(
                tmp_path / "runs" / "r", resume=True)


def test_a_resume_allows_and_records_the_display_name_and_worker_counts(corpus, tmp_path):
    with openai_server(_answer_script) as server:
        config = _config(tmp_path, corpus, server.url)
        Experiment.from_toml(config, env=ENV, progress=False).run(tmp_path / "runs" / "r")
        config.write_text(config.read_text().replace('name = "fake"', 'name = "renamed"', 1)
                          .replace("case_workers = 1", "case_workers = 3"))
        run = Experiment.from_toml(config, env=ENV, progress=False).run(
            tmp_path / "runs" / "r", resume=True)
    started = [e.data for e in run.run_events() if e.event == "run_started"][-1]
    assert started["allowed_changes"] == ["config.limits.case_workers: 1 -> 3",
                                          "config.name: 'fake' -> 'renamed'"]
    assert run.manifest["config"]["name"] == "fake"  # the manifest stays as frozen
