"""Exporting a damaged or edited run (issue 14): the exports are written with the damaged cases
marked (case record, summary.json, report.html, provenance), the rest shows as recorded, and
`parquet-agent export` exits 1 (or 0 with `--on-damage warn`) after a loud warning. It used to
crash with a traceback (a flipped bit in a gzipped journal), refuse the whole run (a flipped
bit in the raw pack) or exit 0 without a word (a deleted journal line).

One flipped bit anywhere (a raw record's header, recipe or data, shared with other cases or not;
a sealed journal) is repaired on read: the export marks exactly the case whose record was hit
and every case record reads as recorded. Before, a bit in a record whose chunks other cases
reuse marked (and cost the raw trail of) every one of those cases."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pytest

from parquet_agent.store.blobs import _Pack
from tests.report.conftest import fresh_copy
from tests.store.damage import SITES, damage_site, flip


def _export(run_dir, *extra):
    return subprocess.run([sys.executable, "-m", "parquet_agent", "export", str(run_dir), *extra],
                          capture_output=True, text=True, timeout=300)


def _flip(path, offset):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x10
    path.write_bytes(bytes(data))


def _first_case(run_dir):
    return sorted(p.name[: -len(".jsonl.gz")] for p in (run_dir / "journal").glob("*__*.jsonl.gz"))[0]


def _damage_gzip(run_dir, case):
    journal = run_dir / "journal" / f"{case}.jsonl.gz"
    _flip(journal, len(journal.read_bytes()) // 2)


def _delete_line(run_dir, case):
    journal = run_dir / "journal" / f"{case}.jsonl.gz"
    lines = gzip.decompress(journal.read_bytes()).splitlines(keepends=True)
    journal.write_bytes(gzip.compress(b"".join(lines[:1] + lines[2:])))


def _edit_judgment(run_dir, case):
    journal = run_dir / "journal" / f"{case}.jsonl.gz"
    lines = gzip.decompress(journal.read_bytes()).splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if b'"event":"judgment"' in line)
    record = json.loads(lines[index])
    forged = b'"correctness":0.0' if record["correctness"] == 100 else b'"correctness":100.0'
    edited = lines[index].replace(f'"correctness":{json.dumps(record["correctness"])}'.encode(), forged)
    assert edited != lines[index]
    lines[index] = edited
    journal.write_bytes(gzip.compress(b"".join(lines)))


def _flip_raw(run_dir, case):
    pack_path = run_dir / "raw" / "bodies.pack"
    pack = _Pack(pack_path)
    pack.scan()
    # two flipped bits (one is repaired: the test below) in a record of the case whose new
    # chunks no other case reuses: a record holding chunks that others reuse (the system prompt,
    # an identical judge reply) would cost those bodies too (blobs.py); verify names each
    from parquet_agent.store.packformat import expand_numbers

    names = list(pack.recipes)
    users: dict[int, set[str]] = {}
    for name, recipe in pack.recipes.items():
        for chunk in expand_numbers(recipe["c"]):
            users.setdefault(chunk, set()).add(name.split("/", 1)[0])
    own_chunks: dict[int, list[int]] = {}
    for chunk, (rec, _, _) in enumerate(pack.chunks):
        own_chunks.setdefault(rec, []).append(chunk)
    owned = [n for n, name in enumerate(names) if own_chunks.get(n)
             and all(users[c] == {name.split("/", 1)[0]} for c in own_chunks[n])]
    assert owned, "no record holds bytes only its case uses"
    number = max(owned, key=lambda n: names[n].startswith(case + "/"))
    case = names[number].split("/", 1)[0]
    record = pack.records[number]
    _flip(pack_path, record.data_offset + record.data_length // 2)
    _flip(pack_path, record.data_offset + record.data_length // 2 + 1)
    return case


@pytest.mark.parametrize("damage", [_damage_gzip, _delete_line, _edit_judgment, _flip_raw],
                         ids=["gzip bit", "deleted line", "edited judgment", "two raw bits"])
def test_damaged_run_exports_with_the_damage_marked(offline_run, tmp_path, damage):
    run_dir = fresh_copy(offline_run, tmp_path)
    case = damage(run_dir, _first_case(run_dir)) or _first_case(run_dir)
    done = _export(run_dir)
    assert done.returncode == 1, (done.stdout, done.stderr[-3000:])
    assert "Traceback" not in done.stderr and "WARNING" in done.stderr and case in done.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["integrity"]["ok"] is False and case in summary["integrity"]["damaged_cases"]
    record = json.loads((run_dir / "cases" / f"{case}.json").read_text())
    assert record["integrity"]["ok"] is False and record["integrity"]["problems"]
    others = [p for p in (run_dir / "cases").glob("*.json") if p.stem != case]
    if damage is not _flip_raw:  # two bits in a raw record cost the case's later records too,
        # which may hold bytes other cases reuse (dedup): those are then marked as well
        assert others and all("integrity" not in json.loads(p.read_text()) for p in others)
    assert 'id="integrity"' in (run_dir / "report.html").read_text()
    provenance = json.loads((run_dir / "case-export-provenance.json").read_text())
    assert provenance["integrity"]["ok"] is False and case in provenance["journal_heads"]
    warned = _export(run_dir, "--on-damage", "warn")
    assert warned.returncode == 0 and "WARNING" in warned.stderr


def test_an_intact_run_exports_clean(offline_run, tmp_path):
    run_dir = fresh_copy(offline_run, tmp_path)
    done = _export(run_dir)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads((run_dir / "summary.json").read_text())["integrity"] == {
        "ok": True, "problems": [], "damaged_cases": []}
    heads = json.loads((run_dir / "case-export-provenance.json").read_text())["journal_heads"]
    assert all(len(h["head"]) == 32 for h in heads.values())


@pytest.mark.parametrize("site", SITES)
def test_one_flipped_bit_is_repaired_and_only_its_case_is_marked(offline_run, tmp_path, site):
    run_dir = fresh_copy(offline_run, tmp_path)
    where = damage_site(run_dir, site)
    flip(where.path, where.bit)
    done = _export(run_dir)
    assert done.returncode == 1, (done.stdout, done.stderr[-3000:])
    assert "Traceback" not in done.stderr and "repaired" in done.stderr, done.stderr[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    marked = [where.case] if where.case else []  # the run journal is no case's
    assert summary["integrity"]["damaged_cases"] == marked, summary["integrity"]
    assert len(summary["integrity"]["problems"]) == 1, summary["integrity"]
    for path in sorted((run_dir / "cases").glob("*.json")):
        record = json.loads(path.read_text())
        integrity = record.pop("integrity", None)
        if path.stem == where.case:
            assert integrity["ok"] is False and len(integrity["problems"]) == 1
            assert where.record in integrity["problems"][0], integrity
        else:
            assert integrity is None, (path.stem, integrity)
        # nothing was lost: the record reads as the run's own export of the intact folder
        assert record == json.loads((offline_run / "cases" / path.name).read_text()), path.stem
