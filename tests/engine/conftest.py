"""Fixtures of the Ray tests (marker `ray`), one of each per test module: a local two-node
cluster (head `node-0`, `node-1`; token auth, tests/engine/ray_cluster.py) this process drives,
and the harness corpus its nodes read. Ray is imported only when a Ray test asks for them."""

from __future__ import annotations

import pytest

from tests.harness_corpus import make_harness_corpus


@pytest.fixture(scope="module")
def cluster():
    from tests.engine.ray_cluster import LocalRayCluster

    with LocalRayCluster(2, names=["node-0", "node-1"]) as c, c.as_driver():
        yield c


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_harness_corpus(tmp_path_factory.mktemp("ray-corpus") / "corpus")
