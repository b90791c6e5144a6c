"""What the credential scrub (`models.scrub.Scrubber`, issue 24 item 2) costs per body.

    .venv/bin/python bench/bench_scrub.py [--mib 1] [--keys 3] [--repeat 5]

Three 1 MiB bodies (the size of a late request of a long case): random printable text inside a
JSON string, the same text JSON-encoded twice (a tool result inside a request inside a record:
a backslash every few bytes, the scrub's worst realistic case), and `\\"` repeated (every byte a
candidate). Reported: the median wall time of `Scrubber.bytes` over each, with `--keys` keys
known (a run knows every model's and the judge's key), and with one key.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import string
import time

from parquet_agent.models.scrub import Scrubber


def _bodies(size: int) -> dict[str, bytes]:
    rng = random.Random(2)
    text = "".join(rng.choice(string.printable) for _ in range(size))
    return {
        "printable in JSON": json.dumps({"messages": [{"content": text}]}).encode()[:size],
        "JSON of JSON": json.dumps(json.dumps({"a": text})).encode()[:size],
        "backslash-quote": (b'\\"' * size)[:size],
    }


def _keys(n: int) -> list[str]:
    rng = random.Random(1)
    alphabet = string.ascii_letters + string.digits
    return [f"sk-{i}-" + "".join(rng.choice(alphabet) for _ in range(48)) for i in range(n)]


def _median_ms(scrubber: Scrubber, data: bytes, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        scrubber.bytes(data)
        times.append((time.perf_counter() - t0) * 1000.0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mib", type=float, default=1.0)
    parser.add_argument("--keys", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    size = int(args.mib * 1024 * 1024)
    keys = _keys(args.keys)
    t0 = time.perf_counter()
    many = Scrubber(keys)
    build_ms = (time.perf_counter() - t0) * 1000.0
    one = Scrubber(keys[:1])
    print(f"body {size} bytes; building the scrubber for {args.keys} keys: {build_ms:.1f} ms")
    for name, data in _bodies(size).items():
        print(f"{name:20s} {args.keys} keys: {_median_ms(many, data, args.repeat):7.1f} ms   "
              f"1 key: {_median_ms(one, data, args.repeat):7.1f} ms")


if __name__ == "__main__":
    main()
