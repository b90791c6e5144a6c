"""Damage stays local and edits are evident (issue 14), on real run folders.

- One flipped bit anywhere in a real run folder (a raw record's header, recipe or data, whether
  other cases reuse its chunks or not; a sealed journal; a plain journal; the manifest) costs
  nothing: the CRC (or chain, or hash) the record already carries names the bit, the reader
  undoes it, every body and event reads byte for byte as recorded, and `verify()` names
  exactly the record hit ("repaired"). Before, such a bit cost
  the case's later records and every body of every case reusing the record's chunks (a bit in a
  length cost every later record of the pack), or the sealed journal's lines after it.
- Two flipped bits in one raw record cost that record and what depends on its bytes (the case's
  later records, bodies reusing its chunks); `verify()` names every one of them and every other
  body still reads (it used to make every later record unreadable).
- One flipped bit in the manifest is the one flip that makes it match its `manifest_hash` again
  (a flip there used to make the whole run unreadable: "not a run folder").
- One flipped bit in a plain journal line is found by trying each bit against the line's chain:
  a flip in the run journal's newline used to cost the two lines it joined.
- A bit flipped in a journal sealed before the repair field (plain gzip) is a problem in
  `verify()`, never an exception; the lines before it read.
- An edited judgment or timestamp in a re-gzipped journal fails its line's chain; a journal whose
  whole chain was recomputed after an edit no longer matches the head the run journal recorded.
"""

from __future__ import annotations

import gzip
import json

import pytest

from parquet_agent.experiment.run import create_run
from parquet_agent.explore.runs import RunStore
from parquet_agent.store import RawStore, read_journal
from parquet_agent.store.blobs import _Pack
from parquet_agent.store.packformat import HEADER, expand_numbers
from parquet_agent.transcript.codec import frame_line
from tests.store.damage import SITES, copy_run, damage_site, flip, make_demo_run
from tests.store.store_fixtures import conversation_bodies, make_config, make_frozen
from tests.store.test_store_run import play_case


