"""The FinanceBench pack: corpus, questions, scopes and configs that line up with the paper.

Contract: `build_pack(source, out) -> PackResult` reads a FinanceBench checkout laid out like
`../shared/realdata/financebench/` (`docs_md/<doc_name>.md` page-marked text, `corpus_manifest.jsonl`,
`questions/financebench_open_source.jsonl`; `results/` is read later by `paper.py`) and writes:

    OUT/corpus/                  the imported corpus (question docs + same-company distractors):
                                 Parquet, _index/, manifest.json, questions.jsonl
    OUT/oracle/                  one row per gold page (`<file_stem>.p<N>`: the filing's header
                                 block + that page), _index/, manifest.json, questions.jsonl
    OUT/scopes/single_store.json {"schema_version": 1, "scopes": {question_id: [file_stem of
                                 the question's own filing]}}
    OUT/scopes/oracle.json       the same shape: question_id -> the oracle rows of its gold pages
    OUT/configs/{closed_book,shared_store,single_store,oracle}.toml
    OUT/pack.json                what was built: counts, excluded questions with the reason,
                                 every evidence item's mapping (match kind, coverage, verified)

Questions keep FinanceBench's ids (`financebench_id_03029`) so runs pair with the paper's
results. A question whose document has no text in the checkout is excluded and listed. Evidence is
located with `evidence.locate` on its page (`evidence_page_num` + 1 = the `<!-- page N -->`
marker); a mapping that fails verification is a bug and raises. Nothing from FinanceBench is
written anywhere but OUT (CC-BY-NC: never commit it).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq

from parquet_agent.bench.configs import write_configs
from parquet_agent.bench.evidence import locate
from parquet_agent.corpus.importer import import_corpus
from parquet_agent.corpus.importer.pdf_text import page_spans
from parquet_agent.corpus.layout import LayoutWriter
from parquet_agent.corpus.questions import Evidence, Question, Reference, write_questions
from parquet_agent.corpus.schema import CORPUS_SCHEMA
from parquet_agent.errors import UsageError
from parquet_agent.files import atomic_write_bytes

SCHEMA_VERSION = 1
QUESTIONS_FILE = Path("questions") / "financebench_open_source.jsonl"


@dataclass(frozen=True)
class EvidenceMapping:
    question_id: str
    doc_name: str
    file_stem: str
    page: int
    match: str
    coverage: float | None
    start: int | None
    end: int | None
    verified: bool
    oracle_stem: str | None


class _Found(NamedTuple):
    """A verified evidence passage: the quote, and the gold page it sits on."""
    quote: Evidence
    oracle_stem: str
    page: int


class _OracleQuote(NamedTuple):
    """A quote's place before it is re-based into its oracle row."""
    oracle_stem: str
    start: int
    end: int
    page: int


@dataclass(frozen=True)
class PackResult:
    out: Path
    questions: int
    excluded: dict[str, str]
    corpus_rows: int
    oracle_rows: int
    mappings: tuple[EvidenceMapping, ...]
    configs: tuple[str, ...]
    seconds: float

    def match_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for m in self.mappings:
            counts[m.match] = counts.get(m.match, 0) + 1
        return counts

    def summary(self) -> str:
        return "\n".join([
            f"FinanceBench pack in {self.out} ({self.seconds:.1f} s)",
            f"corpus: {self.corpus_rows} filings; oracle: {self.oracle_rows} gold pages",
            f"questions: {self.questions} written, {len(self.excluded)} excluded "
            "(document text absent from the checkout)",
            f"evidence items: {len(self.mappings)} mapped "
            f"({', '.join(f'{k} {v}' for k, v in sorted(self.match_counts().items()))}); "
            f"all verified: {all(m.verified for m in self.mappings)}",
            f"configs: {', '.join(self.configs)}",
        ])


def _check_source(source: Path) -> None:
    missing = [p for p in ("docs_md", "corpus_manifest.jsonl", str(QUESTIONS_FILE))
               if not (source / p).exists()]
    if missing:
        raise UsageError(
            f"{source} is not a FinanceBench checkout laid out like ../shared/realdata/financebench "
            f"(missing: {', '.join(missing)}); see docs/financebench.md"
        )


