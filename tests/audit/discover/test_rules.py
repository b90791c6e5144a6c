"""Each discovery rule family on generated related tables: every planted structural defect is
found with the right columns, and the clean copy gives no reported candidate."""

from __future__ import annotations

import pytest

from parquet_agent.audit.structural import generate
from tests.audit.discover.conftest import reported, run_discovery


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    root = tmp_path_factory.mktemp("structural")
    manifest = generate(root / "clean", root / "planted", seed=3, scale=0.1, rate=0.002)
    return root, manifest, run_discovery(root / "clean"), run_discovery(root / "planted")


def test_the_clean_tables_give_no_reported_candidate(tables):
    _, _, clean, _ = tables
    assert [c.title for c in reported(clean)] == []
    refs = {(r.source, r.column, r.target, r.key) for r in clean.references}
    assert ("flights", "origin", "stations", "station_id") in refs
    assert ("flights", "carrier", "carriers", "code") in refs


@pytest.mark.parametrize("rule, view, columns, words", [
    ("keys.duplicates", "flights", ["flight_id"], "duplicated"),
    ("references.orphans", "flights", ["origin"], "absent"),
    ("fds.violations", "flights", ["carrier", "carrier_name"], "carrier -> carrier_name"),
    ("crosscolumn.arithmetic", "flights", ["dep", "dep_delay", "sched_dep"], "off by exactly 1440"),
    ("outliers.isolated", "flights", ["distance"], "isolated above"),
    ("crosscolumn.swaps", "stations", ["lat", "lon"], "swapped"),
    ("outliers.isolated", "stations", ["lon"], "isolated above"),
    ("order.violations", "readings", ["temp_max", "temp_min"], "temp_min > temp_max"),
    ("timeseries.gaps", "readings", ["station_id", "time"], "missing step"),
    ("timeseries.repeats", "readings", ["station_id", "time"], "repeated"),
])
def test_each_planted_defect_is_found(tables, rule, view, columns, words):
    _, _, _, planted = tables
    hits = [c for c in reported(planted, rule)
            if c.arguments["view"] == view and c.arguments["columns"] == columns]
    assert hits, [c.title for c in reported(planted)]
    assert words in hits[0].title


def test_the_auditor_commits_them_and_scores_them(tables, tmp_path):
    """Through the whole audit (gate-computed evidence, scoring against the manifest): every
    planted structural defect found, and every finding is a planted defect (the respelled
    carrier names are said once, as the broken carrier -> carrier_name dependency)."""
    from parquet_agent.audit import AuditConfig, Auditor
    from parquet_agent.audit.scoring import score

    root, manifest, _, _ = tables
    config = AuditConfig(lineage="structural", max_steps=200, max_tool_calls=200)
    clean = Auditor(config, store=tmp_path / "f.sqlite").run(root / "clean", run_dir=tmp_path / "a0")
    report = Auditor(config, store=tmp_path / "f.sqlite").run(root / "planted", run_dir=tmp_path / "a1")
    result = score(report, manifest, clean=clean)
    assert result.overall["recall"] == 1.0, result.table()
    assert result.overall["precision"] >= 0.9, result.table()
    wrong = [f.title for f in report.findings if f.key not in result.excluded
             and not result.matches.get(f.key)]
    assert wrong == [], wrong


def test_zeros_of_a_nonnegative_column_are_no_lower_tail_but_a_flipped_sign_is(tmp_path):
    """Six empty texts with 0 characters among lengths near 2,600 are not 'isolated below'
    (their emptiness is its own finding); six lengths with their sign flipped are."""
    import random

    from tests.audit.discover.conftest import write_tables

    rng = random.Random(1)
    rows = [{"doc": i, "char_count": int(rng.gauss(2600, 300))} for i in range(120)]
    for i in range(0, 60, 10):
        rows[i]["char_count"] = 0
    zeros = run_discovery(write_tables(tmp_path / "zeros", {"docs": rows}))
    assert [c.title for c in reported(zeros, "outliers.isolated")] == []
    for i in range(0, 60, 10):
        rows[i]["char_count"] = -2600 - i
    flipped = run_discovery(write_tables(tmp_path / "flipped", {"docs": rows}))
    assert [c.title for c in reported(flipped, "outliers.isolated")] == [
        "char_count isolated below its other values in data (sign flipped?)"]


