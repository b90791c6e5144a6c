"""What one flipped bit costs in a real run folder, and what each way of containing it costs.

    .venv/bin/python bench/bench_pack_damage.py RUN_DIR [--repeat 5]

RUN_DIR is a finished run (e.g. `parquet-agent demo --runs /tmp/runs`). Reported, from one
process:

- pack bytes of the run's bodies as stored (per-case deflate window + chunk dedup, the format
  since issue 3), and what two alternatives that stop damage from spreading would store for the
  same bodies in the same order: each record deflated alone (the fixed dictionary only, no case
  window), and that plus a second copy of every chunk more than one body uses (so a damaged
  record no longer costs the bodies reusing its chunks). Both computed exactly from the pack's
  own records (same chunks, same deflate settings), not written;
- sealed journal bytes: plain gzip (before) vs gzip with the whole-file CRC field (now);
- the bodies written again into a fresh store (wall and CPU, fdatasync included), read back
  (open + read every body) and verified, medians of `--repeat`;
- the same read and verify with one flipped bit in the middle of the largest record, and the
  cost of finding the bit (`repair_record`) per KiB of record.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import shutil
import statistics
import tempfile
import time
import zlib
from pathlib import Path

from parquet_agent.store.blobs import RawStore, _Pack, _ReadFd
from parquet_agent.store.packformat import HEADER, deflate_dictionary, expand_numbers


def _deflated(data: bytes, window: bytes = b"") -> int:
    if not data:
        return 0
    comp = zlib.compressobj(6, zlib.DEFLATED, -15, 9, zlib.Z_DEFAULT_STRATEGY,
                            deflate_dictionary(window))
    return min(len(comp.compress(data) + comp.flush()), len(data))


def pack_alternatives(pack_path: Path) -> dict[str, int]:
    """Bytes of the pack as stored, with each record deflated alone, and with second copies."""
    pack = _Pack(pack_path)
    pack.scan()
    names = list(pack.recipes)
    users: dict[int, int] = {}
    copies: dict[int, list[int]] = {}  # record -> chunks whose second user it is
    for number, recipe in enumerate(pack.recipes.values()):
        for chunk in dict.fromkeys(expand_numbers(recipe["c"])):
            users[chunk] = users.get(chunk, 0) + 1
            if users[chunk] == 2:
                copies.setdefault(number, []).append(chunk)
    alone = second = 0
    with _ReadFd(pack_path) as fd:
        for number, name in enumerate(names):
            record = pack.records[number]
            overhead = record.data_offset - (0 if number == 0 else pack.records[number - 1]
                                             .data_offset + pack.records[number - 1].data_length)
            new = pack.decoded(fd, number)
            extra = b"".join(pack.chunk(fd, c) for c in copies.get(number, ()))
            alone += overhead + _deflated(new)
            # the recipe would also list the copied chunks' numbers: ~4 bytes each
            second += overhead + 4 * len(copies.get(number, ())) + _deflated(new + extra)
    return {"stored": pack_path.stat().st_size, "each record alone": alone,
            "alone + second copies of shared chunks": second}


def _median_ms(fn, repeat: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append((time.perf_counter() - wall) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
    return statistics.median(walls), statistics.median(cpus)


def _read_all(run_dir: Path) -> None:
    store = RawStore(run_dir, writable=False)
    for name in store.names():
        store.read(name)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    source = RawStore(args.run_dir, writable=False)
    bodies = [(name[len("raw/"):], source.read(name)) for name in source.names()]
    print(f"run: {args.run_dir}  bodies: {len(bodies)}  "
          f"logical bytes: {sum(len(b) for _, b in bodies):,}")
    for label, size in pack_alternatives(args.run_dir / "raw" / "bodies.pack").items():
        print(f"bodies.pack, {label:40s} {size:>10,} B")
    journals = sorted((args.run_dir / "journal").glob("*.jsonl.gz"))
    plain = sum(len(gzip.compress(gzip.decompress(p.read_bytes()), 9, mtime=0)) for p in journals)
    try:
        from parquet_agent.store.sealing import seal
        sealed = sum(len(seal(gzip.decompress(p.read_bytes()))) for p in journals)
        print(f"{len(journals)} sealed journals: plain gzip {plain:,} B, with the repair field "
              f"{sealed:,} B (+{sealed - plain} B)")
    except ImportError:
        print(f"{len(journals)} sealed journals: plain gzip {plain:,} B")

    work = Path(tempfile.mkdtemp(prefix="bench-pack-damage-"))
    try:
        def write_all() -> None:
            shutil.rmtree(work / "w", ignore_errors=True)
            store = RawStore(work / "w")
            for name, data in bodies:
                store.write(name, data)
            store.close()

        wall, cpu = _median_ms(write_all, args.repeat)
        digest = hashlib.sha256((work / "w" / "raw" / "bodies.pack").read_bytes()).hexdigest()
        print(f"write every body into a fresh store: {wall:8.1f} ms wall, {cpu:7.1f} ms CPU "
              f"(pack sha256 {digest[:16]})")
        wall, cpu = _median_ms(lambda: _read_all(work / "w"), args.repeat)
        print(f"open + read every body, intact:      {wall:8.1f} ms wall, {cpu:7.1f} ms CPU")
        wall, cpu = _median_ms(lambda: RawStore(work / "w", writable=False).verify(), args.repeat)
        print(f"verify the raw store, intact:        {wall:8.1f} ms wall, {cpu:7.1f} ms CPU")
        pack_path = work / "w" / "raw" / "bodies.pack"
        pack = _Pack(pack_path)
        pack.scan()
        largest = max(range(len(pack.records)), key=lambda n: pack.records[n].data_length)
        record = pack.records[largest]
        data = bytearray(pack_path.read_bytes())
        data[record.data_offset + record.data_length // 2] ^= 0x10
        pack_path.write_bytes(bytes(data))
        try:
            wall, cpu = _median_ms(lambda: _read_all(work / "w"), args.repeat)
            print(f"open + read every body, 1 bit flipped: {wall:6.1f} ms wall, {cpu:7.1f} ms CPU "
                  f"(largest record: {record.data_length:,} B)")
        except Exception as exc:  # noqa: BLE001 - the code before the repair loses bodies
            print(f"open + read every body, 1 bit flipped: fails ({type(exc).__name__}: "
                  f"{str(exc)[:100]})")
        problems = RawStore(work / "w", writable=False).verify()
        print(f"verify with 1 bit flipped: {len(problems)} problem(s): {problems[:1]}")
        try:
            from parquet_agent.store.packformat import repair_record
        except ImportError:
            return
        start = next(pos for pos in range(record.data_offset - 1, -1, -1)
                     if data[pos:pos + 1] == b"B" and pos + HEADER.size +
                     HEADER.unpack_from(data, pos)[1] == record.data_offset)
        size = record.data_offset + record.data_length - start
        wall, _ = _median_ms(lambda: repair_record(data, start), args.repeat)
        print(f"finding the bit in a {size:,} B record: {wall:.2f} ms "
              f"({wall / (size / 1024):.3f} ms per KiB)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