def _read_rows(folder: Path) -> dict[str, dict]:
    rows: dict[str, dict] = {}
    for path in sorted(folder.glob("*.parquet")):
        for row in pq.read_table(path).to_pylist():
            rows[row["file_stem"]] = row
    return rows


def _page_body_span(spans: list[tuple[int, int, int]], page: int, md: str) -> tuple[int, int] | None:
    for number, start, end in spans:
        if number == page:
            return md.index("\n", start) + 1, end  # after the `<!-- page N -->` line
    return None


def build_pack(source: str | Path, out: str | Path, *, jobs: int = 1) -> PackResult:
    """Build the pack (see the module docstring). Raises UsageError for a source that is not a
    FinanceBench checkout or an `out` that is not empty."""
    started = time.perf_counter()
    source, out = Path(source), Path(out)
    _check_source(source)
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"{out} exists and is not empty; build the pack into a new folder")
    corpus_dir = out / "corpus"
    imported = import_corpus(
        source, corpus_dir, jobs=jobs,
        select=lambda rel: rel.startswith("docs_md/") or rel == "corpus_manifest.jsonl",
    )
    stem_of = {Path(f.source).stem: f.file_stem for f in imported.imported}
    rows = _read_rows(corpus_dir)
    questions = [json.loads(line) for line in (source / QUESTIONS_FILE).open(encoding="utf-8")
                 if line.strip()]

    items: list[tuple[Question, Reference]] = []
    oracle_items: list[tuple[Question, list[_OracleQuote]]] = []
    excluded: dict[str, str] = {}
    mappings: list[EvidenceMapping] = []
    oracle_pages: dict[str, tuple[str, int]] = {}  # oracle stem -> (file_stem, page)
    single_scope: dict[str, list[str]] = {}
    oracle_scope: dict[str, list[str]] = {}
    spans_cache: dict[str, list] = {}
    for q in questions:
        qid, doc = q["financebench_id"], q["doc_name"]
        if doc not in stem_of:
            excluded[qid] = f"document {doc} has no text in the checkout (its PDF is absent)"
            continue
        evidence: list[Evidence] = []
        oracle_evidence: list[_OracleQuote] = []
        stems: list[str] = []
        page_stems: list[str] = []
        for ev in q["evidence"]:
            mapping, found = _map_evidence(qid, ev, stem_of, rows, spans_cache)
            mappings.append(mapping)
            stems.append(mapping.file_stem)
            if found is not None:
                evidence.append(found.quote)
                oracle_pages[found.oracle_stem] = (mapping.file_stem, found.page)
                page_stems.append(found.oracle_stem)
                oracle_evidence.append(_OracleQuote(found.oracle_stem, found.quote.start,
                                                    found.quote.end, found.page))
        question = Question(qid, q["question"])
        ref = Reference(qid, str(q["answer"]), tuple(evidence), q.get("question_type"))
        items.append((question, ref))
        oracle_items.append((question, oracle_evidence))
        single_scope[qid] = sorted(set(stems))
        oracle_scope[qid] = sorted(set(page_stems))

    write_questions(corpus_dir / "questions.jsonl", items)
    oracle_rows = _write_oracle(out / "oracle", rows, oracle_pages, spans_cache)
    write_questions(out / "oracle" / "questions.jsonl", [
        (question, Reference(question.question_id, ref.reference_answer, tuple(
            _oracle_evidence(oracle_rows[o_stem], rows[oracle_pages[o_stem][0]]["parsed_md"],
                             spans_cache[oracle_pages[o_stem][0]], o_stem, page, s, e)
            for o_stem, s, e, page in ev), ref.kind))
        for (question, ev), (_, ref) in zip(oracle_items, items)
    ])
    _write_scopes(out / "scopes", {"single_store": single_scope, "oracle": oracle_scope})
    configs = write_configs(out / "configs")
    result = PackResult(out, len(items), excluded, len(rows), len(oracle_rows), tuple(mappings),
                        tuple(configs), time.perf_counter() - started)
    _write_json(out / "pack.json", {
        "schema_version": SCHEMA_VERSION,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "source": str(source.resolve()),
        "questions": len(items),
        "excluded": excluded,
        "corpus_rows": len(rows),
        "oracle_rows": len(oracle_rows),
        "evidence_match_counts": result.match_counts(),
        "evidence": [asdict(m) for m in mappings],
        "configs": list(configs),
    })
    return result


