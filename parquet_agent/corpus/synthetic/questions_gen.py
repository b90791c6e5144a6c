"""The question set of a synthetic corpus, correct by construction.

`make_questions(plan, book, pool)` returns at least 100 `(Question, Reference)` pairs, ids
`Q001`, `Q002`, ... Kinds:

- `table_fact`: a figure from a Markdown financial table of one 10-K or 10-Q;
- `prose_fact`: a fact stated in a sentence (headcount, auditor, an 8-K event);
- `header_fact`: a cover-page fact (commission file number, shares outstanding, state);
- `comparison`: two periods of one filing, two filings of one company (10-K quarterly table vs
  a later 10-Q), or two companies;
- `count`: corpus-level counts that need SQL over the Markdown (how many 8-Ks a company filed in
  a month; how many 10-Ks were filed in a month). The answer is computed from the plan the rows
  were written from, and states how many records are exact duplicates (same md5);
- `alias`: the company is named by its brand or ticker, not its registrant name;
- `unanswerable`: the corpus does not hold the answer; the reference says so.

Every gold quote is located in the filing's rendered Markdown, so `parsed_md[start:end] ==
quote` holds by construction (and a test checks it against the Parquet files). Targets are
clean rows (no OCR noise, not near-empty, not a duplicate).
"""

from __future__ import annotations

import calendar
import random
from collections import Counter

from parquet_agent.corpus.questions import Evidence, Question, Reference
from parquet_agent.corpus.synthetic.companies import unique_names
from parquet_agent.corpus.synthetic.covers import long_date
from parquet_agent.corpus.synthetic.forms import BALANCE_LABELS, INCOME_LABELS, period_end, render
from parquet_agent.corpus.synthetic.plan import FilingSpec

MINIMUM = 100
QUOTAS = {"table_fact": 24, "prose_fact": 18, "header_fact": 8, "comparison": 20, "count": 16,
          "alias": 12, "unanswerable": 12}
_TABLE_KEYS = ("revenue", "net_income", "operating_income", "gross_profit", "cost_of_revenue", "sga")
_BALANCE_KEYS = ("total_assets", "cash", "long_term_debt", "equity")


def _k(v: int) -> str:
    return f"${v:,} thousand" if v >= 0 else f"a loss of ${-v:,} thousand"