def _flip(path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x10
    path.write_bytes(bytes(data))


def _store_of_20_cases(tmp_path):
    store = RawStore(tmp_path)
    paths = {case: [store.write(f"case{case:02d}/turn-{t}.json", body)
                    for t, body in enumerate(conversation_bodies(case))] for case in range(20)}
    store.close()
    return paths


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    return make_demo_run(tmp_path_factory.mktemp("demo"))


def _everything(run_dir):
    """Every raw body and every journal's events of a run folder, as read back."""
    store = RawStore(run_dir, writable=False)
    bodies = {name: store.read(name) for name in store.names()}
    events = {p.name: read_journal(p).events for p in (run_dir / "journal").iterdir()}
    return bodies, events


@pytest.mark.parametrize("site", SITES)
def test_one_flipped_bit_anywhere_in_a_run_folder_costs_nothing_and_is_named(demo_run, tmp_path,
                                                                              site):
    run_dir = copy_run(demo_run, tmp_path)
    where = damage_site(run_dir, site)
    flip(where.path, where.bit)
    report = RunStore(run_dir.parent).open(run_dir.name).verify()
    assert not report.ok and len(report.problems) == 1, report.problems
    assert where.record in report.problems[0] and "repaired" in report.problems[0], report.problems
    assert _everything(run_dir) == _everything(demo_run)  # every body and event, as recorded
    assert RunStore(run_dir.parent).open(run_dir.name).completed_cases() == set(
        RunStore(demo_run.parent).open(demo_run.name).completed_cases())


def test_every_bit_of_a_raw_record_and_of_a_sealed_journal_is_repaired(demo_run, tmp_path):
    """Each bit of the header, one bit of each recipe byte and of every fifth data byte of a
    record whose chunks other cases reuse; one bit of every seventh byte of a sealed journal."""
    run_dir = copy_run(demo_run, tmp_path)
    site = damage_site(run_dir, "pack data, chunks other cases reuse")
    pack = _Pack(site.path)
    pack.scan()
    number = list(pack.recipes).index(site.record[len("raw/"):])
    record = pack.records[number]
    start = pack.records[number - 1].data_offset + pack.records[number - 1].data_length
    bits = list(range(8 * start, 8 * (start + HEADER.size)))
    bits += [8 * byte + byte % 8 for byte in range(start + HEADER.size, record.data_offset)]
    bits += [8 * byte + byte % 8 for byte in range(record.data_offset,
                                                   record.data_offset + record.data_length, 5)]
    reused = next(n for n, r in pack.recipes.items() if not n.startswith(site.case)
                  and any(pack.chunks[c][0] == number for c in expand_numbers(r["c"])))
    intact, original = site.path.read_bytes(), RawStore(demo_run, writable=False)
    expected = {name: original.read(name) for name in (site.record, reused)}
    for bit in bits:
        flip(site.path, bit)
        store = RawStore(run_dir, writable=False)
        assert {name: store.read(name) for name in expected} == expected, bit
        problems = store.verify()
        assert len(problems) == 1 and f"byte {bit >> 3}," in problems[0], (bit, problems)
        site.path.write_bytes(intact)
    journal = damage_site(run_dir, "sealed journal").path
    sealed, lines = journal.read_bytes(), read_journal(journal).events
    for byte in range(0, len(sealed), 7):
        flip(journal, 8 * byte + byte % 8)
        read = read_journal(journal)
        assert read.events == lines and len(read.damaged) == 1, (byte, read.damaged)
        assert f"byte {byte})" in read.damaged[0] and "repaired" in read.damaged[0]
        journal.write_bytes(sealed)


@pytest.mark.parametrize("where", [b'"manifest_hash": "b2:', b'"run_id": "', b'"config": {'])
def test_a_flipped_bit_in_the_manifest_is_repaired(demo_run, tmp_path, where):
    """In the hash itself, in a value (the JSON still parses), in the structure (it does not)."""
    run_dir = copy_run(demo_run, tmp_path)
    manifest = run_dir / "manifest.json"
    at = manifest.read_bytes().index(where) + len(where) - 1
    flip(manifest, 8 * at + 2)
    run = RunStore(run_dir.parent).open(run_dir.name)
    assert run.manifest == RunStore(demo_run.parent).open(demo_run.name).manifest
    problems = run.verify().problems
    assert problems == (f"manifest.json had one flipped bit (byte {at}): repaired on read; the "
                        "file on disk is still damaged (restore it from a copy)",), problems


@pytest.mark.parametrize("part", ["data", "recipe", "header"])
def test_two_flipped_bits_cost_only_what_depends_on_them(tmp_path, part):
    paths = _store_of_20_cases(tmp_path)
    pack_path = tmp_path / "raw" / "bodies.pack"
    pack = _Pack(pack_path)
    pack.scan()
    target = next(n for n, name in enumerate(pack.recipes) if name == "case10/turn-1.json")
    record, before = pack.records[target], pack.records[target - 1]
    start = before.data_offset + before.data_length  # records are contiguous
    offset = {"data": record.data_offset + record.data_length // 2,
              "recipe": (start + 13 + record.data_offset) // 2,  # inside the recipe JSON
              "header": start + 7}[part]  # inside the 13-byte header's lengths
    _flip(pack_path, offset)
    _flip(pack_path, offset + 1)  # one bit alone is repaired (the test above)
    reader = RawStore(tmp_path, writable=False)
    problems = reader.verify()
    unreadable = set()
    for case, case_paths in paths.items():
        for path in case_paths:
            try:
                reader.read(path)
            except Exception:  # noqa: BLE001 - counting what the flip cost
                unreadable.add(path)
    assert "raw/case10/turn-1.json" in unreadable or part != "data"
    assert {p.split("/")[1] for p in unreadable} <= {"case10"}, sorted(unreadable)
    assert len(unreadable) <= 2, sorted(unreadable)  # the record hit and the case's later one
    assert problems, "the damage must be reported"
    named = " ".join(problems)
    assert all(p in named for p in unreadable if p in reader.names()), (problems, unreadable)


def _sealed_run(tmp_path):
    run = create_run(RunStore(tmp_path), make_config(tmp_path), make_frozen(), run_id="r1")
    case = play_case(run, score=0.0)
    other = play_case(run, question="Q002")
    run.close()
    return run.dir, case, other


def _lines(path):
    return gzip.decompress(path.read_bytes()).splitlines(keepends=True)


def test_a_bit_flipped_in_a_gzipped_journal_is_a_problem_not_an_exception(tmp_path):
    run_dir, case, other = _sealed_run(tmp_path)
    journal = run_dir / "journal" / f"{case}.jsonl.gz"
    # sealed as before the repair field (plain gzip): such folders exist and must still read
    journal.write_bytes(gzip.compress(gzip.decompress(journal.read_bytes()), 9, mtime=0))
    _flip(journal, len(journal.read_bytes()) // 2)
    report = RunStore(tmp_path).open("r1").verify()  # used to raise BadGzipFile
    assert not report.ok
    assert any(f"{case}.jsonl.gz" in p for p in report.problems), report.problems
    assert not any(other in p for p in report.problems)  # the other case is intact


@pytest.mark.parametrize("edit", ["judgment", "timestamp"])
def test_an_edited_line_in_a_regzipped_journal_is_named(tmp_path, edit):
    run_dir, case, other = _sealed_run(tmp_path)
    journal = run_dir / "journal" / f"{case}.jsonl.gz"
    lines = _lines(journal)
    index = next(i for i, line in enumerate(lines) if b'"event":"judgment"' in line)
    if edit == "timestamp":
        index = 0
    old = lines[index]
    new = (old.replace(b'"correctness":0.0', b'"correctness":100.0') if edit == "judgment"
           else old.replace(b'"at":"20', b'"at":"19'))
    assert new != old
    lines[index] = new
    journal.write_bytes(gzip.compress(b"".join(lines)))
    report = RunStore(tmp_path).open("r1").verify()
    assert not report.ok
    assert any(f"{case}.jsonl" in p and f"line {index + 1}" in p for p in report.problems), \
        report.problems
    # the edited line is not taken as recorded: the judgment read back is not the forged one
    judgments = [e for e in read_journal(journal).events if e.event == "judgment"]
    assert all(j.data["correctness"] != 100.0 for j in judgments)


def test_a_recomputed_chain_still_differs_from_the_recorded_head(tmp_path):
    run_dir, case, other = _sealed_run(tmp_path)
    journal = run_dir / "journal" / f"{case}.jsonl.gz"
    records = [json.loads(line) for line in _lines(journal)]
    for record in records:
        record.pop("chain")
        if record["event"] == "judgment":
            record["correctness"] = 100.0
    prev, out = "", []
    for record in records:  # a forger who knows the framing rewrites every chain
        line, prev = frame_line(record, prev)
        out.append(line + b"\n")
    journal.write_bytes(gzip.compress(b"".join(out)))
    report = RunStore(tmp_path).open("r1").verify()
    assert not report.ok
    assert any(f"{case}.jsonl.gz" in p and "chain head" in p for p in report.problems), \
        report.problems
