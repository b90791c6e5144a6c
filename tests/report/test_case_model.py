"""The case record is one typed model (`report.case_model.CaseRecord`, issue 26 item 6).

- what the exporter writes to `cases/<id>.json` is the model's dump, and reads back into an
  equal model (no key gained or lost on the way);
- every checked-in old run (run-v1, v2, v3 under tests/store/fixtures) builds into the model,
  and the records the 1efe253 exporter wrote validate with no field dropped;
- a record of the wrong shape is a CaseRecordError naming the file and the field (and in the
  explorer a message in the case pane, not a traceback); a field this version does not know is
  dropped and listed, never a crash.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from parquet_agent import CaseExplorer
from parquet_agent.errors import CaseRecordError, ExportError
from parquet_agent.explore.source import CaseSource
from parquet_agent.report.case_model import CaseRecord, read_case
from parquet_agent.report.case_record import RunSource, build_case
from parquet_agent.report.exporter import export_run
from tests.report.conftest import INCOMPLETE_CASE, fresh_copy

STORE_FIXTURES = Path(__file__).parents[1] / "store" / "fixtures"
OLD_EXPORT = Path(__file__).parent / "fixtures" / "run-v1-exported-by-1efe253"
OPTIONAL_KEYS = {"gate_evaluations", "integrity"}  # written only when they apply


def _records(run_dir: Path) -> dict[str, CaseRecord]:
    source = RunSource.open(run_dir)
    try:
        return {cid: build_case(source, cid) for cid in source.case_ids()}
    finally:
        source.run.close()
        source.raw.close()


def test_the_written_json_is_the_models_dump_and_reads_back_equal(http_run, tmp_path):
    run_dir = fresh_copy(http_run, tmp_path)
    export_run(run_dir)
    built = _records(run_dir)
    assert INCOMPLETE_CASE in built and len(built) == 12
    for cid, record in built.items():
        written = json.loads((run_dir / "cases" / f"{cid}.json").read_text(encoding="utf-8"))
        # the exporter adds only `integrity`, and only to a damaged case
        integrity = written.pop("integrity", None)
        assert written == record.to_dict(), cid
        assert (integrity is not None) == (cid == INCOMPLETE_CASE)
        written = written | ({"integrity": integrity} if integrity else {})
        read = read_case(written, where=cid)
        assert read.ignored == () and read.record.to_dict() == written
        # every field the builder knows is set: none silently left to its default (and so out
        # of the JSON), apart from the keys written only when they apply
        assert set(CaseRecord.model_fields) - record.model_fields_set <= OPTIONAL_KEYS, cid
    incomplete = built[INCOMPLETE_CASE]
    assert incomplete.incomplete is not None and incomplete.incomplete.missing_raw_requests
    assert incomplete.attempts and all(a.usage is not None for a in incomplete.attempts)


@pytest.mark.parametrize("name", ["run-v1", "run-v2", "run-v3"])
def test_every_checked_in_old_run_builds_into_the_model(name, tmp_path):
    run_dir = tmp_path / name
    shutil.copytree(STORE_FIXTURES / name, run_dir)
    records = _records(run_dir)
    assert records
    for cid, record in records.items():
        assert isinstance(record, CaseRecord) and record.case_id == cid
        again = read_case(json.loads(json.dumps(record.to_dict())))
        assert again.ignored == () and again.record == record


def test_records_the_1efe253_exporter_wrote_validate_unchanged():
    files = sorted((OLD_EXPORT / "cases").glob("*.json"))
    assert len(files) == 8
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        read = read_case(data, where=str(path))
        assert read.ignored == ()
        assert read.record.to_dict() == data  # an old record gains no key (judging, ...)
        if read.record.judgment is not None:
            assert read.record.judgment.judging is None  # 1efe253 did not record it


def test_a_wrong_type_is_a_named_error_and_an_unknown_field_is_dropped():
    data = json.loads((OLD_EXPORT / "cases" / "Q001__flash__sql.json").read_text())
    bad = data | {"judgment": data["judgment"] | {"correctness": "high"}}
    with pytest.raises(CaseRecordError, match=r"cases/x\.json: not a valid case record: "
                                              r"judgment\.correctness: .*'high'"):
        read_case(bad, where="cases/x.json")
    assert issubclass(CaseRecordError, ExportError)
    with pytest.raises(CaseRecordError, match=r"attempts\.0\.number: Field required"):
        read_case(data | {"attempts": [{k: v for k, v in data["attempts"][0].items()
                                        if k != "number"}]})
    newer = data | {"added_later": 1,
                    "tool_calls": [data["tool_calls"][0] | {"also_new": True},
                                   *data["tool_calls"][1:]]}
    read = read_case(newer)
    assert read.ignored == ("CaseRecord.added_later", "ToolCall.also_new")
    assert read.record.to_dict() == data
    with pytest.raises(ValueError, match="extra"):  # building is strict: a typo fails loudly
        CaseRecord.model_validate(newer)


def test_the_explorer_shows_a_damaged_record_as_a_message(offline_run, tmp_path):
    run_dir = fresh_copy(offline_run, tmp_path)
    export_run(run_dir)
    cid = min(p.stem for p in (run_dir / "cases").glob("*.json"))
    path = run_dir / "cases" / f"{cid}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(data | {"tool_calls": "not a list"}), encoding="utf-8")
    with pytest.raises(CaseRecordError, match=rf"{cid}\.json: not a valid case record: "
                                              r"tool_calls: "):
        CaseSource.open(run_dir).record(cid)
    ex = CaseExplorer(run_dir, case_id=cid)  # no traceback: the pane names file and field
    assert "This case cannot be shown" in ex.detail.value
    assert "tool_calls" in ex.detail.value and f"{cid}.json" in ex.detail.value
