"""Open a case whose answer is a megabyte of control and bidi characters in report.html.

    .venv/bin/python bench/bench_report_hostile.py --work /tmp/bench-hostile [--loads 3]
    PYTHONPATH=OTHER_CHECKOUT python bench/bench_report_hostile.py --work W --export-only

Steps (the run is reused when it exists under --work):
1. a one-question run against the fake OpenAI server (official SDK, recording transport, real
   run folder) whose answer is a spreadsheet formula followed by 1,000,000 characters drawn
   from eight control, bidi and zero-width characters and two letters (a random kilobyte
   repeated: as costly to lay out as random text, cheap to seal; `--random` draws all of it);
2. `export_run` with the checkout this process imports (`--export-only` stops here, to export
   with another checkout's code by PYTHONPATH and time that report);
3. report.html opened from file:// in headless Debian Chromium (Playwright), `--loads` times:
   the time from the click on the case's row to its six sections laid out (`--timeout` caps one
   load; a load past it is reported as that cap, not as its real time).

Prints one JSON object for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO))  # tests.*; a PYTHONPATH checkout comes first
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ODD = [chr(c) for c in (0x01, 0x07, 0x08, 0x1B, 0x7F, 0x202E, 0x200B, 0x2066)]


def answer_text(full_random: bool) -> str:
    rng = random.Random(7)
    draw = lambda n: "".join(rng.choice(ODD + ["A", "b"]) for _ in range(n))  # noqa: E731
    body = draw(1_000_000) if full_random else draw(1000) * 1000
    return '=HYPERLINK("http://evil.example/","open me")' + body


def make_run(work: Path, full_random: bool) -> Path:
    from parquet_agent.experiment.runner import Experiment
    from parquet_agent.models.fakes import FakeReply, openai_server
    from tests.engine.grid import write_config
    from tests.harness_corpus import make_harness_corpus

    run_dir = work / "runs" / "hostile"
    if (run_dir / "manifest.json").exists():
        return run_dir
    answer = answer_text(full_random)

    def script(request):
        user = next((m["content"] for m in (request.json or {}).get("messages", [])
                     if m.get("role") == "user"), "")
        return FakeReply(text="OK" if "single word" in user else answer)

    corpus = make_harness_corpus(work / "corpus")
    with openai_server(script) as server:
        config = write_config(work / "c.toml", corpus, work / "runs", server.url)
        text = config.read_text().replace('strategies = ["sql", "sql+stream"]',
                                          'strategies = ["sql"]')
        config.write_text('sample = { ids = ["Q001"] }\n' + text)
        Experiment.from_toml(config, env={"FAKE_OPENAI_KEY": "sk-bench"}, progress=False
                             ).run(run_dir)
    return run_dir


def open_case(report: Path, loads: int, timeout_s: float) -> list[float]:
    from playwright.sync_api import sync_playwright

    times = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        for _ in range(loads):
            page = browser.new_page()
            page.goto(report.as_uri())
            page.wait_for_selector("html[data-ready='1']")
            row = page.locator("tr.case").first
            case = row.get_attribute("data-case-id")
            start = time.perf_counter()
            row.click()
            try:
                page.wait_for_selector(f'tr.detail[data-detail-for="{case}"] '
                                       'section[data-section="6"]', timeout=timeout_s * 1000)
                page.evaluate("() => document.body.offsetHeight")  # laid out, not only built
                times.append(round(time.perf_counter() - start, 3))
            except Exception:  # noqa: BLE001 - past the cap: reported as the cap
                times.append(timeout_s)
            page.close()
        browser.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--loads", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--random", action="store_true")
    parser.add_argument("--export-only", action="store_true")
    args = parser.parse_args()
    import parquet_agent
    from parquet_agent.report.exporter import export_run

    run_dir = make_run(args.work, args.random)
    started = time.perf_counter()
    report = export_run(run_dir).report
    out = {"command": " ".join(sys.argv), "export_s": round(time.perf_counter() - started, 2),
           "report_bytes": report.stat().st_size, "exported_by": str(Path(parquet_agent.__file__).parent)}
    if not args.export_only:
        times = open_case(report, args.loads, args.timeout)
        out.update(open_case_s=times, median_s=statistics.median(times),
                   load_average=os.getloadavg())
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
