"""Edits that verified clean, and damage that gave tracebacks (issue 24 item 5), on real run
folders and through the real command in a subprocess.

- A judgment edited 0 -> 100 in a sealed case journal, every chain of that journal recomputed
  and the journal sealed again, and the run journal cut inside that case's `case_sealed` line
  (a torn last line reads as a crash): `verify` was clean and `export` exited 0 with the new
  score. The run journal now commits to every finished case journal and verify checks both
  directions: a finished journal without its commitment is named.
- A deleted sealed case journal: verify was clean and the case silently became unstarted. A
  committed journal that is missing is named.
- A record cut out of raw/bodies.pack: IndexError tracebacks from verify, export, judge and runs.
- A manifest of 100,000 `[`: RecursionError tracebacks everywhere.
- A truncated pack: a KeyError traceback from `judge`.
- One broken run folder made `parquet-agent runs` fail for every run; it is listed as broken and
  the others as they are.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from parquet_agent.store.blobs import _Pack
from parquet_agent.store.sealing import seal, unseal
from parquet_agent.transcript.codec import frame_line
from tests.store.damage import copy_run, make_demo_run

TRACEBACKS = ("Traceback", "IndexError", "KeyError", "RecursionError")


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> Path:
    return make_demo_run(tmp_path_factory.mktemp("demo"))


@pytest.fixture
def run_dir(demo_run, tmp_path) -> Path:
    return copy_run(demo_run, tmp_path / "runs")


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "parquet_agent", *map(str, args)],
                          check=False, capture_output=True, text=True, timeout=300)


def _named(done: subprocess.CompletedProcess) -> str:
    """The command's output; it must not be a traceback."""
    out = done.stdout + done.stderr
    assert not any(t in out for t in TRACEBACKS), out[-3000:]
    return out


def _last_sealed(run_dir: Path) -> str:
    """The case whose `case_sealed` is the run journal's last one."""
    lines = (run_dir / "journal" / "_run.jsonl").read_bytes().splitlines()
    return [json.loads(line)["case_id"] for line in lines if b'"case_sealed"' in line][-1]


def _forge_judgment(run_dir: Path, case: str, *, sealed: bool = True) -> float:
    """Edit the case's judgment (0 <-> 100) and recompute every chain of its journal, as a forger
    who knows the framing; seal it again (or leave it plain, as a crash before the seal would).
    Returns the forged correctness."""
    journal = run_dir / "journal" / f"{case}.jsonl.gz"
    records = [json.loads(line) for line in unseal(journal.read_bytes())[0].splitlines()]
    forged = None
    prev, out = "", []
    for record in records:
        record.pop("chain")
        if record["event"] == "judgment":
            forged = record["correctness"] = 0.0 if record["correctness"] == 100.0 else 100.0
        line, prev = frame_line(record, prev)
        out.append(line + b"\n")
    assert forged is not None
    if sealed:
        journal.write_bytes(seal(b"".join(out)))
    else:
        journal.unlink()
        journal.with_suffix("").write_bytes(b"".join(out))
    return forged


def _cut_inside_case_sealed(run_dir: Path, case: str) -> None:
    """Cut the run journal inside `case`'s `case_sealed` line (a torn last line)."""
    journal = run_dir / "journal" / "_run.jsonl"
    data = journal.read_bytes()
    journal.write_bytes(data[: data.index(f'"case_id":"{case}"'.encode())])


@pytest.mark.parametrize("sealed", [True, False], ids=["resealed", "left plain"])
def test_a_forged_judgment_with_its_commitment_cut_is_named(run_dir, sealed):
    case = _last_sealed(run_dir)
    _forge_judgment(run_dir, case, sealed=sealed)
    _cut_inside_case_sealed(run_dir, case)
    done = _cli("verify", run_dir)
    out = _named(done)
    assert done.returncode == 1, out
    assert any(case in line and "case_sealed" in line for line in done.stderr.splitlines()), out
    exported = _cli("export", run_dir)
    assert exported.returncode == 1 and case in exported.stderr, _named(exported)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["integrity"]["ok"] is False, summary["integrity"]


