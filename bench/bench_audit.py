"""Baseline auditor on planted copies of the sample: precision/recall/F1 per category.

    python bench/bench_audit.py --sample data/sample --work /tmp/bench-audit --rates 0.001 0.01 0.05

For each rate: plant the defects (seed 0) into a copy, audit the clean sample and the copy with
the blind and the reference baseline (same lineage, one findings store per variant), score the
copy's run against the manifest excluding the clean run's findings, and time each audit.
Prints one markdown table per variant and rate, and the wall-clock seconds per audit.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from parquet_agent.audit import AuditConfig, Auditor
from parquet_agent.audit.planter import plant
from parquet_agent.audit.scoring import score
from parquet_agent.files import claim_folder


def _f(x):
    return "–" if x is None else f"{x:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sample", type=Path, default=Path("data/sample"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench-audit"))
    parser.add_argument("--rates", type=float, nargs="+", default=[0.001, 0.01, 0.05])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    variants = {"blind": {"provider": "audit-baseline", "variant": "blind"},
                "reference": {"provider": "audit-baseline", "variant": "reference",
                              "reference": str(args.sample)}}
    # --work is new, empty or an earlier run's of this script (only its own entries replaced)
    claim_folder(args.work, "bench/bench_audit.py", clear=[
        name for v in variants for name in (f"{v}.sqlite", f"{v}-clean",
                                            *(f"{v}-{r}" for r in args.rates))]
        + [f"planted-{r}" for r in args.rates])
    for variant, model in variants.items():
        config = AuditConfig(lineage="sample", model=model)
        store = args.work / f"{variant}.sqlite"
        started = time.perf_counter()
        clean = Auditor(config, store=store).run(args.sample, run_dir=args.work / f"{variant}-clean")
        print(f"\n{variant}: clean audit {time.perf_counter() - started:.1f} s, "
              f"{len(clean.findings)} pre-existing findings")
        for rate in args.rates:
            copy = args.work / f"planted-{rate}"
            if not copy.exists():
                plant(args.sample, copy, seed=args.seed, rate=rate)
            started = time.perf_counter()
            run_dir = args.work / f"{variant}-{rate}"
            report = Auditor(config, store=store).run(copy, run_dir=run_dir)
            seconds = time.perf_counter() - started
            from parquet_agent.audit.scoring import load_manifest

            result = score(report, load_manifest(copy), clean=clean)
            print(f"\n### {variant}, rate {rate:g} ({seconds:.1f} s, {len(report.steps)} steps)\n")
            print("| category | defects | found | findings | precision | recall | F1 |")
            print("|---|---|---|---|---|---|---|")
            for name, row in [*result.per_category.items(), ("**overall**", result.overall)]:
                print(f"| {name} | {row['defects']} | {row['found']} | {row['findings']} | "
                      f"{_f(row['precision'])} | {_f(row['recall'])} | {_f(row['f1'])} |")


if __name__ == "__main__":
    main()