def test_ids_and_a_population_of_its_own_are_not_isolated_values(tmp_path):
    """Ids added later (9001..) are names, not measurements; three islands far east of every
    other station are every row of their region (noted); the same three rows in the mainland's
    region are isolated values (reported)."""
    import random

    from tests.audit.discover.conftest import write_tables

    rng = random.Random(2)
    rows = [{"station_id": i + 1, "region": ["North", "South"][i % 2], "lon": rng.gauss(-90, 8)}
            for i in range(197)]
    rows += [{"station_id": 9001 + k, "region": "Islands", "lon": 144.7 + k / 2} for k in range(3)]
    found = run_discovery(write_tables(tmp_path / "islands", {"stations": rows}))
    assert [c.title for c in reported(found, "outliers.isolated")] == []
    noted = [c for c in found.candidates if c.rule == "outliers.isolated"]
    assert [(c.arguments["columns"], c.support["explained_by"]) for c in noted] == [
        (["lon"], "its rows are alone in their region")]
    for row in rows[-3:]:
        row["region"] = "North"
    mixed = run_discovery(write_tables(tmp_path / "mixed", {"stations": rows}))
    assert [c.title for c in reported(mixed, "outliers.isolated")] == [
        "lon isolated above its other values in data"]


def test_a_rare_category_is_reported_only_when_it_respells_a_frequent_one(tmp_path):
    """Guam in 2 of 300 rows is a valid country; 'united  states' and 'CANADA' respell
    frequent ones. A code with digits keeps its punctuation: '10' is not '1.0'."""
    import duckdb

    from tests.audit.discover.conftest import write_tables

    countries = ["United States"] * 250 + ["Canada"] * 40 + ["Guam"] * 2 \
        + ["united  states"] * 3 + ["CANADA"] * 5
    rows = [{"country": c, "version": "10" if i % 100 == 0 else "1.0", "grade": "a1" if i == 7 else "A1"}
            for i, c in enumerate(countries)]
    folder = write_tables(tmp_path / "places", {"places": rows})
    found = run_discovery(folder)
    hits = reported(found, "variants.respellings")
    assert [c.title for c in hits] == ["country respells a frequent value in data",
                                       "grade respells a frequent value in data"]
    con = duckdb.connect()
    con.execute(f"CREATE VIEW data AS SELECT * FROM '{folder}/places.parquet'")
    counts = [con.execute(f"SELECT count(*) FROM data WHERE {c.arguments['predicate']}").fetchone()[0]
              for c in hits]
    assert counts == [8, 1]


def test_a_word_standing_in_for_numbers_is_reported_but_codes_of_another_shape_are_not(tmp_path):
    """'nil' in 2 % of a sensor's readings is a missing value in disguise; 'T3' among ranks
    and postal codes with letters are codes, not stand-ins."""
    from tests.audit.discover.conftest import write_tables

    rows = [{"isig": "nil" if i % 50 == 0 else f"{15 + i % 40 / 7:.2f}",
             "rank": f"T{i % 9}" if i % 30 == 0 else str(i % 9 + 1),
             "postal": f"K{i % 9}A 0B{i % 7}" if i % 25 == 0 else f"{10000 + i * 7}"} for i in range(500)]
    found = run_discovery(write_tables(tmp_path / "cgm", {"cgm": rows}))
    hits = reported(found, "placeholders.words")
    assert [(c.title, c.support["words"]) for c in hits] == [
        ("isig holds words among numbers in data", ["nil"])]


def test_rows_loaded_twice_are_reported_where_they_carry_identifiers(tmp_path):
    """Four all-star rows loaded twice (player and game ids repeated with them) are a finding the
    gate commits with their 8 rows; repeated rows of a few measured lengths and a postal code
    (a code of a place, not of the row's entity) are only noted."""
    import random

    from parquet_agent.audit import AuditConfig, Auditor
    from tests.audit.discover.conftest import write_tables

    rows = [{"playerID": f"p{i:04d}", "yearID": 1930 + i % 60, "gameID": f"G{1930 + i % 60}07",
             "GP": i % 2, "startingPos": i % 9 or None} for i in range(400)]
    rows += [dict(rows[i]) for i in range(0, 4)]
    folder = write_tables(tmp_path / "allstar", {"allstar": rows})
    found = run_discovery(folder)
    assert [c.title for c in reported(found, "keys.repeated_rows")] == ["rows repeated in full in data"]
    # playerID, a near-key repeated only by those rows, is the same defect: noted, not reported
    assert [c.title for c in reported(found, "keys.duplicates")] == []
    assert [c.support["explained_by"] for c in found.candidates if c.rule == "keys.duplicates"] == [
        "rows repeated in full in data"]
    report = Auditor(AuditConfig(max_steps=60), store=tmp_path / "f.sqlite").run(
        folder, run_dir=tmp_path / "run")
    repeated = [f for f in report.findings if f.title == "rows repeated in full in data"]
    assert [(f.category, f.evidence.count) for f in repeated] == [("uniqueness", 8)]

    rng = random.Random(0)
    lengths = [{"sepal": round(rng.gauss(5.8, 0.4), 1), "petal": round(rng.gauss(3.7, 0.8), 1),
                "species": ["setosa", "versicolor", "virginica"][i % 3],
                "postal_code": 92000 + i % 12} for i in range(150)]  # a code, but of a place
    coincidence = run_discovery(write_tables(tmp_path / "lengths", {"lengths": lengths}))
    noted = [c for c in coincidence.candidates if c.rule == "keys.repeated_rows"]
    assert noted and not any(c.report for c in noted)


