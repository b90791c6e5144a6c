"""The four tools over real workers: outputs, offsets, pagination, strategies, cache, threads."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from parquet_agent.errors import StaleIndexError, UsageError
from parquet_agent.tools import ERROR_KINDS, Tools, ToolError, ToolResult
from tests.tools.conftest import ROWS, filing, running_calls, stem

SPECS_FIXTURE = Path(__file__).parent / "fixtures" / "specs.json"


def test_public_surface():
    import parquet_agent.tools as tools_module

    assert set(tools_module.__all__) == {"ERROR_KINDS", "ScopedTools", "Timings", "ToolError",
                                        "ToolResult", "Tools"}
    assert {"sql", "forbidden", "timeout", "memory", "cpu", "worker_crashed", "validation",
            "not_found", "unknown_tool", "budget", "too_large"} == ERROR_KINDS
    with pytest.raises(ValueError):
        ToolError("oops", "not a kind")


def test_specs_are_generated_from_signatures_and_match_the_snapshot(tools):
    specs = [{"name": s.name, "description": s.description, "parameters": s.parameters} for s in tools.specs()]
    assert [s["name"] for s in specs] == ["describe_corpus", "sql", "search_headers", "read_filing"]
    # When a signature or docstring changes on purpose, regenerate the fixture from
    # [tool_spec(f) for f in specs.ALL_TOOLS.values()] and review the diff.
    assert specs == json.loads(SPECS_FIXTURE.read_text())


def test_strategy_sql_offers_two_tools(corpus_dir):
    with Tools.open(corpus_dir, "sql") as tools:
        assert [s.name for s in tools.specs()] == ["describe_corpus", "sql"]
        result = tools.call("read_filing", file_stem=stem(1))
        assert result.error.kind == "unknown_tool" and "describe_corpus, sql" in result.error.message
        assert tools.call("sql", query="SELECT 1 AS one").output["rows"] == [[1]]
    with pytest.raises(UsageError):
        Tools.open(corpus_dir, "vector")


def test_describe_corpus(tools):
    result = tools.call("describe_corpus")
    assert result.ok and result.worker_id is None
    out = result.output
    assert out["total_rows"] == ROWS and [f["file"] for f in out["files"]] == ["2025-01.parquet", "2025-02.parquet"]
    assert {c["column"] for c in out["schema"]} >= {"file_stem", "parsed_md", "accession"}
    assert "CIK" in out["column_meanings"]["accession"]
    assert any("contains(" in note for note in out["notes"])
    assert "/" not in json.dumps(out["files"])  # names only, no host paths


def test_sql_over_filings_with_timings_and_worker(tools):
    result = tools.call("sql", query="SELECT month, count(*) AS n FROM filings GROUP BY month ORDER BY month")
    assert result.ok and result.output == {"columns": ["month", "n"], "rows": [[1, 30], [2, 30]], "row_count": 2}
    assert result.worker_id.startswith("w") and result.peak_rss_bytes > 10_000_000
    assert result.timings.run_ms > 0 and result.timings.total_ms >= result.timings.run_ms
    assert result.truncated is None


def test_sql_values_are_json_able(tools):
    result = tools.call("sql", query="SELECT DATE '2025-01-02' AS d, 1.5::DECIMAL(4,2) AS m, [1,2] AS l, "
                                     "{'a': 1} AS s, 'inf'::DOUBLE AS f, NULL AS n, '\\x00'::BLOB AS b")
    assert result.ok
    assert result.output["rows"] == [["2025-01-02", "1.50", [1, 2], {"a": 1}, "inf", None, "0x00"]]
    json.loads(result.model_text())


def test_scoped_sql_reads_the_one_row(tools, plain_corpus_dir):
    expected = filing(7)["parsed_md"]
    query = "SELECT file_stem, length(parsed_md) AS n, substr(parsed_md, 1, 20) AS head FROM filing"
    result = tools.call("sql", query=query, file_stem=stem(7))
    assert result.ok, result.error
    assert result.output["rows"] == [[stem(7), len(expected), expected[:20]]]
    assert result.output["scoped_to"] == stem(7)
    with Tools.open(plain_corpus_dir, "sql+stream") as plain:  # no index: statistics pruning
        assert plain.index_status == "missing"
        assert plain.call("sql", query=query, file_stem=stem(7)).output == result.output
        missing = plain.call("sql", query=query, file_stem="0000009999-25-999999")
        assert missing.error.kind == "not_found"
        assert plain.call("search_headers", query="Contoso").error.kind == "not_found"


def test_read_filing_offsets_index_into_parsed_md(tools, corpus_dir):
    text = filing(12)["parsed_md"]
    first = tools.call("read_filing", file_stem=stem(12), max_chars=500)
    assert first.ok
    out = first.output
    assert (out["start"], out["end"], out["char_count"]) == (0, 500, len(text))
    assert out["text"] == text[0:500] and out["next_start"] == 500
    assert out["source_id"] == f"filing:{stem(12)}"
    last = tools.call("read_filing", file_stem=stem(12), start=len(text) - 10, max_chars=500).output
    assert last["text"] == text[-10:] and last["end"] == len(text) and last["next_start"] is None
    # offsets are characters of parsed_md, as read straight from the Parquet file
    table = pq.read_table(corpus_dir / "2025-01.parquet", filters=[("file_stem", "=", stem(12))])
    assert table.column("parsed_md")[0].as_py()[0:500] == out["text"]


def test_read_filing_pattern_windows_paginate(tools):
    text = filing(20)["parsed_md"]
    needle = "TOTAL REVENUE"  # case-insensitive literal
    expected = [i for i in range(len(text)) if text.lower().startswith(needle.lower(), i)]
    seen: list[int] = []
    start = 0
    for _ in range(50):
        out = tools.call("read_filing", file_stem=stem(20), pattern=needle, start=start, max_chars=600).output
        for window in out["windows"]:
            assert window["text"] == text[window["start"]:window["end"]]
            for m in window["match_starts"]:
                assert text[m:m + len(needle)].lower() == needle.lower()
            seen += window["match_starts"]
        if out["next_start"] is None:
            break
        assert out["next_start"] > start
        start = out["next_start"]
    assert seen == expected
    none = tools.call("read_filing", file_stem=stem(20), pattern="no such phrase").output
    assert none["matches_total"] == 0 and none["windows"] == [] and none["next_start"] is None


def test_a_common_pattern_keeps_the_output_bounded(tools):
    out = tools.call("read_filing", file_stem=stem(20), pattern=" ", max_chars=4000).output
    assert out["matches_total"] > 100
    assert all(len(w["match_starts"]) <= 20 for w in out["windows"])
    assert sum(w.get("more_match_starts", 0) for w in out["windows"]) > 0  # says what it cut
    assert len(json.dumps(out)) < 4000 * 2 + 2000


def test_search_headers_by_company_cik_form_and_date(tools):
    result = tools.call("search_headers", query="Contoso Mining", page_size=5)
    assert result.ok
    out = result.output
    assert out["total"] == ROWS // 5 and out["pages"] == 3 and len(out["results"]) == 5
    assert all(r["company"].startswith("Contoso Mining") for r in out["results"])
    assert [r["file_stem"] for r in out["results"]] == sorted(r["file_stem"] for r in out["results"])
    page3 = tools.call("search_headers", query="Contoso Mining", page=3, page_size=5).output
    assert len(page3["results"]) == 2 and result.truncated == {"more_pages": True, "next_page": 2}
    assert page3["results"][-1]["file_stem"] == stem(56)
    # CIK with and without zero padding
    for cik in ("1007", "0000001007"):
        hits = tools.call("search_headers", query=cik).output["results"]
        assert [h["file_stem"] for h in hits] == [stem(7)] and hits[0]["cik"] == "1007"
    forms = tools.call("search_headers", query="10-K", page_size=100).output
    assert forms["total"] == ROWS // 3 and {r["form_type"] for r in forms["results"]} == {"10-K"}
    dated = tools.call("search_headers", query="2025-02 Northwind", page_size=100).output
    assert dated["total"] > 0 and all(r["filing_date"].startswith("2025-02") for r in dated["results"])
    past = tools.call("search_headers", query="Contoso", page=99).output
    assert past["results"] == [] and "past the last page" in past["note"]


def test_cache_hits_look_identical_and_errors_are_not_cached(corpus_dir):
    with Tools.open(corpus_dir, "sql+stream", cache="on") as tools:
        first = tools.call("sql", query="SELECT count(*) FROM filings")
        again = tools.call_raw("sql", '{"query": "SELECT count(*) FROM filings", "file_stem": null}')
        assert not first.cache_hit and again.cache_hit and again.worker_id is None
        assert again.model_text() == first.model_text()
        bad = [tools.call("sql", query="SELECT nope FROM filings") for _ in range(2)]
        assert not any(r.cache_hit for r in bad)
        assert tools.cache.stats()["hits"] == 1 and tools.cache.stats()["stores"] == 1
        again.output["rows"].clear()  # a caller mutating its copy cannot poison the cache
        assert tools.call("sql", query="SELECT count(*) FROM filings").output == first.output
    with Tools.open(corpus_dir, "sql", cache="off") as tools:
        assert not tools.call("sql", query="SELECT 1").cache_hit
        assert not tools.call("sql", query="SELECT 1").cache_hit


def test_threads_share_one_tools_and_data_calls_queue(corpus_dir):
    # long enough that the round trip to the server (counted in run_ms, and overlapping
    # between threads) is small beside the query itself
    slow = "SELECT count(*) FROM range(20000000) t WHERE hash(t.range) % 7 = 1"
    with Tools.open(corpus_dir, "sql", cache="off", data_workers=1) as tools:
        results: list[ToolResult] = []
        lock = threading.Lock()
        barrier = threading.Barrier(4)  # all four ask at once, however late a thread starts

        def work():
            barrier.wait()
            r = tools.call("sql", query=slow)
            with lock:
                results.append(r)

        threads = [threading.Thread(target=work) for _ in range(4)]
        started = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = (time.perf_counter() - started) * 1000
    assert all(r.ok for r in results) and len({r.worker_id for r in results}) == 4
    run = sorted(r.timings.run_ms for r in results)
    # one at a time: the calls' run times do not overlap, so waits add up
    assert elapsed >= sum(run) * 0.9
    assert max(r.timings.queue_ms for r in results) >= run[0] * 0.9


def test_data_calls_are_admitted_first_come_first_served(corpus_dir):
    # With a plain (unfair) semaphore one thread re-acquired its slot call after call while
    # the others waited; with FIFO admission every call but the first waits behind another.
    with Tools.open(corpus_dir, "sql", cache="off", data_workers=1) as tools:
        results: list[ToolResult] = []
        lock = threading.Lock()
        barrier = threading.Barrier(3)

        def work():
            barrier.wait()
            for _ in range(3):
                r = tools.call("sql", query="SELECT count(*) FROM range(300000) t WHERE hash(t.range) % 3 = 1")
                with lock:
                    results.append(r)

        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    shortest = min(r.timings.run_ms for r in results)
    waited = sum(r.timings.queue_ms >= 0.5 * shortest for r in results)
    assert waited >= len(results) - 2, sorted(round(r.timings.queue_ms) for r in results)


def test_a_call_answered_without_a_child_does_not_queue_behind_data_calls(corpus_dir):
    # admission is in the fork server: with the one data slot busy, a read of a filing the
    # row index does not hold (the judge's check of a made-up citation) is answered at once
    slow = "SELECT count(*) FROM range(30000000) t WHERE hash(t.range) % 7 = 1"
    with Tools.open(corpus_dir, "sql+stream", cache="off", data_workers=1) as tools:
        results: list[ToolResult] = []
        busy = threading.Thread(target=lambda: results.append(tools.call("sql", query=slow)))
        busy.start()
        deadline = time.monotonic() + 30  # a bound only: the slow call's child starts working
        while not running_calls(tools, cpu_s=0.05):
            assert time.monotonic() < deadline, "the slow call never started"
            time.sleep(0.005)
        absent = tools.call("read_filing", file_stem="0000009999-25-999999", max_chars=10)
        still_running = busy.is_alive()
        busy.join()
    assert absent.error is not None and absent.error.kind == "not_found"
    assert absent.worker_id == "server" and absent.timings.queue_ms == 0.0
    assert still_running and results[0].ok
    assert absent.timings.total_ms < 0.5 * results[0].timings.run_ms


def test_stale_index_is_refused(tmp_path):
    from parquet_agent.corpus.index import build_index
    from tests.tools.conftest import write_files

    folder = tmp_path / "c"
    write_files(folder)
    build_index(folder)
    (folder / "2025-03.parquet").write_bytes((folder / "2025-01.parquet").read_bytes())
    with pytest.raises(StaleIndexError, match="corpus index"):
        Tools.open(folder)


def test_worker_crash_is_a_value_and_the_pool_recovers(corpus_dir):
    import os
    import signal

    with Tools.open(corpus_dir, "sql", cache="off") as tools:
        os.kill(tools.sandbox.server_pid, signal.SIGKILL)  # the whole fork server dies
        deadline = time.monotonic() + 10
        while tools.sandbox.server_running:  # dead, and reaped
            assert time.monotonic() < deadline, "the killed server still runs"
            time.sleep(0.01)
        result = tools.call("sql", query="SELECT 1")
        assert result.ok and tools.sandbox.starts == 2


def test_result_json_and_model_text():
    ok = ToolResult("sql", {"query": "x"}, True, {"b": 1, "a": "é"})
    assert ok.model_text() == '{"b":1,"a":"é"}'
    err = ToolResult("sql", {}, False, error=ToolError("timeout", "too slow"))
    assert json.loads(err.model_text()) == {"error": {"kind": "timeout", "message": "too slow"}}
    data = err.to_json()
    assert data["error"] == {"kind": "timeout", "message": "too slow"} and data["timings"]["queue_ms"] == 0.0
    json.dumps(data)


def test_two_data_workers_run_two_calls_at_once(corpus_dir):
    slow = "SELECT count(*) FROM range(3000000) t WHERE hash(t.range) % 7 = 1"
    with Tools.open(corpus_dir, "sql+stream", cache="off", data_workers=2) as tools:
        barrier = threading.Barrier(2)
        results: list[ToolResult] = []

        def work(i: int):
            barrier.wait()
            results.append(tools.call("sql", query=f"{slow} AND {i} = {i}"))
            results.append(tools.call("read_filing", file_stem=stem(i), max_chars=10))

        threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert all(r.ok for r in results), [r.error for r in results]
    # two slots: nobody waits for one. Waiting behind the other thread's query would take about
    # that query's run time; a bound relative to it holds on a loaded machine, 50 ms did not
    scans = [r.timings.run_ms for r in results if r.name == "sql"]
    assert max(r.timings.queue_ms for r in results) < 0.5 * min(scans)
    texts = sorted(r.output["text"] for r in results if r.name == "read_filing")
    assert texts == sorted(filing(i)["parsed_md"][:10] for i in range(2))


def test_closed_tools_says_so(corpus_dir):
    tools = Tools.open(corpus_dir, "sql")
    tools.close()
    tools.close()  # idempotent
    with pytest.raises(UsageError, match="closed"):
        tools.call("sql", query="SELECT 1")
    # describe_corpus and refusals need no worker and still answer
    assert tools.call("describe_corpus").ok
    assert tools.call("nope").error.kind == "unknown_tool"


def test_a_server_that_cannot_start_is_a_clear_corpus_error(tmp_path):
    from parquet_agent.corpus.snapshot import CorpusSnapshot
    from parquet_agent.errors import CorpusError
    from tests.tools.conftest import write_files

    folder = tmp_path / "c"
    write_files(folder)
    snapshot = CorpusSnapshot.take(folder)
    (folder / "2025-02.parquet").unlink()  # gone between the snapshot and the server start
    with pytest.raises(CorpusError, match="could not start") as caught:
        Tools.open(folder, snapshot=snapshot)
    assert "2025-02.parquet" in str(caught.value)


def test_a_strategy_view_is_a_new_frozen_view_over_one_sandbox(corpus_dir):
    import dataclasses

    with Tools.open(corpus_dir, "sql+stream", cache="off") as tools:
        view = tools.for_strategy("sql")
        assert view is not tools and view.sandbox is tools.sandbox
        assert (view.strategy, tools.strategy) == ("sql", "sql+stream")  # the original unchanged
        with pytest.raises(dataclasses.FrozenInstanceError):
            view.offer = tools.offer
        pid = tools.sandbox.server_pid
        assert isinstance(pid, int) and tools.sandbox.server_running and tools.sandbox.starts == 1
        view.close()  # a view owns nothing
        assert tools.sandbox.server_running and tools.sandbox.server_pid == pid
    assert not tools.sandbox.server_running and tools.sandbox.server_pid is None


def test_schemas_keep_to_what_local_grammar_builders_accept(tools):
    """llama.cpp's grammar compiler segfaulted on `sql.query`'s `maxLength: 20000`: long limits
    are enforced by validation (an error value), not shown in the schema."""
    text = json.dumps([s.parameters for s in tools.specs()])
    assert all(int(n) <= 256 for n in re.findall(r'"maxLength": (\d+)', text))
    result = tools.call("sql", query="SELECT 1 AS one -- " + "x" * 20_000)
    assert result.error.kind == "validation" and "20000" in result.error.message
