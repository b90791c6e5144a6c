"""The deterministic baseline auditor: a profile plus a rule pack, no model.

It speaks the model protocol (`complete(request, sink)`, recorded like every model call through
`models.scripted.offline_complete`) and reads only the state each step's request carries, so it
runs through the same loop, gates, journals and raw records as any model. Its plan: sample the
schema, profile every column, propose each candidate the rule pack derives from the profiles
(the finding gate keeps or dismisses it), conclude with the untried categories skipped.

Two variants: `blind` learns what is normal from the audited snapshot itself (thresholds from
its own quantiles, valid values from its frequent ones); `reference` learns it from the
profiles of an earlier clean snapshot (`reference_profiles`), which is also what lets it test
distribution drift and call a category the clean snapshot never held invalid.
"""

from __future__ import annotations

import re
import statistics
from typing import Any

from parquet_agent.audit.prompt import state_of
from parquet_agent.audit.taxonomy import CATEGORIES
from parquet_agent.audit.state import reported_candidates
from parquet_agent.models.protocol import ModelRequest, ModelResult, RawSink
from parquet_agent.models.scripted import offline_complete, to_reply

MAX_CATEGORICAL = 30
OUTLIER_FACTOR = 3.0  # a file's mean this far above the median file's mean
SHORT_FILE = 0.6  # a file with fewer rows than this share of the median file


def q(column: str) -> str:
    return '"' + column.replace('"', '""') + '"'


def lit(value: Any) -> str:
    return "'" + str(value).replace("'", "''") + "'"


