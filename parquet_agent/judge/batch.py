"""Batch judging: every pending judge request of a run through the judge model's batch API, at
the provider's batch price, with the same judgments `Judge.judge` gives one at a time.

    verdicts, pending = judge_in_batches(judge, {"Q1__m__sql/judge": inp, ...}, sink, ledger)

Round 1 sends every first request in one batch (`models.batch.run_batch`: input file in raw/
before upload, each poll and result file recorded, resume by batch id from the ledger). A
judgment that does not parse gets its repair request (the same as `Judge.judge` sends) in the
next round's batch, up to `judge.max_attempts` rounds; still malformed after that, it is a
verdict unscored with the reason. Requests the batch did not answer (errored, expired,
cancelled, still running) are returned in `pending` with the reason: no verdict is invented,
and judging them again later sends only them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from parquet_agent.judge.checks import deterministic_checks
from parquet_agent.judge.core import Judge, Verdict, repair_turn
from parquet_agent.judge.judgment import JudgeInput, parse_reply
from parquet_agent.models.batch import (
    BatchLedger,
    Polling,
    batch_api,
    batch_groups,
    run_batch,
)
from parquet_agent.models.protocol import Attempt, ModelRequest, RawSink


def judge_in_batches(judge: Judge, inputs: Mapping[str, JudgeInput], sink: RawSink,
                     ledger: BatchLedger, *, polling: Polling = Polling(),
                     name: str = "judge") -> tuple[dict[str, Verdict], dict[str, str]]:
    """(verdicts by label, pending: label -> why not judged). Labels are the judge labels
    (`<case-id>/judge`), as `Judge.judge` takes them. Requests an earlier call put into a
    batch that is still worth polling go back into exactly that batch (`batch_groups`), so a
    resume, even one with more requests than before, never pays for them twice."""
    api = batch_api(judge.model)
    verdicts: dict[str, Verdict] = {}
    pending: dict[str, str] = {}
    for group in batch_groups(ledger, inputs):
        got, waiting = _judge_group(judge, api, {k: inputs[k] for k in group}, sink, ledger,
                                    polling, name)
        verdicts.update(got)
        pending.update(waiting)
    return verdicts, pending


def _judge_group(judge: Judge, api: Any, inputs: Mapping[str, JudgeInput], sink: RawSink,
                 ledger: BatchLedger, polling: Polling,
                 name: str) -> tuple[dict[str, Verdict], dict[str, str]]:
    """One batch (and its repair rounds) over `inputs`."""
    state: dict[str, dict[str, Any]] = {}
    requests: dict[str, ModelRequest] = {}
    verdicts: dict[str, Verdict] = {}
    pending: dict[str, str] = {}
    for label, inp in inputs.items():
        request, provenance = judge.request(inp, label)
        provenance["batch"] = True
        checks = deterministic_checks(inp)
        unsent = judge.does_not_fit(checks, provenance)
        if unsent is not None:  # known not to fit: never put in a batch
            verdicts[label] = unsent
            continue
        state[label] = {"checks": checks, "provenance": provenance,
                        "attempts": [], "repairs": 0, "problem": None}
        requests[label] = request
    for number in range(1, judge.max_attempts + 1):
        if not requests:
            break
        round_requests = {label: replace(r, label=f"{label}-{number:02d}" if number > 1
                                         else label) for label, r in requests.items()}
        outcome = run_batch(api, round_requests, sink, ledger, name=f"{name}-{number:02d}",
                            polling=polling)
        pending.update(outcome.pending)
        following: dict[str, ModelRequest] = {}
        for label, result in outcome.results.items():
            s = state[label]
            s["attempts"] += result.attempts
            parsed, why = parse_reply(result.reply)
            if parsed is not None:
                verdicts[label] = _verdict(s, parsed, result.attempts[-1])
                continue
            s["problem"] = (f"malformed judgment: {why}" if not s["repairs"] else
                            f"malformed judgment after {s['repairs']} repair request(s): {why}")
            if number < judge.max_attempts:
                following[label] = replace(requests[label], messages=requests[label].messages
                                           + repair_turn(result.reply, why))
                s["repairs"] += 1
            else:
                verdicts[label] = _unscored(s, result.attempts[-1])
        requests = following
    return verdicts, pending


def _verdict(s: dict[str, Any], parsed: dict[str, Any], last: Attempt) -> Verdict:
    provenance = {**s["provenance"], "repair_requests": s["repairs"]}
    return Verdict(parsed["correctness"], parsed["citation_support"], parsed["rationale"], True,
                   None, last.request_path, last.response_path, tuple(s["attempts"]),
                   s["checks"], provenance, parsed["verdict"])


def _unscored(s: dict[str, Any], last: Attempt) -> Verdict:
    provenance = {**s["provenance"], "repair_requests": s["repairs"]}
    return Verdict(None, None, None, False, s["problem"], last.request_path, last.response_path,
                   tuple(s["attempts"]), s["checks"], provenance)
