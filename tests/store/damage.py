"""Where to flip one bit in a real run folder, by class of position (issue 14's "a one-bit flip
anywhere in a run folder costs at most that record"), shared by the store and export tests.

Each site names the file, the bit (`8 * byte + k` flips the bit of value `1 << k`), the record
it hits (a raw path or a journal file name) and the case that record belongs to.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from parquet_agent.store.blobs import _Pack
from parquet_agent.store.packformat import HEADER, expand_numbers

SITES = ("pack kind byte", "pack length, high bit", "pack length, low bit", "pack CRC",
         "pack recipe", "pack data, chunks other cases reuse", "pack data, chunks no one reuses",
         "sealed journal", "run journal, a newline", "manifest")


@dataclass(frozen=True)
class Site:
    path: Path
    bit: int
    record: str  # what verify() must name: "raw/<name>" or the journal's file name
    case: str | None  # the case whose record it is (None: the run's own journal)


def flip(path: Path, bit: int) -> None:
    data = bytearray(path.read_bytes())
    data[bit >> 3] ^= 1 << (bit & 7)
    path.write_bytes(bytes(data))


def damage_site(run_dir: Path, site: str) -> Site:
    """The bit to flip for `site` in the run folder `run_dir` (an intact one)."""
    if site == "sealed journal":
        journal = sorted((run_dir / "journal").glob("*__*.jsonl.gz"))[0]
        case = journal.name[: -len(".jsonl.gz")]
        return Site(journal, 8 * (journal.stat().st_size // 2) + 4, journal.name, case)
    if site == "manifest":  # the run's frozen inputs: every case depends on it
        manifest = run_dir / "manifest.json"
        at = manifest.read_bytes().index(b'"question_ids"') + 3
        return Site(manifest, 8 * at + 4, manifest.name, None)
    if site == "run journal, a newline":  # two lines would read as one (a plain journal)
        journal = run_dir / "journal" / "_run.jsonl"
        newline = journal.read_bytes().index(b"\n", journal.stat().st_size // 2)
        return Site(journal, 8 * newline + 4, journal.name, None)
    pack_path = run_dir / "raw" / "bodies.pack"
    pack = _Pack(pack_path)
    pack.scan()
    names = list(pack.recipes)
    shared, alone = _shared_and_alone(pack, names)
    number = alone if site == "pack data, chunks no one reuses" else shared
    record = pack.records[number]
    start = 0 if number == 0 else pack.records[number - 1].data_offset + pack.records[
        number - 1].data_length  # records are contiguous
    byte, k = {
        "pack kind byte": (start, 1),
        "pack length, high bit": (start + 1, 7),  # meta length + 2**31: past the pack's end
        "pack length, low bit": (start + 8, 0),  # data length off by one
        "pack CRC": (start + HEADER.size - 2, 5),
        "pack recipe": ((start + HEADER.size + record.data_offset) // 2, 4),
    }.get(site, (record.data_offset + record.data_length // 2, 4))
    return Site(pack_path, 8 * byte + k, f"raw/{names[number]}", names[number].split("/")[0])


def _shared_and_alone(pack: _Pack, names: list[str]) -> tuple[int, int]:
    """The case record whose new chunks the most bodies of other cases reuse, and the largest
    case record whose chunks no other body uses."""
    users: dict[int, set[str]] = {}
    for name, recipe in pack.recipes.items():
        for chunk in expand_numbers(recipe["c"]):
            users.setdefault(chunk, set()).add(name)
    reusers: dict[int, set[str]] = {}
    for chunk, (number, _, _) in enumerate(pack.chunks):
        reusers.setdefault(number, set()).update(users.get(chunk, set()) - {names[number]})
    cases = [n for n, name in enumerate(names) if "__" in name.split("/")[0]
             and pack.records[n].data_length > 0]
    shared = max(cases, key=lambda n: len({u.split("/")[0] for u in reusers.get(n, ())}
                                          - {names[n].split("/")[0]}))
    alone = max((n for n in cases if not reusers.get(n)), key=lambda n: pack.records[n].data_length)
    assert {u.split("/")[0] for u in reusers[shared]} - {names[shared].split("/")[0]}, \
        "no record holds chunks another case reuses"
    return shared, alone


def copy_run(run_dir: Path, into: Path) -> Path:
    out = into / run_dir.name
    shutil.copytree(run_dir, out, ignore=shutil.ignore_patterns(".lock"))
    return out


def make_demo_run(root: Path) -> Path:
    """A real offline demo run (baseline model x both strategies, rubric judge, real sandboxed
    tools) over the harness corpus: 6 cases, raw packs and sealed journals."""
    from parquet_agent.experiment.runner import Experiment
    from parquet_agent.cli.experiment import demo_config
    from tests.harness_corpus import make_harness_corpus

    corpus = make_harness_corpus(root / "corpus")
    return Experiment(demo_config(corpus, root / "runs"), progress=False).run(
        root / "runs" / "offline").dir
