"""A recorded response that no journal line claims answers the identical request again, for every
provider's SDK, without a call (issue 18): the path a resumed case takes for a response that was
durable before its case stopped but never journaled. A different request is sent as usual.

Real SDKs against the fake servers, a real run raw store, `store.unclaimed` finding the record."""

from __future__ import annotations

from tests.models.conftest import ask, make_model

from parquet_agent.models.fakes import FakeReply
from parquet_agent.models.http_model import REPLAYED_NOTE
from parquet_agent.models.transport import ReplaySink
from parquet_agent.store.blobs import RawStore
from parquet_agent.store.unclaimed import unclaimed_exchanges
from parquet_agent.transcript import Event, ModelAttempt

CASE = "Q001__m__sql"


def test_an_unclaimed_response_is_replayed_once_and_only_for_the_same_request(
        provider, server_for, tmp_path):
    raw = RawStore(tmp_path)
    with server_for([FakeReply(text="first answer"), FakeReply(text="second answer")]) as server:
        model = make_model(provider, server)
        paid = model.complete(ask(), raw)
        recorded = unclaimed_exchanges(raw, CASE, events=())
        assert len(recorded) == 1
        sink = ReplaySink(raw, recorded)
        again = model.complete(ask(), sink)
        assert len(server.model_calls()) == 1  # answered from the record
        other = model.complete(ask("Something else?"), sink)
        assert len(server.model_calls()) == 2  # a different body is sent
    assert again.reply.text == paid.reply.text == "first answer"
    assert other.reply.text == "second answer"
    (first,), (replayed,) = paid.attempts, again.attempts
    assert replayed.response_path == first.response_path
    assert replayed.usage == first.usage and replayed.cost == first.cost
    assert REPLAYED_NOTE in replayed.notes and REPLAYED_NOTE not in first.notes
    # responses claimed by journaled attempts are left alone
    claimed = [Event(at="", seq=n, payload=ModelAttempt(label=a.label, attempt=a))
               for n, a in enumerate((first, *other.attempts))]
    assert unclaimed_exchanges(raw, CASE, claimed) == {}
    raw.close()
