"""The recording transport and the sink: order of writes, credentials, metadata GETs."""

from __future__ import annotations

import json
import threading

import pytest
from tests.models.conftest import CANARY, ask, make_model, all_bytes

from parquet_agent.models import DirectorySink
from parquet_agent.models.fakes import FakeReply, echo_key, http_error, openai_server


def test_sink_writes_atomically_and_never_overwrites(tmp_path):
    sink = DirectorySink(tmp_path)
    a = sink.write("Q1/turn-01.attempt-01.request.json", b"one")
    assert a == "raw/Q1/turn-01.attempt-01.request.json"
    assert sink.write("Q1/turn-01.attempt-01.request.json", b"one") == a  # same bytes: same file
    b = sink.write("Q1/turn-01.attempt-01.request.json", b"two")  # a resumed run reuses a label
    assert b == "raw/Q1/turn-01.attempt-01.request~2.json"
    assert (tmp_path / a).read_bytes() == b"one" and (tmp_path / b).read_bytes() == b"two"
    assert sink.write("../../etc/passwd", b"x") == "raw/etc/passwd"  # cannot escape the folder
    assert not [p for p in tmp_path.rglob("*.tmp")]


def test_request_is_on_disk_before_the_server_sees_it(provider, server_for, sink, tmp_path):
    seen = []

    def script(req):
        seen.append(sorted(p.name for p in tmp_path.rglob("*.json")))
        return FakeReply(text="ok")

    with server_for(script) as server:
        result = make_model(provider, server).complete(ask(label="L"), sink)
    assert seen == [["L.attempt-01.request.json"]]  # the response is not there yet
    assert (tmp_path / result.attempts[0].response_path).is_file()


@pytest.mark.parametrize("status", [200, 401])
def test_no_credential_byte_reaches_disk(status, provider, server_for, tmp_path):
    """The canary key is sent (the server got it) but never written: headers, URL, echoed body."""
    sink = DirectorySink(tmp_path)
    script = [echo_key(status), FakeReply(text="fine")] if status == 200 else [echo_key(401)]
    with server_for(script) as server:
        model = make_model(provider, server)
        try:
            result = model.complete(ask(), sink)
            assert "[REDACTED-CREDENTIAL]" in result.reply.text  # the SDK parsed the scrubbed body
        except Exception as exc:  # 401 fails fast, with the key out of the message too
            assert CANARY not in str(exc)
        got = server.requests[0]
        assert CANARY in json.dumps(got.headers) + got.path  # the key was really used
        model.list_models(sink)
    files = all_bytes(tmp_path)
    assert len(files) >= 4
    for path, data in files:
        assert CANARY.encode() not in data, f"credential written to {path}"
        assert CANARY[8:24].encode() not in data, f"part of the credential written to {path}"
    req = json.loads(next(d for p, d in files if p.name.endswith("attempt-01.request.json")))
    redacted = {k.lower(): v for k, v in req["headers"]}
    assert any(redacted.get(h) == "[REDACTED-CREDENTIAL]"
               for h in ("authorization", "x-api-key", "x-goog-api-key"))


def test_metadata_gets_are_recorded_apart(provider, server_for, sink, tmp_path):
    with server_for([FakeReply(text="ok")]) as server:
        model = make_model(provider, server)
        ids = model.list_models(sink)
        model.complete(ask(label="Q9/turn-01"), sink)
    assert any("fake-model" in i for i in ids)
    meta = sorted(p.relative_to(tmp_path).as_posix() for p in (tmp_path / "raw/meta").rglob("*"))
    assert len(meta) == 2 and all(m.startswith("raw/meta/models.") for m in meta)
    record = json.loads((tmp_path / meta[0]).read_text())
    assert record["method"] == "GET"
    assert (tmp_path / "raw/Q9/turn-01.attempt-01.request.json").is_file()


def test_concurrent_calls_record_into_their_own_exchange(tmp_path):
    """One model (one transport) shared by threads, as the runner's case workers do."""
    sink = DirectorySink(tmp_path)
    with openai_server(lambda req: FakeReply(text=req.json["messages"][0]["content"])) as server:
        model = make_model("openai", server)
        results = {}

        def run(i):
            results[i] = model.complete(ask(text=f"q{i}", label=f"Q{i}/turn-01"), sink)

        threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for i, r in results.items():
        assert r.reply.text == f"q{i}"
        body = json.loads((tmp_path / r.attempts[0].response_path).read_text())["body"]
        assert f'"content": "q{i}"' in body


def test_request_outside_an_exchange_is_refused(tmp_path):
    with openai_server([http_error(500)]) as server:
        model = make_model("openai", server)
        with pytest.raises(Exception) as info:
            model.client.chat.completions.create(model="x", messages=[])
        assert len(server.requests) == 0
    assert "outside a recorded exchange" in repr(info.value.__cause__ or info.value) or \
        "outside a recorded exchange" in str(info.value.__context__)
