"""Every injected fault, for every provider, through the real SDK: our retry decides, every
attempt leaves its raw files, and the SDK itself never retries."""

from __future__ import annotations

import json

import pytest
from tests.models.conftest import FAST, ask, make_model

from parquet_agent.errors import ModelCallError
from parquet_agent.models import RetryPolicy
from parquet_agent.models.fakes import DROP, EMPTY, MALFORMED, FakeReply, http_error, slow

RETRYABLE = {
    "429": (http_error(429), 429),
    "500": (http_error(500), 500),
    "529": (http_error(529), 529),
    "drop": (DROP, None),
    "malformed": (MALFORMED, 200),
    "empty": (EMPTY, 200),
    "slow": (slow(60.0), None),  # far past SLOW_TIMEOUT_S: a timeout however loaded the machine
}
# The client timeout for the "slow" fault. The retry's reply must arrive within it too, so it is
# no sub-second figure (the 0.3 s used before timed out the *successful* retry under load);
# every other fault keeps make_model's 5 s.
SLOW_TIMEOUT_S = 2.0


@pytest.mark.parametrize("fault", sorted(RETRYABLE))
def test_retryable_fault_then_success(fault, provider, server_for, sink, tmp_path):
    item, status = RETRYABLE[fault]
    with server_for([item, FakeReply(text="recovered")]) as server:
        timeout = {"timeout_s": SLOW_TIMEOUT_S} if fault == "slow" else {}
        model = make_model(provider, server, **timeout)
        result = model.complete(ask(), sink)
        assert len(server.model_calls()) == 2  # one per attempt: the SDK did not retry
    assert result.reply.text == "recovered"
    first, second = result.attempts
    assert first.outcome == "retry" and second.outcome == "ok"
    assert first.http_status == status
    assert first.error and first.number == 1 and second.number == 2
    assert first.request_path.endswith("attempt-01.request.json")
    assert second.request_path.endswith("attempt-02.request.json")
    # the failed attempt's raw files exist; a dropped/timed-out one records the failure itself
    resp = json.loads((tmp_path / first.response_path).read_text())
    if status is None:
        assert resp["status"] is None and resp["error_kind"] in ("network", "timeout")
    else:
        assert resp["status"] == status
    if fault == "empty":
        assert first.usage.input_tokens == 5  # tokens a malformed reply cost are kept
    if fault in ("malformed",):
        assert resp["body"].startswith('{"id": "broken"')  # written before the SDK choked on it


def test_retry_after_is_honoured_with_a_cap(provider, server_for, sink):
    policy = RetryPolicy(max_attempts=2, base_delay_s=0.001, retry_after_cap_s=0.3)
    with server_for([http_error(429, retry_after="30"), FakeReply(text="ok")]) as server:
        result = make_model(provider, server, retry=policy).complete(ask(), sink)
    # waited the cap (0.3 s), not the 30 s asked: the upper bound leaves room for a loaded
    # machine's late wake-up and still tells the two apart
    assert 290 <= result.attempts[1].queue_ms <= 5000


def test_an_unreadable_retry_after_is_no_hint_not_a_crash(provider, server_for, sink):
    with server_for([http_error(429, retry_after="soon"), FakeReply(text="ok")]) as server:
        result = make_model(provider, server, retry=FAST).complete(ask(), sink)
    assert result.reply.text == "ok" and [a.http_status for a in result.attempts] == [429, 200]


@pytest.mark.parametrize("status", [400, 401, 404])
def test_client_error_fails_fast(status, provider, server_for, sink):
    with server_for([http_error(status), FakeReply(text="never sent")]) as server:
        with pytest.raises(ModelCallError) as info:
            make_model(provider, server).complete(ask(), sink)
        assert len(server.model_calls()) == 1
    err = info.value
    assert not err.retryable and len(err.attempts) == 1
    assert err.attempts[0].outcome == "failed" and err.attempts[0].http_status == status
    assert "not retryable" in str(err) and "raw response" in str(err)


def test_exhausted_attempts_keep_every_attempt(provider, server_for, sink, tmp_path):
    with server_for([http_error(500)] * FAST.max_attempts) as server:
        with pytest.raises(ModelCallError) as info:
            make_model(provider, server).complete(ask(), sink)
    err = info.value
    assert err.retryable
    assert [a.outcome for a in err.attempts] == ["retry"] * (FAST.max_attempts - 1) + ["failed"]
    for a in err.attempts:
        assert (tmp_path / a.request_path).is_file() and (tmp_path / a.response_path).is_file()
