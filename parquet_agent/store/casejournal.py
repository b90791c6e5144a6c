"""A case's journal as a `Run` hands it out: what it does beyond `store.journal.Journal`.

    journal = run.journal(case_id)           # CaseJournal
    journal.append(payload) -> Event         # .append_many([...]): one fdatasync for several
    event = resolve_offloaded(event, raw)    # an offloaded tool text read back (Run.case_events)

Two things: a `ToolCallEvent` whose `model_text` + `output` exceed `OFFLOAD_CHARS` is stored as
a raw body (`<case>/turn-NN.tool-<call>.json`, compressed against the requests that repeat
it) and the event keeps its path in `offloaded`; and after a `CaseFinished` the journal is
sealed (gzip), the run journal having first recorded the case's line count and chain head
(`CaseSealed`), which `Run.verify` checks both ways (`store.integrity`); anything appended to a
finished case later (a batch judgment) is recorded and sealed again, so the record covers every
line. `resolve_offloaded` undoes the offloading when reading.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from parquet_agent.store.blobs import RawStore
from parquet_agent.store.journal import RUN_JOURNAL, Journal
from parquet_agent.transcript import (
    CaseFinished,
    CaseSealed,
    CaseStarted,
    Event,
    ToolCallEvent,
)

OFFLOAD_CHARS = 1024  # tool texts longer than this go to the raw store


def check_case_id(case_id: str) -> None:
    """ValueError unless `case_id` can name a journal file (and a raw folder)."""
    if not case_id or "/" in case_id or "\\" in case_id or case_id.startswith((".", "_")):
        raise ValueError(f"bad case id {case_id!r}: no slashes, no leading '.' or '_'")


class CaseJournal:
    """The journal of one case (or the run's own, `RUN_JOURNAL`): `append(payload) -> Event`.
    `raw` is the run's raw store (for offloaded texts); `run_journal` gives the run journal
    that records a sealed case's chain head."""

    def __init__(self, case_id: str, journal: Journal, raw: Callable[[], RawStore],
                 run_journal: Callable[[], CaseJournal]):
        self.case_id, self.journal = case_id, journal
        self._raw, self._run_journal = raw, run_journal
        self.path = journal.path

    def append(self, payload: Any) -> Event:
        return self.append_many([payload])[0]

    def append_many(self, payloads: list[Any]) -> list[Event]:
        """Append events with one durable write (see `Journal.append_many`)."""
        payloads = [self._offload(p) for p in payloads]
        restarts = any(isinstance(p, CaseStarted) for p in payloads)  # a retried case
        # an append to a finished case that does not start it again (a batch judgment)
        again = self.journal.was_sealed and not restarts
        events = self.journal.append_many(payloads)
        if restarts:
            self.journal.was_sealed = False
        if self.case_id != RUN_JOURNAL and (
                again or any(isinstance(p, CaseFinished) for p in payloads)):
            # the run journal commits to the case's final chain before the journal is sealed:
            # a crash between the two leaves a plain journal, which a resume commits to; a
            # sealed one without its commitment is never ours (store.integrity)
            self._run_journal().append(CaseSealed(self.case_id, self.journal.lines,
                                                  self.journal.head))
            self.journal.seal()
        return events

    def _offload(self, payload: Any) -> Any:
        if not isinstance(payload, ToolCallEvent) or payload.offloaded is not None:
            return payload
        text = len(payload.model_text or "")
        if text <= OFFLOAD_CHARS:  # measure the output only when the text alone does not decide
            output = ("" if payload.output is None
                      else json.dumps(payload.output, ensure_ascii=False))
            if text + len(output) <= OFFLOAD_CHARS:
                return payload
        body = json.dumps({"schema_version": 1, "model_text": payload.model_text,
                           "output": payload.output}, ensure_ascii=False).encode()
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", payload.call_id)[:80] or "call"
        path = self._raw().write(f"{self.case_id}/turn-{payload.turn:02d}.tool-{safe}.json", body)
        return replace(payload, model_text=None, output=None, offloaded=path)

    def close(self) -> None:
        self.journal.close()


def resolve_offloaded(event: Event, raw: RawStore) -> Event:
    """`event` with an offloaded tool text read back from the raw store."""
    p = event.payload
    if not isinstance(p, ToolCallEvent) or not p.offloaded:
        return event
    stored = json.loads(raw.read(p.offloaded))
    return replace(event, payload=replace(p, model_text=stored["model_text"],
                                          output=stored["output"]))