def _map_evidence(qid: str, ev: dict, stem_of: dict[str, str], rows: dict[str, dict],
                  spans_cache: dict[str, list]
                  ) -> tuple[EvidenceMapping, _Found | None]:
    """Where one FinanceBench evidence passage is in our Markdown (verified); the quote and the
    page it was found on when it was found."""
    stem = stem_of.get(ev["doc_name"])
    if stem is None:
        raise UsageError(f"{qid}: evidence names {ev['doc_name']}, not in the corpus")
    md = rows[stem]["parsed_md"]
    if stem not in spans_cache:  # setdefault would compute the spans every time
        spans_cache[stem] = page_spans(md)
    spans = spans_cache[stem]
    page = int(ev["evidence_page_num"]) + 1
    loc = locate(ev["evidence_text"], md, _page_body_span(spans, page, md))
    if not loc.verified:
        raise AssertionError(f"{qid}: evidence mapping failed verification ({loc})")
    found = None
    if loc.start is not None and loc.end is not None:
        quote = Evidence(stem, md[loc.start : loc.end], loc.start, loc.end)
        found_page = next(n for n, s, e in spans if s <= loc.start < e)
        found = _Found(quote, f"{stem}.p{found_page}", found_page)
    return EvidenceMapping(qid, ev["doc_name"], stem, page, loc.match, loc.coverage, loc.start,
                           loc.end, loc.verified, found.oracle_stem if found else None), found


def _write_scopes(folder: Path, scopes: dict[str, dict[str, list[str]]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, scope in scopes.items():
        _write_json(folder / f"{name}.json", {
            "schema_version": SCHEMA_VERSION,
            "description": f"FinanceBench {name.replace('_', ' ')}: the file_stems each "
            "question's tools may see (config key `scope`, docs/financebench.md)",
            "scopes": scope,
        })


def _oracle_evidence(oracle_md: str, md: str, spans, o_stem: str, page: int, s: int, e: int):
    """Evidence re-based into the oracle row: header block + blank line + the page."""
    page_start = next(start for n, start, _ in spans if n == page)
    offset = oracle_md.index("<!-- page ") - page_start
    end = min(e + offset, len(oracle_md))
    return Evidence(o_stem, oracle_md[s + offset : end], s + offset, end)


def _write_oracle(folder: Path, rows: dict[str, dict], pages: dict[str, tuple[str, int]],
                  spans_cache: dict[str, list]) -> dict[str, str]:
    """One row per gold page: the filing's header block, a blank line, the page. Returns
    {oracle stem: parsed_md}."""
    folder.mkdir(parents=True, exist_ok=True)
    texts: dict[str, str] = {}
    records = []
    for o_stem, (stem, page) in sorted(pages.items()):
        row = rows[stem]
        md = row["parsed_md"]
        header = md[: md.index("<!-- page ")].rstrip("\n")
        _, start, end = next(s for s in spans_cache[stem] if s[0] == page)
        text = (header + "\n\n" if header else "") + md[start:end]
        texts[o_stem] = text
        records.append({**row, "file_stem": o_stem, "parsed_md": text, "char_count": len(text),
                        "md5": hashlib.md5(text.encode("utf-8")).hexdigest()})
    with LayoutWriter(folder / "oracle.parquet") as writer:
        writer.write(pa.Table.from_pylist(records, schema=CORPUS_SCHEMA))
    from parquet_agent.corpus.index import build_index
    from parquet_agent.corpus.manifest import write_corpus_manifest
    from parquet_agent.corpus.snapshot import CorpusSnapshot

    snapshot = CorpusSnapshot.take(folder)  # hashed once for the index and the manifest
    build_index(folder, snapshot=snapshot)
    write_corpus_manifest(folder, kind="imported", snapshot=snapshot, origin={
        "derived_from": "FinanceBench pack corpus/ (one row per gold evidence page)",
        "pages": [{"file_stem": o, "source_file_stem": s, "page": p}
                  for o, (s, p) in sorted(pages.items())],
    })
    return texts


def _write_json(path: Path, data: dict) -> None:
    atomic_write_bytes(path, (json.dumps(data, indent=1, ensure_ascii=False) + "\n").encode())
