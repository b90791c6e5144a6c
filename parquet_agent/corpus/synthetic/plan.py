"""Which filing goes in which monthly file: the plan of a synthetic corpus, before any text.

`plan_corpus(seed, rows)` decides every row: its `file_stem` (an EDGAR accession number), the
`accession` column (the CIK, zero-padded or not), company, form, filing date, fiscal period,
size target, style, `source_format`, and the untidiness flags (OCR, near-empty, duplicate).
It is cheap (no text) and a pure function of `(seed, rows)`, so questions about counts are
computed from the same plan the files are written from, and the rows always add up.

Months follow the reference corpus (January-June 2025; its relative row counts scaled to `rows`
by largest remainder). Periodic reports follow each company's fiscal calendar: a 10-K about
55-85 days after its fiscal year end, a 10-Q 30-44 days after a quarter end. Everything else
(8-K, Form 4, proxies, prospectuses, ...) fills each month up to its row count, with filers drawn
from a heavy-tailed activity distribution. About 1.2% of rows duplicate another row's document
under a new `file_stem` (same Markdown, same md5).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np

from parquet_agent.corpus.synthetic.companies import Company, make_companies, quarter_end

REFERENCE_MONTH_ROWS = (90_711, 128_993, 118_933, 109_085, 126_665, 63_680)
REFERENCE_ROWS = sum(REFERENCE_MONTH_ROWS)  # 638,067
YEAR = 2025
MONTHS = tuple(range(1, 7))
_MONTH_DAYS = (31, 28, 31, 30, 31, 30)

# Forms that fill each month, with weights (roughly EDGAR's mix, minus 10-K/10-Q which follow
# the fiscal calendar).
FILLER_FORMS = ("8-K", "4", "SC 13G/A", "SC 13G", "424B2", "6-K", "DEF 14A", "S-8", "13F-HR",
                "8-K/A", "3", "S-1", "S-3", "10-K/A", "10-Q/A", "11-K", "NT 10-K", "20-F")
FILLER_WEIGHTS = (0.24, 0.34, 0.06, 0.03, 0.08, 0.04, 0.03, 0.02, 0.04,
                  0.02, 0.03, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01)
FOREIGN_FORMS = {"6-K", "20-F"}
# Median Markdown size in characters per form; sizes are log-normal around it.
MEDIAN_CHARS = {"10-K": 240_000, "10-Q": 95_000, "20-F": 280_000, "8-K": 9_000, "8-K/A": 8_000,
                "4": 4_000, "3": 3_500, "SC 13G": 11_000, "SC 13G/A": 9_000, "424B2": 45_000,
                "6-K": 14_000, "DEF 14A": 140_000, "S-8": 22_000, "13F-HR": 28_000, "S-1": 380_000,
                "S-3": 70_000, "10-K/A": 30_000, "10-Q/A": 25_000, "11-K": 38_000, "NT 10-K": 3_500}
# Per-month size factors calibrated so that each monthly file has about the reference corpus's
# Parquet bytes per row (measured on a 1/10 build, see docs/benchmarks.md): the filing mix by
# itself puts too much in March (10-K season) and too little in April.
MONTH_SIZE_FACTOR = (1.30, 1.13, 0.82, 1.70, 1.07, 0.86)
DUPLICATE_SHARE = 0.012
OCR_SHARE = 0.025
EMPTY_SHARE = 0.004
STYLES = 4  # 0 page-marked text (PDF-like), 1 Markdown cover tables, 2 Markdown headings, 3 SGML
_AGENTS = (950170, 1193125, 1628280, 1213900, 950103, 1140361, 1104659, 1437749, 1558370,
           1062993, 1493152, 1477932)


@dataclass(frozen=True, slots=True)
class FilingSpec:
    """One row of the corpus, before its text. Text is a pure function of the fields other than
    `file_stem`, `accession` and `duplicate`, so a duplicate renders the same Markdown."""

    file_stem: str
    accession: str
    company: int
    form: str
    filed: dt.date
    period: tuple[int, int] | None  # (fiscal year, quarter) for 10-K (q=4), 10-Q, 20-F
    content_id: int
    origin_stem: str  # the accession number printed in an SGML header (the original's)
    style: int
    size: int
    source_format: str
    ocr: bool
    empty: bool
    duplicate: bool

    @property
    def month(self) -> int:
        return self.filed.month


@dataclass(frozen=True)
class CorpusPlan:
    seed: int
    rows: int
    companies: tuple[Company, ...]
    months: tuple[tuple[FilingSpec, ...], ...]  # per month, sorted by file_stem

    def all(self):
        for month in self.months:
            yield from month


def month_rows(rows: int) -> tuple[int, ...]:
    """`rows` split over the six months in the reference proportions (largest remainder)."""
    if rows < len(MONTHS):
        raise ValueError(f"rows must be at least {len(MONTHS)}, got {rows}")
    exact = [rows * r / REFERENCE_ROWS for r in REFERENCE_MONTH_ROWS]
    base = [int(x) for x in exact]
    order = sorted(range(len(exact)), key=lambda i: (base[i] - exact[i], i))
    for i in order[: rows - sum(base)]:
        base[i] += 1
    return tuple(base)


def company_count(rows: int) -> int:
    return max(60, round(rows / 30))


def _periodic(companies, rng) -> list[tuple[int, str, dt.date, tuple[int, int]]]:
    start, end = dt.date(YEAR, 1, 1), dt.date(YEAR, 6, 30)
    out = []
    for c in companies:
        for fy in (2024, 2025):
            for q in (1, 2, 3, 4):
                y, m = quarter_end(c, fy, q)
                last = dt.date(y, m, 28) + dt.timedelta(days=4)
                period_end = last - dt.timedelta(days=last.day)
                if c.foreign:
                    if q != 4:
                        continue
                    form, lag = "20-F", int(rng.integers(90, 120))
                elif q == 4:
                    form, lag = "10-K", int(rng.integers(55, 86))
                else:
                    form, lag = "10-Q", int(rng.integers(30, 45))
                filed = period_end + dt.timedelta(days=lag)
                if start <= filed <= end:
                    out.append((c.index, form, filed, (fy, q)))
    return out


def _size(rng, form: str, month: int) -> int:
    return int(MEDIAN_CHARS[form] * MONTH_SIZE_FACTOR[month - 1] * rng.lognormal(0.0, 0.75)) + 400


def plan_corpus(seed: int, rows: int) -> CorpusPlan:
    """The whole plan for `rows` rows; a pure function of `(seed, rows)`."""
    rng = np.random.default_rng([seed, 1, rows])
    companies = make_companies(seed, company_count(rows))
    n = len(companies)
    budgets = month_rows(rows)
    periodic = _periodic(companies, rng)
    # heavy-tailed activity: a few filers file a lot of 8-Ks and insider reports
    activity = rng.permutation(1.0 / np.arange(1, n + 1) ** 0.8)
    activity /= activity.sum()
    foreign = np.array([c.foreign for c in companies])
    foreign_idx = np.flatnonzero(foreign)
    pad_pref = rng.choice([0.92, 0.6, 0.1], size=n, p=[0.6, 0.25, 0.15])
    weights = np.array(FILLER_WEIGHTS) / sum(FILLER_WEIGHTS)

    # (company, form, filed, period, size, ocr, empty, dup_of) per month, originals first
    drafts: list[list[list]] = []
    for mi, budget in enumerate(budgets):
        month = mi + 1
        rows_m: list[list] = []
        per = [p for p in periodic if p[2].month == month]
        cap = int(budget * 0.6)
        if len(per) > cap:  # tiny corpora: keep a deterministic subset
            keep = sorted(rng.choice(len(per), size=cap, replace=False).tolist())
            per = [per[i] for i in keep]
        for c, form, filed, period in per:
            rows_m.append([c, form, filed, period, _size(rng, form, month), rng.random() < 0.01, False])
        n_dup = int(round(budget * DUPLICATE_SHARE)) if budget >= 50 else 0
        n_fill = budget - len(rows_m) - n_dup
        forms = rng.choice(len(FILLER_FORMS), size=n_fill, p=weights)
        filers = rng.choice(n, size=n_fill, p=activity)
        days = rng.integers(1, _MONTH_DAYS[mi] + 1, size=n_fill)
        flags = rng.random((n_fill, 2))
        for f, c, d, (u_ocr, u_empty) in zip(forms.tolist(), filers.tolist(), days.tolist(), flags.tolist()):
            form = FILLER_FORMS[f]
            if form in FOREIGN_FORMS and not foreign[c]:
                form = "8-K"
            elif foreign[c] and form in ("8-K", "8-K/A", "10-K/A", "10-Q/A", "NT 10-K"):
                form = "6-K"
            if form == "20-F" and len(foreign_idx):
                c = int(foreign_idx[c % len(foreign_idx)])
            empty = u_empty < EMPTY_SHARE / 0.9
            ocr = (not empty) and u_ocr < OCR_SHARE / 0.9
            filler_period = (2024, 4) if form == "20-F" else None
            rows_m.append([c, form, dt.date(YEAR, month, d), filler_period, _size(rng, form, month), ocr,
                           empty])
        originals = len(rows_m)
        if n_dup:
            clean = [i for i, r in enumerate(rows_m) if not r[6]]
            for src in rng.choice(clean, size=n_dup, replace=True).tolist():
                rows_m.append(rows_m[src][:7] + [src])
        for r in rows_m[:originals]:
            r.append(None)
        drafts.append(rows_m)
    _giants(rng, drafts, rows)
    return _finish(seed, rows, companies, drafts, rng, pad_pref)


def _giants(rng, drafts, rows: int) -> None:
    """A few multi-MB filings at any scale: the heavy tail a reader must survive."""
    n_giant = max(3, rows // 25_000)
    low, high = (2_000_000, 7_000_000) if rows >= 100_000 else (1_000_000, 2_500_000)
    big_forms = {"10-K", "S-1", "20-F", "424B2", "DEF 14A"}
    cands = [(m, i) for m, rows_m in enumerate(drafts) for i, r in enumerate(rows_m)
             if r[1] in big_forms and r[7] is None and not r[5] and not r[6]]
    if not cands:
        return
    for k in rng.choice(len(cands), size=min(n_giant, len(cands)), replace=False).tolist():
        m, i = cands[k]
        drafts[m][i][4] = int(rng.integers(low, high))


def _finish(seed, rows, companies, drafts, rng, pad_pref) -> CorpusPlan:
    # accession numbers: per filer agent (or self-filer), sequence numbers rise with the date
    flat = [(m, i) for m, rows_m in enumerate(drafts) for i in range(len(rows_m))]
    order = sorted(range(len(flat)), key=lambda k: (drafts[flat[k][0]][flat[k][1]][2], k))
    agent_of = rng.integers(0, len(_AGENTS) + 3, size=len(flat))
    seq = {a: int(rng.integers(100, 3000)) for a in _AGENTS}
    stems: dict[tuple[int, int], str] = {}
    for k in order:
        m, i = flat[k]
        a = int(agent_of[k])
        agent = _AGENTS[a] if a < len(_AGENTS) else companies[drafts[m][i][0]].cik
        seq[agent] = seq.get(agent, 0) + 1 + int(rng.integers(0, 3))
        stems[(m, i)] = f"{agent:010d}-{YEAR % 100:02d}-{seq[agent]:06d}"
    styles = rng.choice(STYLES, size=len(flat), p=[0.2, 0.35, 0.35, 0.1])
    pads = rng.random(len(flat))
    content_ids: dict[tuple[int, int], int] = {}
    months = []
    k = 0
    for m, rows_m in enumerate(drafts):
        specs = []
        for i, (c, form, filed, period, size, ocr, empty, dup_of) in enumerate(rows_m):
            src = (m, i) if dup_of is None else (m, dup_of)
            content_ids.setdefault(src, len(content_ids))
            company = companies[c]
            style = int(styles[k])
            cik = company.cik_padded if pads[k] < pad_pref[c] else str(company.cik)
            specs.append((c, form, filed, period, size, ocr, empty, dup_of, style, cik, stems[(m, i)]))
            k += 1
        out = []
        for i, (c, form, filed, period, size, ocr, empty, dup_of, style, cik, stem) in enumerate(specs):
            if dup_of is not None:
                # a duplicate carries its original's document fields, hence the same text
                o = specs[dup_of]
                c, form, period, size, ocr, empty, style = o[0], o[1], o[3], o[4], o[5], o[6], o[8]
                origin = o[10]
            else:
                origin = stem
            fmt = _source_format(form, style, ocr, rng)
            out.append(FilingSpec(stem, cik, c, form, filed, period,
                                  content_ids[(m, dup_of if dup_of is not None else i)], origin,
                                  style, size, fmt, ocr, empty, dup_of is not None))
        out.sort(key=lambda s: s.file_stem)
        months.append(tuple(out))
    return CorpusPlan(seed, rows, companies, tuple(months))


def _source_format(form: str, style: int, ocr: bool, rng) -> str:
    if ocr:
        return "pdf"
    if form in ("3", "4", "13F-HR"):
        return "xml"
    if style == 3:
        return "txt"
    if style == 0:
        return "pdf"
    return "htm" if rng.random() < 0.15 else "html"
