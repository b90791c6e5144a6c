"""Error messages read as sentences (issue 25 item 8): a network error whose own text ends in a
full stop ("Server disconnected without sending a response.") used to end in "..".
Every provider, through its official SDK, against a fake server that drops the connection."""

from __future__ import annotations

import pytest

from parquet_agent.errors import ModelCallError
from parquet_agent.models.fakes import DROP
from tests.models.conftest import ask, make_model


def test_a_dropped_connection_is_said_in_one_sentence(server_for, provider, sink):
    with server_for([DROP, DROP, DROP]) as server:
        model = make_model(provider, server)
        with pytest.raises(ModelCallError) as info:
            model.complete(ask(), sink)
    text = str(info.value)
    assert "Server disconnected without sending a response." in text
    assert ".." not in text
