"""A full disk under the recording transport (issue 14): the raw write's OSError reaches the
caller as itself, at once. The SDKs would wrap it as a connection error and our retry would try
again (each retry's request record failing too); the run must stop instead, naming the disk.

Real SDKs against the fake servers, raw records in a DirectorySink on a real 8 MiB tmpfs that
fills up while the server answers (root only, as CI runs)."""

from __future__ import annotations

import errno

import pytest
from tests.conftest import fill_disk
from tests.models.conftest import ask, make_model

from parquet_agent.models import DirectorySink
from parquet_agent.models.fakes import FakeReply


def test_a_full_disk_stops_the_call_instead_of_being_retried(provider, server_for,
                                                               small_tmpfs):
    def fill_then_answer(request):  # the request record is on disk; its response will not fit
        fill_disk(small_tmpfs)
        return FakeReply(text="paid for, but there is no room to record it")

    sink = DirectorySink(small_tmpfs)
    with server_for(fill_then_answer) as server:
        model = make_model(provider, server)
        with pytest.raises(OSError) as err:
            model.complete(ask(), sink)
        assert len(server.model_calls()) == 1
    assert err.value.errno == errno.ENOSPC
