"""The content-addressed raw store: exact round trips, dedup, tamper detection, crash safety."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap

import pytest

from parquet_agent.errors import RunError
from parquet_agent.store import RawStore, read_raw

from tests.store.store_fixtures import conversation_bodies


def test_round_trip_is_byte_exact_across_reopen(tmp_path):
    rng = random.Random(1)
    bodies = {
        "empty": b"",
        "binary": bytes(rng.randrange(256) for _ in range(5000)),
        "json": conversation_bodies(1)[2],
        "unicode": "{\"text\":\"Umsatz \u20ac 12\u00a0Mio, \u65e5\u672c\"}".encode(),
        "separators-only": b"},{" * 500,
    }
    store = RawStore(tmp_path)
    paths = {name: store.write(f"c/{name}", data) for name, data in bodies.items()}
    assert all(p == f"raw/c/{name}" for name, p in paths.items())
    store.close()
    for name, data in bodies.items():
        assert read_raw(tmp_path, paths[name]) == data
    assert RawStore(tmp_path).verify() == []


def test_conversation_prefixes_are_stored_once(tmp_path):
    store = RawStore(tmp_path)
    for case in range(20):
        for turn, body in enumerate(conversation_bodies(case, turns=4)):
            store.write(f"Q{case}__m__sql/turn-{turn}.request.json", body)
    stats = store.stats()
    assert stats.bodies == 80
    # prefixes repeat inside a case and system prompt + tools across cases
    assert stats.stored_bytes < stats.logical_bytes / 10, stats
    for case in (0, 19):
        for turn, body in enumerate(conversation_bodies(case, turns=4)):
            assert store.read(f"raw/Q{case}__m__sql/turn-{turn}.request.json") == body


def test_names_are_immutable(tmp_path):
    store = RawStore(tmp_path)
    assert store.write("a/req.json", b"one") == "raw/a/req.json"
    assert store.write("a/req.json", b"one") == "raw/a/req.json"  # idempotent
    assert store.write("a/req.json", b"two") == "raw/a/req.json~2"
    assert store.read("raw/a/req.json") == b"one"
    assert store.read("raw/a/req.json~2") == b"two"
    with pytest.raises(ValueError, match="bad raw name"):
        store.write("../escape", b"x")


def test_metadata_gets_are_kept_apart(tmp_path):
    store = RawStore(tmp_path)
    store.write("meta/models-list.json", b'{"data":[]}')
    store.write("Q1__m__sql/turn-1.request.json", b'{"messages":[]}')
    assert (tmp_path / "raw" / "meta.pack").stat().st_size > 0
    assert b"models-list" not in (tmp_path / "raw" / "bodies.pack").read_bytes()
    assert store.read("raw/meta/models-list.json") == b'{"data":[]}'


def test_verify_finds_a_tampered_byte(tmp_path):
    store = RawStore(tmp_path)
    paths = [store.write(f"c/{i}.json", body) for i, body in enumerate(conversation_bodies(3))]
    store.close()
    pack = tmp_path / "raw" / "bodies.pack"
    data = bytearray(pack.read_bytes())
    data[40] ^= 0x03  # two bits inside the first record (one bit is repaired: test_store_tamper)
    pack.write_bytes(bytes(data))
    problems = RawStore(tmp_path, writable=False).verify()
    assert any("record at byte 0 is damaged" in p for p in problems), problems
    with pytest.raises(KeyError):
        read_raw(tmp_path, paths[0])
    with pytest.raises(RunError, match="damaged"):
        RawStore(tmp_path)  # never appended to once damaged


def _rewrite_first_record(pack, change):
    """Change the first record and fix up its CRC, as a careful forger would."""
    import struct
    import zlib

    data = bytearray(pack.read_bytes())
    kind, meta_len, data_len, _ = struct.unpack_from(">cIII", data, 0)
    body = bytearray(data[13:13 + meta_len + data_len])
    change(body, meta_len)
    struct.pack_into(">cIII", data, 0, kind, meta_len, data_len, zlib.crc32(bytes(body)))
    data[13:13 + meta_len + data_len] = body
    pack.write_bytes(bytes(data))


@pytest.mark.parametrize("where", ["data", "meta"])
def test_verify_finds_a_consistently_rewritten_record(tmp_path, where):
    """Even with a fixed-up CRC, changed bytes no longer decode or match the body hash."""
    store = RawStore(tmp_path)
    store.write("c/a.json", b'{"x":"' + b"abcdefgh" * 40 + b'"}')
    store.write("c/b.json", b'{"x":"' + b"abcdefgh" * 40 + b'","y":"other"}')
    store.close()

    def change(body, meta_len):
        if where == "data":
            body[meta_len + 3] ^= 0x20
        else:
            at = bytes(body).index(b'"s":')
            body[at + 4] = ord("9") if body[at + 4] != ord("9") else ord("8")

    _rewrite_first_record(tmp_path / "raw" / "bodies.pack", change)
    problems = RawStore(tmp_path, writable=False).verify()
    assert problems and all("raw/c/" in p for p in problems), problems


def test_a_torn_tail_is_ignored_then_cut_off_and_kept(tmp_path):
    store = RawStore(tmp_path)
    store.write("c/one", b"first body")
    store.close()
    pack = tmp_path / "raw" / "bodies.pack"
    good = pack.stat().st_size
    with open(pack, "ab") as f:
        f.write(b"C\x00\x00\x10\x00garbage")  # a header promising more bytes than exist
    reader = RawStore(tmp_path, writable=False)
    assert reader.read("raw/c/one") == b"first body"
    assert reader.verify() == [] and "torn record" in reader.torn_tails()[0]
    writer = RawStore(tmp_path)  # opening for writing repairs the tail
    assert pack.stat().st_size == good
    assert (tmp_path / "raw" / "bodies.pack.torn").read_bytes().endswith(b"garbage")
    writer.write("c/two", b"second body")
    assert writer.read("raw/c/two") == b"second body" and writer.verify() == []


_WRITER = textwrap.dedent("""
    import sys
    from parquet_agent.store import RawStore
    sys.path.insert(0, sys.argv[2])
    from store_fixtures import conversation_bodies
    store = RawStore(sys.argv[1])
    i = 0
    while True:
        for turn, body in enumerate(conversation_bodies(i, turns=3)):
            path = store.write(f"Q{i}__m__sql/t{turn}", body + b" " * (i * 37 % 5000))
            print(path, flush=True)  # acknowledged: write() returned
        i += 1