def test_a_deleted_sealed_case_journal_is_named_not_unstarted(run_dir):
    case = min(p.name for p in (run_dir / "journal").glob("*__*.jsonl.gz"))
    (run_dir / "journal" / case).unlink()
    case = case[: -len(".jsonl.gz")]
    done = _cli("verify", run_dir)
    out = _named(done)
    assert done.returncode == 1 and case in done.stderr and "missing" in done.stderr, out
    exported = _cli("export", run_dir)
    assert exported.returncode == 1 and case in exported.stderr, _named(exported)


def _pack_records(run_dir: Path) -> tuple[_Pack, list[str]]:
    pack = _Pack(run_dir / "raw" / "bodies.pack")
    pack.scan()
    return pack, list(pack.recipes)


def _span(pack: _Pack, number: int) -> tuple[int, int]:
    """Where record `number` lies in the pack (records are contiguous)."""
    start = 0 if number == 0 else (pack.records[number - 1].data_offset
                                   + pack.records[number - 1].data_length)
    return start, pack.records[number].data_offset + pack.records[number].data_length


def _cut_record(run_dir: Path, number: int) -> None:
    pack, _ = _pack_records(run_dir)
    path = run_dir / "raw" / "bodies.pack"
    data = path.read_bytes()
    start, end = _span(pack, number)
    path.write_bytes(data[:start] + data[end:])


