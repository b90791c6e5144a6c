"""memory.frozen_heap: while a run works, garbage collections scan only the objects made during
it (a full collection of a notebook's whole heap took ~75 ms); what existed before is frozen for
the block only and collectable again after it."""

from __future__ import annotations

import gc
import weakref

from parquet_agent.memory import frozen_heap


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cyclic collector frees it


def test_objects_made_before_are_left_alone_and_collectable_again_after():
    before = _Node()
    gone_before = weakref.ref(before)
    with frozen_heap():
        assert gc.get_freeze_count() > 0
        made = _Node()
        gone_made = weakref.ref(made)
        del before, made
        gc.collect()
        assert gone_made() is None  # made inside the block: collected as usual
        assert gone_before() is not None  # frozen: no collection looks at it
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert gone_before() is None  # unfrozen: collected by the next full collection


def test_the_heap_is_unfrozen_when_the_block_raises():
    try:
        with frozen_heap():
            raise ValueError("a run that stopped")
    except ValueError:
        pass
    assert gc.get_freeze_count() == 0
