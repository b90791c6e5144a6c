"""Generated multi-table data with planted structural defects, and its ground truth.

    manifest = generate(clean_dir, planted_dir, seed=0, scale=1.0)

Writes the same four related tables twice, clean and planted (one Parquet file per table, so a
folder of differently-shaped files: one view per table): `stations` (id, name, lat, lon, time
zone), `carriers` (code, name), `readings` (an hourly series per station: min <= max
temperatures), `flights` (id, carrier code and name, origin station, scheduled and actual
HHMM departure and the delay between them, distance). Then plants, on disjoint rows of the
planted copy, the defects the discovery rules are for: a duplicated key, orphan references,
a code given another name (an FD violation), swapped latitude/longitude, sign-flipped
longitudes, hours missing from the series, an hour written twice (a daylight-saving repeat),
departures after midnight whose delay is off by a day (next-day wraps), min > max, and a
distance scaled by 1,000. The manifest (`planted-defects.json`, the planter's schema_version 1,
each defect with its `view`) is what `audit.scoring.score` reads; deleted rows (missing hours)
have no row keys, only their view.
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from parquet_agent.audit.planter import MANIFEST, SCHEMA_VERSION
from parquet_agent.errors import UsageError
from parquet_agent.files import atomic_write_bytes

CARRIERS = {"AA": "American Airlines", "DL": "Delta Air Lines", "UA": "United Air Lines",
            "WN": "Southwest Airlines", "B6": "JetBlue Airways", "AS": "Alaska Airlines",
            "NK": "Spirit Air Lines", "F9": "Frontier Airlines", "HA": "Hawaiian Airlines",
            "G4": "Allegiant Air"}


def _tables(rng: random.Random, scale: float) -> dict[str, list[dict[str, Any]]]:
    n_stations, hours, n_flights = 200, max(240, int(720 * scale)), max(200, int(20_000 * scale))
    stations = []
    for i in range(n_stations):
        lon = round(rng.uniform(-124.0, -68.0), 4)
        stations.append({"station_id": f"S{i:04d}", "name": f"Station {i}",
                         "lat": round(rng.uniform(25.0, 49.0), 4), "lon": lon,
                         "tz": round(lon / 15.0)})
    carriers = [{"code": c, "name": n} for c, n in CARRIERS.items()]
    start = datetime(2024, 3, 1)
    readings = []
    for s in stations[:max(5, int(10 * min(scale, 5.0)))]:
        base = rng.uniform(-5, 25)
        for h in range(hours):
            low = round(base + rng.gauss(0, 4), 1)
            readings.append({"station_id": s["station_id"], "time": start + timedelta(hours=h),
                             "temp_min": low, "temp_max": round(low + rng.uniform(0.5, 9), 1)})
    flights = []
    for i in range(n_flights):
        code = rng.choice(list(CARRIERS))
        sched = rng.randrange(5 * 60, 21 * 60)
        delay = int(rng.expovariate(1 / 15)) - 5
        dep = sched + delay
        flights.append({"flight_id": 100000 + i, "carrier": code, "carrier_name": CARRIERS[code],
                        "origin": rng.choice(stations)["station_id"],
                        "sched_dep": (sched // 60) * 100 + sched % 60,
                        "dep": (dep // 60) * 100 + dep % 60, "dep_delay": delay,
                        "distance": round(rng.lognormvariate(6.5, 0.6))})
    return {"stations": stations, "carriers": carriers, "readings": readings, "flights": flights}


def _defect(id_: str, category: str, view: str, columns: list[str], operation: str,
            rows: list[int], table: str, seed: int) -> dict[str, Any]:
    file = f"{table}.parquet"
    return {"id": id_, "category": category, "columns": columns, "operation": operation,
            "rows": [[file, r] for r in sorted(rows)], "files": [file], "view": view, "seed": seed}


def _plant(tables: dict[str, list[dict]], rng: random.Random, rate: float, seed: int) -> list[dict]:
    f, st, rd = tables["flights"], tables["stations"], tables["readings"]
    k = max(2, round(rate * len(f)))
    free = list(range(len(f)))
    rng.shuffle(free)
    take = lambda n: [free.pop() for _ in range(n)]  # noqa: E731
    out = []
    rows = take(k)
    for r in rows:
        f[r]["flight_id"] = f[free[-1 - r % 50]]["flight_id"]
    copied = sorted({i for i, x in enumerate(f) if x["flight_id"] in {f[r]["flight_id"] for r in rows}})
    free[:] = [x for x in free if x not in copied]
    out.append(_defect("duplicate_key", "uniqueness", "flights", ["flight_id"],
                       "flight_id copied from another flight", copied, "flights", seed))
    rows = take(k)
    for j, r in enumerate(rows):
        f[r]["origin"] = f"X{j % 3:04d}"
    out.append(_defect("orphan_origin", "referential", "flights", ["origin"],
                       "origin set to a station id absent from stations", rows, "flights", seed))
    rows = take(k)
    for r in rows:
        f[r]["carrier_name"] = f[r]["carrier_name"].upper()
    out.append(_defect("fd_violation", "consistency", "flights", ["carrier", "carrier_name"],
                       "carrier_name respelled for some rows of its carrier", rows, "flights", seed))
    rows = take(k)
    for r in rows:
        sched = (f[r]["sched_dep"] // 100) * 60 + f[r]["sched_dep"] % 100
        dep = (sched + f[r]["dep_delay"] + 1440 - 60 * 22) % 1440  # left after midnight
        f[r]["dep_delay"] = dep + 1440 - sched
        f[r]["dep"] = (dep // 60) * 100 + dep % 60
    out.append(_defect("next_day_wrap", "consistency", "flights", ["dep", "dep_delay", "sched_dep"],
                       "departed after midnight: dep wraps, dep_delay counts the day", rows, "flights", seed))
    rows = take(max(1, k // 20))
    for r in rows:
        f[r]["distance"] *= 1000
    out.append(_defect("scaled_distance", "range", "flights", ["distance"],
                       "distance multiplied by 1000", rows, "flights", seed))
    picks = rng.sample(range(len(st)), 4)
    for r in picks[:2]:
        st[r]["lat"], st[r]["lon"] = st[r]["lon"], st[r]["lat"]
    out.append(_defect("swapped_lat_lon", "consistency", "stations", ["lat", "lon"],
                       "lat and lon swapped", picks[:2], "stations", seed))
    for r in picks[2:]:
        st[r]["lon"] = -st[r]["lon"]
    out.append(_defect("sign_flip_lon", "range", "stations", ["lon"], "lon sign-flipped",
                       picks[2:], "stations", seed))
    k_series = max(2, round(rate * len(rd)))
    hours = sum(1 for r in rd if r["station_id"] == rd[0]["station_id"])
    order = [i for i in range(len(rd)) if 0 < i % hours < hours - 1]  # holes inside a series
    rng.shuffle(order)
    minmax = [order.pop() for _ in range(k_series)]
    for r in minmax:
        rd[r]["temp_min"], rd[r]["temp_max"] = rd[r]["temp_max"], rd[r]["temp_min"]
    gone = set(order[:k_series])
    repeated = order[k_series]
    kept = [r for i, r in enumerate(rd) if i not in gone]
    index = {id(r): i for i, r in enumerate(kept)}
    kept.append(dict(rd[repeated]))
    tables["readings"] = kept
    out.append(_defect("min_above_max", "consistency", "readings", ["temp_max", "temp_min"],
                       "temp_min and temp_max swapped", [index[id(rd[r])] for r in minmax],
                       "readings", seed))
    out.append(_defect("missing_hours", "coverage", "readings", ["station_id", "time"],
                       f"{len(gone)} hourly rows deleted", [], "readings", seed))
    out.append(_defect("repeated_hour", "uniqueness", "readings", ["station_id", "time"],
                       "an hour written twice", [index[id(rd[repeated])], len(kept) - 1],
                       "readings", seed))
    return out


def _write(folder: Path, tables: dict[str, list[dict]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in tables.items():
        pq.write_table(pa.Table.from_pylist(rows), folder / f"{name}.parquet")


def generate(clean: str | Path, planted: str | Path, *, seed: int = 0, scale: float = 1.0,
             rate: float = 0.002) -> dict[str, Any]:
    """Write the clean and the planted copy; return (and write beside the copy) the manifest."""
    clean, planted = Path(clean), Path(planted)
    for folder in (clean, planted):
        if folder.exists() and any(folder.iterdir()):
            raise UsageError(f"{folder} is not empty; generate into new folders")
    _write(clean, _tables(random.Random(seed), scale))
    tables = _tables(random.Random(seed), scale)
    defects = _plant(tables, random.Random(seed + 1), rate, seed)
    _write(planted, tables)
    manifest = {"schema_version": SCHEMA_VERSION, "source": "generated (audit.structural)",
                "seed": seed, "rate": rate, "scale": scale, "defects": defects}
    atomic_write_bytes(planted / MANIFEST, json.dumps(manifest, indent=1, default=str).encode())
    return manifest