def _truncate_pack(run_dir: Path) -> None:
    pack, names = _pack_records(run_dir)
    path = run_dir / "raw" / "bodies.pack"
    path.write_bytes(path.read_bytes()[: _span(pack, len(names) // 2)[0]])


def _listed(runs: Path) -> dict[str, str]:
    """`parquet-agent runs` as run id -> its whole line (it must succeed)."""
    done = _cli("runs", runs)
    assert done.returncode == 0, _named(done)
    _named(done)
    return {line.split()[0]: line for line in done.stdout.splitlines()[1:] if line.strip()}


def test_a_record_cut_out_of_the_pack_is_named_everywhere(run_dir):
    _cut_record(run_dir, 3)
    done = _cli("verify", run_dir)
    assert done.returncode == 1 and "bodies.pack" in done.stderr, _named(done)
    exported = _cli("export", run_dir)
    assert exported.returncode in (1, 2), _named(exported)
    judged = _cli("judge", run_dir, "--judge", "rubric", "--no-export")
    assert judged.returncode != 0 or "skipped" in judged.stdout, _named(judged)
    _named(judged)
    assert run_dir.name in _listed(run_dir.parent)  # listed (a listing does not verify)


@pytest.mark.parametrize("cut", [0, 1, 5, 10, 20, 40])
def test_any_record_cut_out_of_the_pack_is_a_problem_not_an_exception(run_dir, cut):
    from parquet_agent.explore.runs import RunStore
    from parquet_agent.store import RawStore

    _cut_record(run_dir, cut)
    reader = RawStore(run_dir, writable=False)
    for name in reader.names():  # every body reads or raises a named RunError
        try:
            reader.read(name)
        except Exception as exc:  # noqa: BLE001 - the kind is the point of the test
            from parquet_agent.errors import RunError

            assert isinstance(exc, RunError), (name, type(exc), exc)
    report = RunStore(run_dir.parent).open(run_dir.name).verify()
    assert not report.ok and not any("cannot be checked" in p for p in report.problems), \
        report.problems


def test_a_manifest_of_nested_brackets_is_named_everywhere(run_dir):
    (run_dir / "manifest.json").write_text("[" * 100_000)
    done = _cli("verify", run_dir)
    assert done.returncode == 1 and "manifest" in done.stderr, _named(done)
    for command in (["export", run_dir], ["judge", run_dir, "--judge", "rubric"],
                    ["judge", run_dir]):
        failed = _cli(*command)
        assert failed.returncode == 2 and "manifest" in failed.stderr, _named(failed)
    assert "broken" in _listed(run_dir.parent)[run_dir.name]


def test_a_truncated_pack_is_named_by_judge(run_dir):
    _truncate_pack(run_dir)
    judged = _cli("judge", run_dir, "--judge", "rubric", "--no-export")
    out = _named(judged)
    assert judged.returncode != 0 and "raw" in out, out
    done = _cli("verify", run_dir)
    assert done.returncode == 1, _named(done)


def test_one_broken_run_folder_is_listed_as_broken_beside_the_others(demo_run, tmp_path):
    runs = tmp_path / "runs"
    good = copy_run(demo_run, runs)
    for name, damage in (("brackets", lambda d: (d / "manifest.json").write_text("[" * 100_000)),
                         ("a-list", lambda d: (d / "manifest.json").write_text("[1, 2]")),
                         ("cut", lambda d: _cut_record(d, 3))):
        shutil.copytree(demo_run, runs / name, ignore=shutil.ignore_patterns(".lock"))
        damage(runs / name)
    audit = runs / "aud"
    (audit / "journal").mkdir(parents=True)
    old = Path(__file__).parents[1] / "audit" / "fixtures" / "audit-main-ce4e1e3"
    shutil.copy(old / "manifest.json", audit / "manifest.json")
    import gzip

    for name in ("journal/audit.jsonl", "findings.json"):
        (audit / name).write_bytes(gzip.decompress((old / f"{name}.gz").read_bytes()))
    listed = _listed(runs)
    assert set(listed) == {good.name, "brackets", "a-list", "cut", "aud"}, listed
    assert listed[good.name].split()[1:3] == ["experiment", "complete"], listed[good.name]
    assert listed["aud"].split()[1] == "audit" and "broken" not in listed["aud"], listed["aud"]
    for name in ("brackets", "a-list"):
        assert "broken" in listed[name], listed[name]
    assert listed["cut"].split()[1] == "experiment", listed["cut"]


@pytest.mark.parametrize("version", ["run-v1", "run-v2", "run-v3"])
def test_a_run_from_before_commitments_verifies_and_says_so(tmp_path, version):
    from parquet_agent.explore.runs import RunStore

    src = Path(__file__).parent / "fixtures" / version
    run_dir = copy_run(src, tmp_path)
    report = RunStore(tmp_path).open(run_dir.name).verify()
    assert report.ok, report.problems


def _rejudged(run_dir: Path) -> Path:
    """The run re-judged by the rubric through the command: its judging's journal."""
    done = _cli("judge", run_dir, "--judge", "rubric", "--no-export")
    assert done.returncode == 0, _named(done)
    journals = [p for p in (run_dir / "judgments").glob("*.jsonl")
                if not p.name.endswith(".batches.jsonl")]
    assert len(journals) == 1, journals
    return journals[0]


def test_a_forged_or_deleted_judging_is_named(run_dir):
    journal = _rejudged(run_dir)
    assert _cli("verify", run_dir).returncode == 0  # committed when the judging closed
    records = [json.loads(line) for line in journal.read_bytes().splitlines()]
    prev, out = "", []
    for record in records:  # a forger who knows the framing rewrites every chain
        record.pop("chain")
        if record["event"] == "judgment":
            record["correctness"] = 0.0 if record["correctness"] == 100.0 else 100.0
        line, prev = frame_line(record, prev)
        out.append(line + b"\n")
    original = journal.read_bytes()
    journal.write_bytes(b"".join(out))
    done = _cli("verify", run_dir)
    assert done.returncode == 1 and f"judgments/{journal.name}" in done.stderr, _named(done)
    journal.write_bytes(original)
    assert _cli("verify", run_dir).returncode == 0
    journal.unlink()
    done = _cli("verify", run_dir)
    assert done.returncode == 1 and "missing" in done.stderr, _named(done)


def test_a_crash_before_the_commitment_is_named_until_a_resume_records_it(run_dir):
    from parquet_agent.explore.runs import RunStore

    case = _last_sealed(run_dir)
    sealed = run_dir / "journal" / f"{case}.jsonl.gz"
    sealed.with_suffix("").write_bytes(unseal(sealed.read_bytes())[0])  # as a crash leaves it
    sealed.unlink()
    journal = run_dir / "journal" / "_run.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    # cut at the case's own commitment: matching its id as a substring would also cut a case
    # whose id it begins ("Q003__baseline__sql" in "Q003__baseline__sql+stream") sealed before it
    journal.write_bytes(b"".join(lines[: next(i for i, line in enumerate(lines)
                                               if json.loads(line).get("case_id") == case)]))
    report = RunStore(run_dir.parent).open(run_dir.name).verify()
    assert not report.ok and any(case in p and "resume records it" in p
                                 for p in report.problems), report.problems
    with RunStore(run_dir.parent).open(run_dir.name, writable=True) as run:
        assert run.record_commitments() == 1  # what Experiment's resume calls first
    report = RunStore(run_dir.parent).open(run_dir.name).verify()
    assert report.ok, report.problems