def test_a_longitude_outside_its_time_zone_band_is_a_consistency_finding(tmp_path):
    """Each time zone holds its airports' longitudes in a band of its own; three New York
    airports whose longitude lost its sign break it (said once: not also as isolated values);
    the same airports with their signs right give nothing."""
    import random

    from tests.audit.discover.conftest import write_tables

    rng = random.Random(4)
    zones = {"America/New_York": -77, "America/Chicago": -90, "America/Denver": -105,
             "America/Los_Angeles": -119}
    rows = [{"faa": f"A{i:03d}", "tzone": zone, "lon": round(centre + rng.uniform(-4, 4), 3),
             "alt": rng.randint(0, 3000)}
            for i, (zone, centre) in enumerate(list(zones.items()) * 60)]
    clean = run_discovery(write_tables(tmp_path / "clean", {"airports": rows}))
    assert [c.title for c in reported(clean)] == []
    for i in (0, 4, 8):  # New York airports
        rows[i]["lon"] = -rows[i]["lon"]
    flipped = run_discovery(write_tables(tmp_path / "flipped", {"airports": rows}))
    assert [(c.rule, c.arguments["columns"]) for c in reported(flipped)] == [
        ("groups.range", ["lon", "tzone"])]


def test_two_near_equal_measurements_do_not_set_each_other(tmp_path):
    """Two park factors (44 integer values each, nearly equal) are measurements, not a category
    and its band: early seasons where they differ by 10 are no defect."""
    import random

    from tests.audit.discover.conftest import write_tables

    rng = random.Random(5)
    rows = []
    for i in range(600):
        bpf = rng.randint(88, 112) if i > 20 else rng.randint(60, 129)
        rows.append({"yearID": 1871 + i // 5, "BPF": bpf, "PPF": bpf + (rng.randint(-12, 12) if i <= 20 else rng.randint(-1, 1))})
    found = run_discovery(write_tables(tmp_path / "teams", {"teams": rows}))
    assert [c.title for c in reported(found, "groups.range")] == []


def test_narrow_bands_that_most_categories_share_set_nothing(tmp_path):
    """Altitudes by time zone: most zones' airports sit low (one shared band), the mountain zone
    high; an airport at 7,000 ft in the Pacific zone is a mountain airport, not a defect."""
    import random

    from tests.audit.discover.conftest import write_tables

    rng = random.Random(6)
    zones = {"America/New_York": 400, "America/Chicago": 600, "America/Los_Angeles": 500,
             "America/Denver": 5500}
    rows = [{"tzone": zone, "alt": int(rng.gauss(centre, 150))}
            for zone, centre in list(zones.items()) * 80]
    rows[2]["alt"] = 7100  # Mammoth Yosemite, America/Los_Angeles
    found = run_discovery(write_tables(tmp_path / "alt", {"airports": rows}))
    assert [c.title for c in reported(found, "groups.range")] == []


def test_a_value_in_another_categorys_band_is_no_defect(tmp_path):
    """Seats by engines: a two-engine 777's 400 seats are far from the two-engine band but in the
    four-engine one; a two-engine plane with 4,000 seats is in no band."""
    import random

    from tests.audit.discover.conftest import write_tables

    rng = random.Random(7)
    rows = [{"engines": engines, "seats": int(rng.gauss(centre, spread))}
            for engines, centre, spread in [(1, 6, 2), (2, 165, 20), (4, 420, 25)] * 100]
    for i in (1, 4, 7):  # three 777s among the two-engine planes
        rows[i]["seats"] = 395 + i
    found = run_discovery(write_tables(tmp_path / "planes", {"planes": rows}))
    assert [c.title for c in reported(found, "groups.range")] == []
    rows[10]["seats"] = 4000
    typo = run_discovery(write_tables(tmp_path / "typo", {"planes": rows}))
    assert [c.arguments["columns"] for c in reported(typo, "groups.range")] == [["engines", "seats"]]