""")


@pytest.mark.timeout(60)
def test_sigkill_mid_write_loses_no_acknowledged_body(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    tests_dir = os.path.dirname(__file__)
    for delay_acks in (5, 40, 90):
        proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(run), tests_dir],
                                stdout=subprocess.PIPE, text=True)
        acked = []
        for line in proc.stdout:
            acked.append(line.strip())
            if len(acked) >= delay_acks:
                break
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        acked += [line.strip() for line in proc.stdout if line.strip()]
        proc.stdout.close()
        store = RawStore(run)  # repairs a torn tail, if the kill left one
        assert store.verify() == []
        for path in acked:
            name = path.split("/")[-2]
            case, turn = int(name[1:].split("__")[0]), int(path[-1])
            body = conversation_bodies(case, turns=3)[turn]
            assert store.read(path) == body + b" " * (case * 37 % 5000)
        store.close()


def test_concurrent_writers_in_threads(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    store = RawStore(tmp_path)

    def case(i):
        return [(store.write(f"Q{i}__m__sql/t{t}", body), body)
                for t, body in enumerate(conversation_bodies(i, turns=3))]

    with ThreadPoolExecutor(4) as pool:
        written = [pair for pairs in pool.map(case, range(24)) for pair in pairs]
    store.close()
    reader = RawStore(tmp_path, writable=False)
    assert all(reader.read(path) == body for path, body in written)
    assert reader.verify() == [] and reader.stats().bodies == 72
