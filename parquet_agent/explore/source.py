"""Where the explorer, the charts and the comparison get a run from: one read-only seam.

    run = open_experiment(run_or_path)    # experiment.run: a Run, a run folder or a str path
    cases = CaseSource.open(run)          # the case index and the case records
    cases.index                           # DataFrame, one row per case (report INDEX_COLUMNS)
    cases.record(case_id)                 # the case record (report.case_model.CaseRecord)
    cases.raw_text(path)                  # the exact bytes of one raw file, decoded for display

Records come from the exports when the run has them (`cases/<id>.json`, `cases-index.json`:
what report.html shows), otherwise they are built in memory by the report's own `build_case`
(never written: the explorer does not change a run folder). Exports built from other journals
than the run holds now (a run resumed after its last export; checked by time, then by the
journal hashes in case-export-provenance.json) are ignored in favour of fresh records, so the
widget never shows a stale case. Either way the record logic lives in `report.case_record` only.
An exported record is validated into the model (`report.case_model.read_case`): fields this
version does not know are dropped, a wrong type is a CaseRecordError naming the file and field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from parquet_agent.errors import CaseRecordError, ExportError, RunError, UsageError
from parquet_agent.files import sha256_file
from parquet_agent.report.case_model import CaseRecord, read_case
from parquet_agent.report.exporter import source_files

from parquet_agent.experiment.run import open_experiment

if TYPE_CHECKING:
    import pandas as pd


def exports_current(run_dir: Path) -> bool:
    """True when the run's exports were built from the journals it holds now.

    Fast path: `cases-index.json` is at least as new as every journal file. Otherwise (a run
    resumed after its export, or a folder copied without its times) the journals are checked
    against the sha256 the exporter recorded for them in `case-export-provenance.json`."""
    index, provenance = run_dir / "cases-index.json", run_dir / "case-export-provenance.json"
    if not (index.is_file() and provenance.is_file()):
        return False
    # the same journal files the exporter hashed (a `.torn` leftover is not one of them)
    journals = [run_dir / rel for rel in source_files(run_dir) if rel.startswith("journal/")]
    if all(index.stat().st_mtime >= p.stat().st_mtime for p in journals):
        return True
    try:
        inputs = json.loads(provenance.read_text(encoding="utf-8"))["inputs"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    recorded = {rel: digest for rel, digest in inputs.items() if rel.startswith("journal/")}
    now = {f"journal/{p.name}": p for p in journals}
    if set(recorded) != set(now):
        return False
    return all(sha256_file(path) == recorded[rel] for rel, path in now.items())


@dataclass
class CaseSource:
    """The cases of one run, from its exports or built on the fly (see module docstring).

    Mutable only in its record cache, which belongs to this object (no module-level state)."""

    run_dir: Path
    run_id: str
    rows: list[dict[str, Any]]
    from_exports: bool
    _records: dict[str, CaseRecord] = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, run: Any) -> CaseSource:
        run = open_experiment(run)
        run_dir = run.dir
        if exports_current(run_dir):
            try:
                data = json.loads((run_dir / "cases-index.json").read_text(encoding="utf-8"))
                return cls(run_dir, run.run_id, list(data["cases"]), True)
            except (OSError, ValueError, KeyError) as exc:
                raise ExportError(f"{run_dir / 'cases-index.json'} cannot be read ({exc}); "
                                  f"rebuild it with `parquet-agent export {run_dir}`") from exc
        from parquet_agent.report.case_record import RunSource, build_case, index_row

        source = RunSource.open(run_dir)
        try:
            records = {cid: build_case(source, cid) for cid in source.case_ids()}
        finally:
            source.run.close()
            source.raw.close()
        rows = [index_row(r) for r in records.values()]
        return cls(run_dir, run.run_id, rows, False, records)

    @property
    def index(self) -> pd.DataFrame:
        import pandas as pd

        from parquet_agent.report.case_record import INDEX_COLUMNS

        frame = pd.DataFrame(self.rows, columns=list(INDEX_COLUMNS))
        for col in ("correctness", "citation_support", "cost_usd", "wall_ms"):
            frame[col] = pd.to_numeric(frame[col], errors="coerce")
        return frame

    @property
    def case_ids(self) -> list[str]:
        return [r["case_id"] for r in self.rows]

    def record(self, case_id: str) -> CaseRecord:
        """The case record of `case_id` (exports first, else `build_case`). CaseRecordError
        when the exported file is not a valid case record."""
        if case_id in self._records:
            return self._records[case_id]
        if case_id not in self.case_ids:
            raise UsageError(f"{self.run_id} has no case {case_id!r}; its cases are listed in "
                             "CaseSource.index")
        path = self.run_dir / "cases" / f"{case_id}.json"
        if self.from_exports and path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise CaseRecordError(f"{path}: cannot read the case record ({exc}); rebuild it "
                                      f"with `parquet-agent export {self.run_dir}`") from None
            record = read_case(data, where=str(path)).record
        else:
            from parquet_agent.report.case_record import RunSource, build_case

            source = RunSource.open(self.run_dir)
            try:
                record = build_case(source, case_id)
            finally:
                source.run.close()
                source.raw.close()
        self._records[case_id] = record
        return record

    def raw_text(self, path: str) -> str:
        """The exact content of one file of the run, by run-relative path: a raw file
        (`raw/...`, from the raw store), the case record (`cases/<id>.json`; the record built
        in memory when the run has no current exports) or a journal (`journal/...`, gunzipped
        when sealed). UTF-8 text; base64 with a note when it is not UTF-8."""
        import base64

        from parquet_agent.store.blobs import RawStore

        if path.startswith(("cases/", "journal/")):
            return self._run_file_text(path)

        store = RawStore(self.run_dir, writable=False)
        try:
            if path not in store:
                raise UsageError(f"{path} is not in the raw store of {self.run_id}; the case's "
                                 "raw files are listed in its record (raw_files)")
            data = store.read(path)
        except RunError as exc:
            raise UsageError(f"{path}: cannot read it from {self.run_id}: {exc}") from exc
        finally:
            store.close()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return "(not UTF-8; base64)\n" + base64.b64encode(data).decode("ascii")

    def _run_file_text(self, rel: str) -> str:
        import gzip

        if rel.startswith("cases/") and not self.from_exports:
            case_id = rel[len("cases/"):].removesuffix(".json")
            return json.dumps(self.record(case_id).to_dict(), indent=1, ensure_ascii=False)
        path = (self.run_dir / rel).resolve()
        if self.run_dir not in path.parents or not path.is_file():
            raise UsageError(f"{rel} is not a file of {self.run_id}")
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        return data.decode("utf-8", "backslashreplace")