class BaselineAuditor:
    provider = "audit-baseline"

    def __init__(self, variant: str = "blind", reference_profiles: dict[str, Any] | None = None,
                 name: str = "audit-baseline"):
        if variant not in ("blind", "reference"):
            raise ValueError(f"baseline variant must be 'blind' or 'reference', not {variant!r}")
        if variant == "reference" and not reference_profiles:
            raise ValueError("the reference variant needs the profiles of a clean snapshot")
        self.variant = variant
        self.reference = reference_profiles or {}
        self.name = name
        self.model = f"rule-pack-{variant}"

    def complete(self, request: ModelRequest, sink: RawSink) -> ModelResult:
        def answer():
            reasoning, tool, args = self.decide(state_of(request))
            return to_reply({"text": reasoning, "tool_calls": [
                {"id": "call_0", "name": tool, "arguments": args}]}, self.model, self.provider)

        return offline_complete(request, sink, answer, model=self.model, provider=self.provider,
                                source=f"baseline auditor ({self.variant}), no network")

    def decide(self, state: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
        if state["schema_sample"] is None:
            return "Start with the schema and a sample.", "schema_sample", {"n": 5, "confidence": 1.0}
        columns = [c["column"] for c in state["dataset"]["columns"]]
        failed = state.get("profile_errors") or {}  # tried: the run gate names them
        for column in columns:
            if column not in state["profiled"] and column not in failed:
                return f"Profile {column}.", "get_stats", {"column": column, "confidence": 1.0}
        proposed = {f["title"] for f in state["findings"]} | {d["title"] for d in state["dismissed"]}
        for candidate in self.candidates(state):
            if candidate["title"] not in proposed:
                return f"Rule: {candidate['title']}.", "write_finding", {**candidate, "confidence": 0.7}
        tried = set(state["categories_tried"])
        skipped = {c: "no rule of the baseline pack fired for this category"
                   for c in CATEGORIES if c not in tried}
        if self.variant == "blind":
            skipped["distribution_drift"] = "the blind baseline has no reference to drift from"
        if "referential" in skipped and not state["dataset"].get("documented_properties"):
            skipped["referential"] = ("discovery found no reference between tables with orphan "
                                      "values (and the rule pack's own is for the filings corpus)")
        return "Every rule was tried.", "conclude", {"summary": f"{len(state['findings'])} findings",
                                                     "skipped": skipped, "confidence": 1.0}

    # -- the rule pack ------------------------------------------------------------------------

    def candidates(self, state: dict[str, Any]) -> list[dict[str, Any]]:
        profiles, schema = state["profiles"], state["schema_sample"]
        filings = bool(state["dataset"].get("documented_properties"))
        discovery = state.get("discovery") or {}
        # what discovery found first: keys, references, dependencies (audit.discover)
        out = reported_candidates(discovery, filings)
        # a column that refers to another table's key is checked against it, not by frequency
        referring = {tuple(r["from"].split(".", 1)) for r in discovery.get("references", [])}
        views = _views_of(state["dataset"])
        for column, profile in profiles.items():
            ref = self.reference.get(column) if self.variant == "reference" else None
            view, local = views.get(column, ("data", column))
            found = _completeness(local, profile, ref) + _non_finite(local, profile)
            if (view, local) not in referring:
                found += _validity(local, profile, ref)
            found += _range(local, profile, ref)
            if ref is not None:
                found += _drift(local, profile, ref)
            out += [_in_view(f, view, column) for f in found]
        for view, rows in _files_per_view(state["dataset"]).items():
            found = _volume(view, rows, self.reference if self.variant == "reference" else None)
            out += [_in_view(f, view, None) for f in found]
        out += _schema_drift(schema)
        if filings:
            out += _filings_rules(schema)
        return out


def _views_of(dataset: dict) -> dict[str, tuple[str, str]]:
    """column ref -> (its table's view, its name there); `data` for a one-table dataset."""
    out = {}
    for c in dataset["columns"]:
        table = c.get("table")
        out[c["column"]] = (table, c["column"][len(table) + 1:]) if table else ("data", c["column"])
    return out


def _files_per_view(dataset: dict) -> dict[str, dict[str, int]]:
    """view -> {file: rows} from the snapshot (an empty file has no row to group by)."""
    single = not any(c.get("table") for c in dataset["columns"])
    out: dict[str, dict[str, int]] = {}
    for f in dataset.get("files") or []:
        out.setdefault("data" if single else f.get("table", "data"), {})[f["file"]] = f["rows"]
    return out


def _in_view(finding: dict, view: str, ref: str | None) -> dict:
    """A candidate written over one column's local name, as a finding over its table's view."""
    if view == "data":
        return finding
    columns = [ref] if ref is not None else [f"{view}.{c}" if c != "_file" else c
                                             for c in finding["columns"]]
    return {**finding, "columns": columns, "view": view, "title": f"{view}: {finding['title']}"}


def _finding(category: str, columns: list[str], title: str, rationale: str,
             predicate: str | None = None) -> dict[str, Any]:
    out = {"category": category, "columns": columns, "title": title, "rationale": rationale}
    if predicate is not None:
        out["predicate"] = predicate
    return out


def _long(profile: dict) -> bool:
    return ((profile.get("values") or {}).get("mean_length") or 0) > 1000


# an annotation is written only where there is something to say: its nulls are not missing values
_ANNOTATION = re.compile(r"(^|[^a-z])(notes?|comments?|remarks?|memo)$", re.IGNORECASE)


def _completeness(column: str, profile: dict, ref: dict | None) -> list[dict]:
    out = []
    if profile["nulls"] and (ref is None or not ref["nulls"]) and not _ANNOTATION.search(column):
        out.append(_finding("completeness", [column], f"{column} is null",
                            f"{profile['nulls']} null value(s)", f"{q(column)} IS NULL"))
    values = profile.get("values") or {}
    if values.get("empty") and (ref is None or not (ref.get("values") or {}).get("empty")):
        out.append(_finding("completeness", [column], f"{column} is empty",
                            f"{values['empty']} empty string(s)", f"{q(column)} = ''"))
    return out


def _known_values(profile: dict) -> list[str]:
    return [t["value"] for t in profile.get("top_values") or [] if t["value"] is not None]


def _validity(column: str, profile: dict, ref: dict | None) -> list[dict]:
    if profile["type"] != "VARCHAR" or _long(profile):
        return []
    basis = ref or profile
    known = _known_values(basis)
    out = []
    if len(known) >= 5 and all(v.isdigit() for v in known):
        out.append(_finding("validity", [column], f"{column} holds non-digits",
                            f"{column} is a digit string in every frequent value",
                            f"NOT regexp_full_match({q(column)}, '[0-9]+')"))
    # blind, a rare value is no defect by itself (a small country, a new airline): discovery
    # reports the rare values that respell a frequent one (audit.discover.variants); with a
    # clean snapshot's values, a value it never held is
    elif ref is not None and basis["distinct_approx"] <= MAX_CATEGORICAL \
            and basis["distinct_approx"] < basis["rows"] / 10:
        valid = [t["value"] for t in basis["top_values"] if t["value"] is not None]
        if valid:
            out.append(_finding("validity", [column], f"{column} has an unknown value",
                                f"the known values of {column} are {', '.join(valid)}",
                                f"{q(column)} NOT IN ({', '.join(lit(v) for v in valid)})"))
    return out


def _non_finite(column: str, profile: dict) -> list[dict]:
    counts = profile.get("non_finite") or {}
    if not any(counts.values()):
        return []
    return [_finding("validity", [column], f"{column} holds NaN or infinity",
                     f"{counts.get('nan', 0)} NaN, {counts.get('pos_inf', 0)} +inf, "
                     f"{counts.get('neg_inf', 0)} -inf: not measurements",
                     # not isnan(): DuckDB 2.0.1 prunes row groups by min/max statistics that
                     # leave NaN out, and `WHERE isnan(x)` then counts 0 of 20 NaN in 2M rows
                     f"NOT isfinite({q(column)})")]


def _range(column: str, profile: dict, ref: dict | None) -> list[dict]:
    values = profile.get("values") or {}
    if not values.get("quantiles") or values.get("max") is None or None in values["quantiles"]:
        return []
    if ref is not None and (ref.get("values") or {}).get("max") is not None:
        high, low = ref["values"]["max"] * 2, ref["values"]["min"] / 2
        return [_finding("range", [column], f"{column} outside its reference range",
                         f"the clean snapshot's range is {ref['values']['min']}..{ref['values']['max']}",
                         f"{q(column)} > {high} OR {q(column)} < {low}")]
    # isolated values are discovery's (audit.discover.outliers): the q75 + 6 IQR fence that
    # stood here fired on real heavy tails (long delays, a 747's seats, stock prices)
    out = []
    means = [f["mean"] for f in profile.get("per_file") or [] if f.get("mean") is not None]
    if len(means) >= 3:
        usual = statistics.median(means)
        for f in profile["per_file"]:
            if usual > 0 and f.get("mean") is not None and f["mean"] > OUTLIER_FACTOR * usual:
                out.append(_finding("range", [column], f"{column} scaled up in {f['_file']}",
                                    f"mean {f['mean']:g} vs {usual:g} in the other files",
                                    f"_file = {lit(f['_file'])}"))
    return out


def _drift(column: str, profile: dict, ref: dict) -> list[dict]:
    values, before = profile.get("values") or {}, ref.get("values") or {}
    if values.get("mean") is None or not before.get("quantiles") or not before.get("mean") \
            or None in before["quantiles"]:
        return []
    spread = max(before["quantiles"][3] - before["quantiles"][1], 1e-9)
    if abs(values["mean"] - before["mean"]) <= 0.5 * spread:
        return []
    return [_finding("distribution_drift", [column], f"{column} mean drifted",
                     f"mean {before['mean']:g} -> {values['mean']:g}",
                     f"{q(column)} > {before['quantiles'][-1]} OR {q(column)} < {before['quantiles'][0]}")]


def _volume(view: str, rows: dict[str, int], reference: dict | None) -> list[dict]:
    if len(rows) < 3:
        return []
    before = {}
    if reference:
        ref_profile = next(iter(reference.values()))
        before = {f["_file"]: f["rows"] for f in ref_profile.get("per_file") or []}
    usual = statistics.median(rows.values())
    out = []
    for name, n in rows.items():
        expected = before.get(name, usual)
        if n < SHORT_FILE * expected and n == 0:  # no row to select: count the missing ones
            out.append({**_finding("volume", ["_file"], f"{name} has too few rows",
                                   f"0 rows where about {expected:g} are expected"),
                        "count_sql": f"SELECT {round(expected)} - count(*) FROM {view} "
                                     f"WHERE _file = {lit(name)}",
                        "denominator_sql": f"SELECT {round(expected)}"})
        elif n < SHORT_FILE * expected:
            out.append(_finding("volume", ["_file"], f"{name} has too few rows",
                                f"{n} rows where about {expected:g} are expected",
                                f"_file = {lit(name)}"))
    return out


def _schema_drift(schema: dict) -> list[dict]:
    per_file = schema.get("file_schemas") or {}
    table_of = {f["file"]: f.get("table") for f in schema.get("files") or []}
    single = len(set(table_of.values())) <= 1
    kinds: dict[str, set] = {}
    for name, columns in per_file.items():
        for column, kind in columns.items():
            ref = column if single else f"{table_of.get(name)}.{column}"
            kinds.setdefault(ref, set()).add(kind)
    return [_finding("schema_drift", [c], f"{c} changes type between files",
                     f"types seen: {', '.join(sorted(k))}") for c, k in kinds.items() if len(k) > 1]


def _filings_rules(schema: dict) -> list[dict]:
    out = [
        _finding("consistency", ["char_count", "parsed_md"], "char_count differs from the text",
                 "char_count must be the length of parsed_md", "char_count <> length(parsed_md)"),
        _finding("consistency", ["md5", "parsed_md"], "md5 differs from the text",
                 "md5 must be the MD5 of parsed_md", "md5 <> md5(parsed_md)"),
    ]
    out.append(_finding(
        "referential", ["file_stem", "accession"], "file_stem names an unknown filer",
        "the filer ID that starts an accession number refers to the company itself or to a "
        "filing agent (an ID that files for several companies); this one refers to neither",
        FILER_REFERENCE))
    names = [f["file"] for f in schema.get("files") or []]
    if names and all(_month_of(n) is not None for n in names):
        out.append(_finding(
            "coverage", ["month"], "month does not match its file",
            "each monthly file holds only its month's filings",
            "month <> TRY_CAST(regexp_extract(_file, '[0-9]{4}-([0-9]{2})', 1) AS INTEGER)"))
    return out


# The filer ID (first 10 digits of file_stem) must refer to the row's company (its CIK in
# `accession`) or to a filing agent: an ID that submits for more than one company.
FILER_REFERENCE = (
    "regexp_full_match(accession, '[0-9]+') "
    "AND ltrim(substr(file_stem, 1, 10), '0') <> ltrim(accession, '0') "
    "AND substr(file_stem, 1, 10) NOT IN (SELECT substr(file_stem, 1, 10) FROM data "
    "WHERE file_stem IS NOT NULL GROUP BY 1 HAVING count(DISTINCT ltrim(accession, '0')) > 1)")


def _month_of(name: str) -> int | None:
    match = re.search(r"[0-9]{4}-([0-9]{2})", name)
    return int(match.group(1)) if match else None