class _Maker:
    def __init__(self, plan, book, pool):
        self.plan, self.book, self.pool = plan, book, pool
        self.rnd = random.Random(f"questions:{plan.seed}:{plan.rows}")
        self._rendered: dict = {}
        self.items: list[tuple[str, str, str, tuple[Evidence, ...]]] = []
        self.used: set = set()
        specs = list(plan.all())
        clean = [s for s in specs if not (s.ocr or s.empty or s.duplicate)]
        self.annual = [s for s in clean if s.form == "10-K"]
        self.quarterly = [s for s in clean if s.form == "10-Q"]
        # an 8-K is named by company and filing date: keep only dates with one 8-K document
        same_day = Counter((s.company, s.filed) for s in specs if s.form == "8-K" and not s.duplicate)
        self.current = [s for s in clean if s.form == "8-K" and same_day[(s.company, s.filed)] == 1]
        self.specs = specs
        self.has_annual = {s.company for s in self.annual}  # a brand is only named in a 10-K

    # -- helpers ---------------------------------------------------------------------------
    def rendered(self, spec):
        if spec.content_id not in self._rendered:
            self._rendered[spec.content_id] = render(spec, self.book, self.pool)
        return self._rendered[spec.content_id]

    def ev(self, spec, key: str) -> Evidence:
        r = self.rendered(spec)
        quote = r.facts[key]
        start = r.text.find(quote)
        if start < 0:  # a bug in the templates, never a data condition
            raise AssertionError(f"fact {key!r} not in the text of {spec.file_stem}")
        return Evidence(spec.file_stem, quote, start, start + len(quote))

    def add(self, kind: str, question: str, answer: str, evidence=(), key=None) -> bool:
        key = key or (kind, question)
        if key in self.used:
            return False
        self.used.add(key)
        self.items.append((kind, question, answer, tuple(evidence)))
        return True

    def company(self, spec):
        return self.book.companies[spec.company]

    def pick(self, seq, k):
        seq = list(seq)
        return self.rnd.sample(seq, min(k, len(seq)))

    # -- kinds -----------------------------------------------------------------------------
    def table_fact(self, n: int, alias: bool = False) -> None:
        cands = [(s, key) for s in self.annual + self.quarterly for key in _TABLE_KEYS + _BALANCE_KEYS]
        made = 0
        for spec, key in self.pick(cands, len(cands)):
            if made >= n:
                return
            c = self.company(spec)
            if alias:
                who = (c.brand if c.brand and c.index in self.has_annual
                       else f"the company whose stock trades under the ticker {c.ticker}")
            else:
                who = c.name
            r = self.rendered(spec)
            fin = self.book.fin(c.index)
            fy = spec.period[0]
            if key in BALANCE_LABELS:
                when = r.data.get("fye") or r.data.get("qe")
                q = spec.period[1] if spec.form == "10-Q" else 4
                value = fin.balance[(fy, q)][key]
                label = BALANCE_LABELS[key].lower()
                text = f"What {label} did {who} report as of {long_date(when)}?"
                fact = f"balance:{key}"
            elif spec.form == "10-K":
                value = fin.annual(fy)[key]
                label = INCOME_LABELS[key].lower()
                text = f"What was {who}'s {label} for the fiscal year ended {long_date(r.data['fye'])}?"
                fact = f"income:{key}"
            else:
                value = fin.quarters[spec.period][key]
                label = INCOME_LABELS[key].lower()
                text = f"What {label} did {who} report for the three months ended {long_date(r.data['qe'])}?"
                fact = f"income:{key}"
            src = f"its {spec.form} filed {long_date(spec.filed)} ({spec.file_stem})"
            answer = f"{_k(value)} (about ${value / 1000:,.1f} million), per {src}."
            if self.add("alias" if alias else "table_fact", text, answer, [self.ev(spec, fact)], key=(spec.company, key, alias)):
                made += 1

    def segment_fact(self, n: int) -> None:
        cands = [s for s in self.annual if len(self.company(s).segments) > 1]
        for spec in self.pick(cands, n):
            c = self.company(spec)
            seg = self.rnd.choice(c.segments)
            fy = spec.period[0]
            v = self.book.fin(c.index).annual_segments(fy)[seg]
            self.add("table_fact", f"How much revenue did {c.name}'s {seg} segment generate in fiscal {fy}?",
                     f"{_k(v)}, per the segment table of its 10-K filed {long_date(spec.filed)} ({spec.file_stem}).",
                     [self.ev(spec, f"segment:{seg}")])

    def prose_fact(self, n: int) -> None:
        made = 0
        for spec in self.pick(self.annual, n // 2):
            c, fy = self.company(spec), spec.period[0]
            fin = self.book.fin(c.index)
            if self.rnd.random() < 0.5:
                ok = self.add("prose_fact", f"Approximately how many full-time employees did {c.name} have at the end of fiscal {fy}?",
                              f"About {fin.employees[fy]:,} full-time employees (10-K, {spec.file_stem}).",
                              [self.ev(spec, "employees")])
            else:
                ok = self.add("prose_fact", f"Which accounting firm audited {c.name}'s consolidated financial statements for fiscal {fy}?",
                              f"{c.auditor} (10-K, {spec.file_stem}).", [self.ev(spec, "auditor")])
            made += ok
        for spec in self.pick(self.current, len(self.current)):
            if made >= n:
                return
            c = self.company(spec)
            d = self.rendered(spec).data
            filed = long_date(spec.filed)
            item = d.get("item")
            if item == "5.02":
                q = f"According to {c.name}'s Form 8-K filed on {filed}, who was appointed {d['title']}, and effective when?"
                a = f"{d['person']}, effective {long_date(d['effective'])}."
            elif item == "8.01":
                q = f"What quarterly cash dividend per share did {c.name} declare in its Form 8-K filed on {filed}, and when is it payable?"
                a = f"${d['amount']:.2f} per share of common stock, payable on {long_date(d['payable'])}."
            elif item == "1.01":
                q = f"How large is the revolving credit facility described in {c.name}'s Form 8-K filed on {filed}, and who is the administrative agent?"
                a = f"Up to ${d['amount']:,}.0 million; {d['bank']} is the administrative agent."
            elif item == "2.02":
                q = f"What revenue and net income did {c.name} announce for the quarter ended {long_date(d['qe'])} in its Form 8-K filed on {filed}?"
                a = f"Revenue of ${d['revenue'] / 1000:,.1f} million and net income of ${d['net_income'] / 1000:,.1f} million."
            else:
                continue
            made += self.add("prose_fact", q, a + f" ({spec.file_stem})", [self.ev(spec, "event")])

    def header_fact(self, n: int) -> None:
        made = 0
        for spec in self.pick(self.annual + self.quarterly, len(self.annual) + len(self.quarterly)):
            if made >= n:
                return
            c, fy = self.company(spec), spec.period[0]
            r = self.rendered(spec)
            choice = self.rnd.randrange(3)
            if choice == 0:
                ok = self.add("header_fact", f"What is {c.name}'s SEC commission file number?",
                              f"{c.file_number} (cover page of {spec.file_stem}).", [self.ev(spec, "file_number")],
                              key=("file", c.index))
            elif choice == 1:
                shares = self.book.fin(c.index).shares[fy]
                ok = self.add("header_fact", f"How many shares of common stock did {c.name} report outstanding on the cover of its {spec.form} filed on {long_date(spec.filed)}?",
                              f"{shares:,} shares ({spec.file_stem}).", [self.ev(spec, "shares")])
            elif "incorporation" in r.facts:
                ok = self.add("header_fact", f"In which state is {c.name} incorporated?",
                              f"{c.state} ({spec.file_stem}).", [self.ev(spec, "incorporation")], key=("state", c.index))
            else:
                ok = False
            made += ok

    def comparison(self, n: int) -> None:
        made = 0
        # a 10-K's fourth quarter against the next 10-Q's first quarter: two filings
        by_company: dict[int, list[FilingSpec]] = {}
        for s in self.quarterly:
            by_company.setdefault(s.company, []).append(s)
        pairs = [(k, q) for k in self.annual for q in by_company.get(k.company, ())
                 if q.period == (k.period[0] + 1, 1)]
        for k, q in self.pick(pairs, n // 3):
            c = self.company(k)
            fin = self.book.fin(c.index)
            q4, q1 = fin.quarters[(k.period[0], 4)]["revenue"], fin.quarters[q.period]["revenue"]
            diff = q1 - q4
            made += self.add(
                "comparison",
                f"How did {c.name}'s total revenue in the first quarter of fiscal {q.period[0]} compare with the fourth quarter of fiscal {k.period[0]}?",
                f"Q1 fiscal {q.period[0]}: {_k(q1)} (10-Q {q.file_stem}); Q4 fiscal {k.period[0]}: {_k(q4)} (quarterly table of 10-K "
                f"{k.file_stem}); a {'rise' if diff >= 0 else 'decline'} of ${abs(diff):,} thousand ({diff / q4 * 100:+.1f}%).",
                [self.ev(q, "income:revenue"), self.ev(k, "quarterly:revenue")])
        # two companies' annual revenue
        twos = self.pick(self.annual, 2 * (n // 4))
        for a, b in zip(twos[0::2], twos[1::2]):
            ca, cb = self.company(a), self.company(b)
            if ca.index == cb.index:
                continue
            va, vb = self.book.fin(ca.index).annual(a.period[0])["revenue"], self.book.fin(cb.index).annual(b.period[0])["revenue"]
            hi, lo = ((ca, va), (cb, vb)) if va >= vb else ((cb, vb), (ca, va))
            made += self.add(
                "comparison",
                f"Which company reported higher total revenue in its annual report on Form 10-K filed in 2025: {ca.name} (fiscal {a.period[0]}) or {cb.name} (fiscal {b.period[0]})?",
                f"{hi[0].name}: {_k(hi[1])} against {_k(lo[1])} for {lo[0].name}, ${hi[1] - lo[1]:,} thousand more.",
                [self.ev(a, "income:revenue"), self.ev(b, "income:revenue")])
        # two columns of one filing
        for spec in self.pick(self.annual + self.quarterly, len(self.annual) + len(self.quarterly)):
            if made >= n:
                return
            c = self.company(spec)
            fin = self.book.fin(c.index)
            key = self.rnd.choice(("revenue", "net_income", "operating_income"))
            if spec.form == "10-K":
                fy = spec.period[0]
                cur, prev = fin.annual(fy)[key], fin.annual(fy - 1)[key]
                span, span0 = f"fiscal {fy}", f"fiscal {fy - 1}"
            else:
                fy, q = spec.period
                cur, prev = fin.quarters[(fy, q)][key], fin.quarters[(fy - 1, q)][key]
                span, span0 = f"the three months ended {long_date(period_end(c, (fy, q)))}", "the same quarter a year earlier"
            diff = cur - prev
            pct = f" ({diff / prev * 100:+.1f}%)" if prev > 0 else ""
            made += self.add(
                "comparison",
                f"By how much did {c.name}'s {INCOME_LABELS[key].lower()} change from {span0} to {span}?",
                f"It {'rose' if diff >= 0 else 'fell'} by ${abs(diff):,} thousand{pct}: {_k(prev)} in {span0} and {_k(cur)} in {span} ({spec.form} {spec.file_stem}).",
                [self.ev(spec, f"income:{key}")], key=("cmp", spec.file_stem))

    def count(self, n: int, alias: bool = False) -> None:
        made = 0
        rows = Counter((s.company, s.form, s.month) for s in self.specs)
        dups = Counter((s.company, s.form, s.month) for s in self.specs if s.duplicate)
        untidy = {(s.company, s.month) for s in self.specs if s.ocr or s.empty}
        groups = [g for g in rows if g[1] in ("8-K", "4", "10-Q", "SC 13G/A") and (g[0], g[2]) not in untidy]
        groups.sort()
        with_dups = [g for g in groups if dups[g]]
        chosen = self.pick(with_dups, max(1, n // 4)) + self.pick(groups, 2 * n)
        form_words = {"8-K": "current reports on Form 8-K", "4": "Form 4 insider ownership reports concerning",
                      "10-Q": "quarterly reports on Form 10-Q", "SC 13G/A": "Schedule 13G/A amendments concerning"}
        for company, form, month in chosen:
            if made >= n:
                break
            c = self.book.companies[company]
            if alias and not (c.brand and c.index in self.has_annual):
                continue
            who = c.brand if alias else c.name
            mname = calendar.month_name[month]
            total, dup = rows[(company, form, month)], dups[(company, form, month)]
            if form in ("4", "SC 13G/A"):
                q = f"How many {form_words[form]} {who} are in the corpus for {mname} 2025? Count filing records."
            else:
                q = f"How many {form_words[form]} did {who} file in {mname} 2025? Count filing records in the corpus."
            amend = rows.get((company, form + "/A", month), 0) if form in ("8-K", "10-Q") else 0
            a = f"{total} filing record{'s' if total != 1 else ''} (company CIK {c.cik}, registrant {c.name})"
            a += (f", of which {dup} {'is an exact duplicate' if dup == 1 else 'are exact duplicates'} (same md5 under another "
                  f"file_stem), so {total - dup} distinct document{'s' if total - dup != 1 else ''}" if dup else "; no duplicates")
            a += f"; {amend} amendment(s) on Form {form}/A not counted." if amend else "."
            made += self.add("alias" if alias else "count", q, a)
        if alias:
            return
        # corpus-wide counts of periodic reports in a month
        for month in self.pick(range(1, 7), 3):
            for form in ("10-K", "10-Q"):
                recs = [s for s in self.specs if s.month == month and s.form == form]
                dup = sum(s.duplicate for s in recs)
                amend = sum(1 for s in self.specs if s.month == month and s.form == form + "/A")
                mname = calendar.month_name[month]
                self.add("count", f"How many annual reports on Form {form} were filed in {mname} 2025 across the whole corpus?"
                         if form == "10-K" else f"How many quarterly reports on Form {form} were filed in {mname} 2025 across the whole corpus?",
                         f"{len(recs)} filing records in the {mname} 2025 file"
                         + (f", {dup} of them exact duplicates (same md5), so {len(recs) - dup} distinct documents" if dup else ", none duplicated")
                         + f"; {amend} Form {form}/A amendment(s) not counted.")

    def unanswerable(self, n: int) -> None:
        names = {x for c in self.book.companies for x in (c.name.split(" ")[0], c.brand) if x}
        fakes = [f for f in unique_names(random.Random(f"fakes:{self.plan.seed}"), 40) if f not in names]
        for fake in fakes[: n // 3]:
            self.add("unanswerable", f"What was {fake} Corporation's total revenue for fiscal 2024?",
                     f"The corpus holds no filings by any company named {fake} Corporation, so the question cannot be answered from it.")
        for spec in self.pick(self.annual, n // 3):
            c = self.company(spec)
            self.add("unanswerable", f"What was {c.name}'s net income for fiscal 2019?",
                     f"The corpus cannot answer this: {c.name}'s filings in it (January-June 2025) report fiscal "
                     f"{spec.period[0] - 1} to {spec.period[0] + 1} figures at most, and none reports fiscal 2019.")
        for spec in self.pick(self.annual + self.quarterly, n):
            if sum(k == "unanswerable" for k, *_ in self.items) >= n:
                return
            c = self.company(spec)
            fy = 2025 if c.fye_month == 12 else 2026
            self.add("unanswerable", f"What total revenue did {c.name} report in its annual report on Form 10-K for fiscal {fy}?",
                     f"The corpus cannot answer this: {c.name}'s fiscal {fy} ends after June 2025 and no such 10-K is in the "
                     "corpus (it covers filings from January to June 2025).", key=("future", c.index))


def make_questions(plan, book, pool, *, minimum: int = MINIMUM) -> list[tuple[Question, Reference]]:
    """At least `minimum` question/reference pairs for the planned corpus (see module docstring)."""
    m = _Maker(plan, book, pool)
    m.table_fact(QUOTAS["table_fact"] - 6)
    m.segment_fact(6)
    m.prose_fact(QUOTAS["prose_fact"])
    m.header_fact(QUOTAS["header_fact"])
    m.comparison(QUOTAS["comparison"])
    m.count(QUOTAS["count"])
    m.table_fact(QUOTAS["alias"] // 2, alias=True)
    m.count(QUOTAS["alias"] - QUOTAS["alias"] // 2, alias=True)
    m.unanswerable(QUOTAS["unanswerable"])
    extra = 0
    while len(m.items) < minimum + 5 and extra < 10:  # small corpora: top up with table facts
        m.table_fact(minimum + 5 - len(m.items))
        extra += 1
    if len(m.items) < minimum:
        raise AssertionError(f"only {len(m.items)} questions could be made; the plan has too few periodic reports")
    order = list(range(len(m.items)))
    m.rnd.shuffle(order)  # mix kinds so that any sample of ids sees all of them
    out = []
    for n, i in enumerate(order, start=1):
        kind, text, answer, evidence = m.items[i]
        qid = f"Q{n:03d}"
        out.append((Question(qid, text), Reference(qid, answer, evidence, kind)))
    return out
