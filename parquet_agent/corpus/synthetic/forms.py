"""Render one planned filing to Markdown: cover page, prose sections and financial tables.

`render(spec, book, pool)` is a pure function of the spec's document fields, the seed's
companies and the text pool: the build workers and the question generator call it separately
and get the same characters. It returns `Rendered(text, facts, data)`: `facts` maps a fact key
(`income:revenue`, `employees`, `event`, ...) to an exact substring of `text` (the quote a gold
evidence entry will point at), `data` holds the structured values behind them.

Figures come from `companies.financials`, so every filing of a company agrees with the others.
Prose beyond the company-specific sentences is drawn from the text pool up to the spec's size.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np

from parquet_agent.corpus.synthetic.companies import CompanyBook, Company, quarter_end
from parquet_agent.corpus.synthetic.covers import cover, long_date, ownership_cover
from parquet_agent.corpus.synthetic.text import BOILERPLATE, TextPool, ocr_noise

INCOME_LABELS = {
    "revenue": "Total revenue", "cost_of_revenue": "Cost of revenue", "gross_profit": "Gross profit",
    "rd": "Research and development", "sga": "Selling, general and administrative",
    "operating_income": "Operating income", "interest_expense": "Interest expense",
    "pretax_income": "Income before income taxes", "tax": "Provision for income taxes",
    "net_income": "Net income",
}
BALANCE_LABELS = {
    "cash": "Cash and cash equivalents", "receivables": "Accounts receivable, net", "inventory": "Inventories",
    "current_assets": "Total current assets", "ppe": "Property and equipment, net", "goodwill": "Goodwill",
    "total_assets": "Total assets", "current_liabilities": "Total current liabilities",
    "long_term_debt": "Long-term debt", "total_liabilities": "Total liabilities",
    "equity": "Total stockholders' equity",
}
_FIRST = ("Maria James Robert Linda Michael Susan David Karen Daniel Priya Wei Ahmed Elena Thomas "
          "Olivia Samuel Grace Victor Hannah Rajesh Laura Kenji Fatima Peter Claire").split()
_LAST = ("Chen Patel Okafor Novak Hughes Moreno Lindqvist Adeyemi Russo Kowalski Brennan Tanaka "
         "Haddad Fischer Ortega Whitfield Nakamura Sullivan Varga Delgado Ivanova Mercer Quinn").split()
_TITLES = ("Chief Financial Officer", "Chief Operating Officer", "Chief Executive Officer",
           "General Counsel", "Chief Accounting Officer", "Chief Technology Officer")
_BANKS = ("First Meridian Bank, N.A.", "Coastal Union Trust Company", "Northgate Capital Bank",
          "Sterling Harbor Bank, N.A.", "Pinecrest National Bank")
_EMPTY_TEXTS = ("", "\n", "<!-- page 1 -->\n", "[Image]\n", "Table of Contents\n\n", "<!-- page 1 -->\n\n<!-- page 2 -->\n")


@dataclass(frozen=True)
class Rendered:
    text: str
    facts: dict
    data: dict


def money(v: int) -> str:
    return f"({-v:,})" if v < 0 else f"{v:,}"


def millions(v: int) -> str:
    return f"${v / 1000:,.1f} million"


def _month_end(y: int, m: int) -> dt.date:
    last = dt.date(y, m, 28) + dt.timedelta(days=4)
    return last - dt.timedelta(days=last.day)


def period_end(company: Company, period: tuple[int, int]) -> dt.date:
    """The last day of fiscal quarter `period` = (fiscal year, quarter) of `company`."""
    return _month_end(*quarter_end(company, *period))


def _table(head: list[str], rows: list[tuple[str, list[int]]], facts: dict, prefix: str, keys: list[str]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, (label, vals) in zip(keys, rows):
        line = "| " + " | ".join([label] + [money(v) for v in vals]) + " |"
        facts[f"{prefix}:{key}"] = line
        lines.append(line)
    return "\n".join(lines)


def _name_on_cover(company: Company, rng) -> str:
    u = rng.random()
    return company.name if u < 0.8 else (company.variant if u < 0.92 else company.conformed)


def _person(rng) -> str:
    return f"{_FIRST[rng.integers(len(_FIRST))]} {_LAST[rng.integers(len(_LAST))]}"


def render(spec, book: CompanyBook, pool: TextPool) -> Rendered:
    """The Markdown of one filing (see module docstring)."""
    rng = np.random.default_rng([book.seed, 2, spec.content_id])
    if spec.empty:
        return Rendered(_EMPTY_TEXTS[int(rng.integers(len(_EMPTY_TEXTS)))], {}, {})
    company = book.companies[spec.company]
    facts: dict = {}
    data: dict = {"name": None}
    name = _name_on_cover(company, rng)
    data["name"] = name
    if spec.form in ("3", "4"):
        parts = _ownership(spec, company, rng, facts, data)
    elif spec.form in ("10-K", "20-F"):
        parts = _annual(spec, company, book, name, rng, facts, data)
    elif spec.form == "10-Q":
        parts = _quarterly(spec, company, book, name, rng, facts, data)
    elif spec.form in ("8-K", "8-K/A", "6-K"):
        parts = _current(spec, company, book, name, rng, facts, data)
    else:
        parts = _other(spec, company, name, rng, facts)
    text = _fill(parts, spec.size, rng, pool)
    if spec.style == 0:
        text = _paginate(text)
    if spec.ocr:
        text = ocr_noise(text, rng)
        facts = {}
    return Rendered(text, facts, data)


def _fill(parts: list, size: int, rng, pool: TextPool) -> str:
    """Join fixed parts; `None` marks where pooled prose goes, shared out up to `size`."""
    fixed = sum(len(p) for p in parts if p is not None)
    slots = sum(1 for p in parts if p is None) or 1
    n = max(0, int((size - fixed) / pool.mean_len))
    share = rng.dirichlet(np.ones(slots) * 2) if slots > 1 else np.ones(1)
    out = []
    k = 0
    for p in parts:
        if p is None:
            out.append(pool.paragraphs(rng, int(n * share[k])) + "\n\n")
            k += 1
        else:
            out.append(p)
    return "".join(out)


def _paginate(text: str) -> str:
    # page markers go only at paragraph breaks, so no quoted line or sentence is split
    blocks = text.split("\n\n")
    out, acc, page = [], 0, 2
    for b in blocks:
        out.append(b)
        acc += len(b)
        if acc > 3200:
            out.append(f"<!-- page {page} -->")
            page += 1
            acc = 0
    return "\n\n".join(out)


def _shares_line(company: Company, book: CompanyBook, fy: int, filed: dt.date, facts: dict) -> str:
    d = filed - dt.timedelta(days=14)
    line = (f"As of {long_date(d)}, the registrant had {book.fin(company.index).shares[fy]:,} shares of "
            "common stock outstanding.")
    facts["shares"] = line
    return line


def _annual(spec, company, book, name, rng, facts, data) -> list:
    fy, _ = spec.period
    fin = book.fin(company.index)
    fye = period_end(company, spec.period)
    prior_fye = period_end(company, (fy - 1, 4))
    cur, prev = fin.annual(fy), fin.annual(fy - 1)
    data.update(fy=fy, fye=fye)
    head = cover(spec.style, spec, company, name, fye, _shares_line(company, book, fy, spec.filed, facts), facts)
    intro = (f"{company.name} (together with its consolidated subsidiaries, \"{company.brand}\", the \"Company,\" "
             "\"we,\" \"us\" or \"our\")" if company.brand else f"{company.name} (the \"Company,\" \"we,\" \"us\" or \"our\")")
    intro += f" was incorporated in {company.state} and operates through {len(company.segments)} reportable segment" \
             f"{'s' if len(company.segments) > 1 else ''}: {', '.join(company.segments)}."
    facts["incorporation"] = f"was incorporated in {company.state} and operates"
    emp = f"As of {long_date(fye)}, we had approximately {fin.employees[fy]:,} full-time employees."
    facts["employees"] = emp
    hq = (f"Our corporate headquarters is located in {company.city}, {company.city_state}, where we lease "
          f"approximately {int(rng.integers(20, 400)) * 1000:,} square feet of office space.")
    facts["headquarters"] = hq
    change = (cur["revenue"] - prev["revenue"]) / prev["revenue"] * 100
    rev = (f"Total revenue for fiscal {fy} was {millions(cur['revenue'])}, "
           f"{'an increase' if change >= 0 else 'a decrease'} of {abs(change):.1f}% compared with "
           f"{millions(prev['revenue'])} in fiscal {fy - 1}.")
    facts["revenue_sentence"] = rev
    aud = (f"{company.auditor}, an independent registered public accounting firm, has audited the consolidated "
           "financial statements included in this Annual Report and the effectiveness of our internal control "
           "over financial reporting.")
    facts["auditor"] = aud
    ticker = (f"Our common stock is listed on {company.exchange} under the symbol \"{company.ticker}\".")
    facts["ticker"] = ticker
    y1, y0 = f"Year Ended {long_date(fye)}", f"Year Ended {long_date(prior_fye)}"
    inc = _table(["(in thousands)", y1, y0], [(INCOME_LABELS[k], [cur[k], prev[k]]) for k in INCOME_LABELS],
                 facts, "income", list(INCOME_LABELS))
    bs_cur, bs_prev = fin.balance[(fy, 4)], fin.balance[(fy - 1, 4)]
    bal = _table(["(in thousands)", long_date(fye), long_date(prior_fye)],
                 [(BALANCE_LABELS[k], [bs_cur[k], bs_prev[k]]) for k in BALANCE_LABELS], facts, "balance",
                 list(BALANCE_LABELS))
    sc, sp = fin.annual_segments(fy), fin.annual_segments(fy - 1)
    seg = _table(["Segment revenue (in thousands)", f"Fiscal {fy}", f"Fiscal {fy - 1}"],
                 [(s, [sc[s], sp[s]]) for s in company.segments], facts, "segment", list(company.segments))
    qs = [fin.quarters[(fy, q)] for q in (1, 2, 3, 4)]
    qt = _table(["(in thousands, unaudited)"] + [f"Q{q} fiscal {fy}" for q in (1, 2, 3, 4)],
                [(INCOME_LABELS[k], [x[k] for x in qs]) for k in ("revenue", "gross_profit", "operating_income", "net_income")],
                facts, "quarterly", ["revenue", "gross_profit", "operating_income", "net_income"])
    return [head, "PART I\n\n## Item 1. Business\n\n", intro + "\n\n", None, "### Human Capital\n\n", emp + " ",
            "We believe our relations with our employees are good.\n\n", "## Item 1A. Risk Factors\n\n",
            BOILERPLATE[0] + "\n\n", None, "## Item 1C. Cybersecurity\n\n", None, "## Item 2. Properties\n\n",
            hq + "\n\n", "## Item 3. Legal Proceedings\n\n", None,
            "PART II\n\n## Item 5. Market for Registrant's Common Equity\n\n", ticker + "\n\n",
            "## Item 7. Management's Discussion and Analysis of Financial Condition and Results of Operations\n\n",
            rev + "\n\n", None, "## Item 8. Financial Statements and Supplementary Data\n\n",
            "### Report of Independent Registered Public Accounting Firm\n\n", aud + "\n\n",
            "### Consolidated Statements of Operations\n\n", inc + "\n\n", "### Consolidated Balance Sheets\n\n",
            bal + "\n\n", "### Segment Information\n\n", seg + "\n\n",
            "### Quarterly Results of Operations (Unaudited)\n\n", qt + "\n\n", None,
            "## Item 9A. Controls and Procedures\n\n", BOILERPLATE[1] + " " + BOILERPLATE[2] + "\n\n",
            "## Signatures\n\n", BOILERPLATE[4] + "\n\n",
            f"{name}\n\nBy: /s/ {_person(rng)}\n\nDate: {long_date(spec.filed)}\n\n"]


def _quarterly(spec, company, book, name, rng, facts, data) -> list:
    fy, q = spec.period
    fin = book.fin(company.index)
    qe, qe0 = period_end(company, (fy, q)), period_end(company, (fy - 1, q))
    fye0 = period_end(company, (fy - 1, 4))
    cur, prev = fin.quarters[(fy, q)], fin.quarters[(fy - 1, q)]
    data.update(fy=fy, q=q, qe=qe)
    head = cover(spec.style, spec, company, name, qe, _shares_line(company, book, fy, spec.filed, facts), facts)
    inc = _table(["(in thousands, unaudited)", f"Three Months Ended {long_date(qe)}", f"Three Months Ended {long_date(qe0)}"],
                 [(INCOME_LABELS[k], [cur[k], prev[k]]) for k in INCOME_LABELS], facts, "income", list(INCOME_LABELS))
    bs, bs0 = fin.balance[(fy, q)], fin.balance[(fy - 1, 4)]
    bal = _table(["(in thousands)", long_date(qe), long_date(fye0)],
                 [(BALANCE_LABELS[k], [bs[k], bs0[k]]) for k in BALANCE_LABELS], facts, "balance", list(BALANCE_LABELS))
    sc, sp = fin.segment_revenue[(fy, q)], fin.segment_revenue[(fy - 1, q)]
    seg = _table(["Segment revenue (in thousands)", f"Q{q} fiscal {fy}", f"Q{q} fiscal {fy - 1}"],
                 [(s, [sc[s], sp[s]]) for s in company.segments], facts, "segment", list(company.segments))
    rev = (f"Total revenue for the three months ended {long_date(qe)} was {millions(cur['revenue'])} compared with "
           f"{millions(prev['revenue'])} for the three months ended {long_date(qe0)}.")
    facts["revenue_sentence"] = rev
    return [head, "PART I. FINANCIAL INFORMATION\n\n## Item 1. Financial Statements\n\n",
            "### Condensed Consolidated Statements of Operations\n\n", inc + "\n\n",
            "### Condensed Consolidated Balance Sheets\n\n", bal + "\n\n", "### Segment Information\n\n", seg + "\n\n",
            BOILERPLATE[5] + "\n\n", None,
            "## Item 2. Management's Discussion and Analysis of Financial Condition and Results of Operations\n\n",
            BOILERPLATE[0] + "\n\n", rev + "\n\n", None, "## Item 4. Controls and Procedures\n\n",
            BOILERPLATE[1] + "\n\n", "PART II. OTHER INFORMATION\n\n## Item 1A. Risk Factors\n\n", None,
            "## Signatures\n\n", BOILERPLATE[4] + "\n\n",
            f"{name}\n\nBy: /s/ {_person(rng)}\n\nDate: {long_date(spec.filed)}\n\n"]


def latest_quarter(company: Company, filed: dt.date) -> tuple[int, int] | None:
    """The last fiscal quarter (within the modelled years) that ended 20+ days before `filed`."""
    best = None
    for fy in (2024, 2025):
        for q in (1, 2, 3, 4):
            if period_end(company, (fy, q)) + dt.timedelta(days=20) <= filed:
                best = (fy, q)
    return best


def _current(spec, company, book, name, rng, facts, data) -> list:
    head = cover(spec.style, spec, company, name, None, "", facts)
    kinds = ["5.02", "8.01", "1.01", "7.01", "5.07"]
    latest = latest_quarter(company, spec.filed)
    if latest and latest[0] >= 2024:
        kinds += ["2.02", "2.02"]
    item = kinds[int(rng.integers(len(kinds)))]
    event_day = spec.filed - dt.timedelta(days=2)
    tail = [BOILERPLATE[4] + "\n\n", f"{name}\n\nBy: /s/ {_person(rng)}\n\nDate: {long_date(spec.filed)}\n\n"]
    data["item"] = item
    if item == "5.02":
        person, title = _person(rng), _TITLES[int(rng.integers(len(_TITLES)))]
        eff = event_day + dt.timedelta(days=int(rng.integers(3, 30)))
        s = (f"On {long_date(event_day)}, the Board of Directors of the Company appointed {person} as "
             f"{title}, effective {long_date(eff)}.")
        data.update(person=person, title=title, effective=eff)
        body = ["## Item 5.02 Departure of Directors or Certain Officers; Election of Directors; Appointment of Certain Officers\n\n", s + " ", None]
    elif item == "8.01":
        amt = int(rng.integers(5, 95)) / 100
        pay = event_day + dt.timedelta(days=int(rng.integers(20, 45)))
        s = (f"On {long_date(event_day)}, the Company announced that its Board of Directors declared a quarterly "
             f"cash dividend of ${amt:.2f} per share of common stock, payable on {long_date(pay)}.")
        data.update(amount=amt, payable=pay)
        body = ["## Item 8.01 Other Events\n\n", s + "\n\n", None]
    elif item == "1.01":
        amt = int(rng.integers(5, 200)) * 5
        bank = _BANKS[int(rng.integers(len(_BANKS)))]
        s = (f"On {long_date(event_day)}, the Company entered into a credit agreement with {bank}, as administrative "
             f"agent, providing for a senior secured revolving credit facility of up to ${amt:,}.0 million.")
        data.update(amount=amt, bank=bank)
        body = ["## Item 1.01 Entry into a Material Definitive Agreement\n\n", s + " ", None]
    elif item == "2.02" and latest is not None:  # "2.02" is drawn only when there is a latest
        fy, q = latest
        fin = book.fin(company.index).quarters[(fy, q)]
        qe = period_end(company, (fy, q))
        s = (f"On {long_date(event_day)}, {company.name} issued a press release announcing revenue of "
             f"{millions(fin['revenue'])} and net income of {millions(fin['net_income'])} for the quarter ended "
             f"{long_date(qe)}.")
        data.update(fy=fy, q=q, qe=qe, revenue=fin["revenue"], net_income=fin["net_income"])
        body = ["## Item 2.02 Results of Operations and Financial Condition\n\n", s + " ", BOILERPLATE[3] + "\n\n",
                "## Exhibit 99.1\n\n", None]
    else:
        s = (f"On {long_date(event_day)}, the Company made available a presentation to investors, a copy of which "
             "is furnished as Exhibit 99.1 to this Current Report.")
        body = [f"## Item {item} {'Regulation FD Disclosure' if item == '7.01' else 'Submission of Matters to a Vote of Security Holders'}\n\n",
                s + "\n\n", None]
    facts["event"] = s
    return [head] + body + ["## Item 9.01 Financial Statements and Exhibits\n\n",
                            "| Exhibit No. | Description |\n|---|---|\n| 99.1 | Press release |\n| 104 | Cover Page Interactive Data File |\n\n"] + tail


def _ownership(spec, company, rng, facts, data) -> list:
    person, title = _person(rng), _TITLES[int(rng.integers(len(_TITLES)))]
    data.update(person=person)
    n = int(rng.integers(1, 6))
    lines = ["| Title of Security | Transaction Date | Code | Amount | (A) or (D) | Price |", "|---|---|---|---|---|---|"]
    for _ in range(n):
        lines.append(f"| Common Stock | {spec.filed - dt.timedelta(days=2):%m/%d/%Y} | {'SPMA'[int(rng.integers(4))]} | "
                     f"{int(rng.integers(100, 90000)):,} | {'AD'[int(rng.integers(2))]} | ${rng.uniform(2, 400):.2f} |")
    return [ownership_cover(spec, company, person, title), "Table I - Non-Derivative Securities Acquired, Disposed of, or Beneficially Owned\n\n",
            "\n".join(lines) + "\n\n", "Explanation of Responses:\n\n", None, f"/s/ {person}\n"]


def _other(spec, company, name, rng, facts) -> list:
    head = cover(spec.style, spec, company, name, None, "", facts)
    parts: list[str | None] = [head]  # None: pooled prose goes here (_fill)
    if spec.form == "13F-HR":
        rows = ["| Name of Issuer | Title of Class | CUSIP | Value (x$1000) | Shares | Investment Discretion |", "|---|---|---|---|---|---|"]
        for _ in range(max(5, spec.size // 400)):
            rows.append(f"| {_LAST[int(rng.integers(len(_LAST)))].upper()} {('INC', 'CORP', 'CO', 'PLC')[int(rng.integers(4))]} | COM | "
                        f"{int(rng.integers(10**8, 10**9))}{int(rng.integers(10))} | {int(rng.integers(10, 900000)):,} | "
                        f"{int(rng.integers(100, 9000000)):,} | SOLE |")
        return parts + ["Form 13F Information Table\n\n", "\n".join(rows) + "\n\n"]
    if spec.form == "DEF 14A":
        rows = ["| Name and Principal Position | Year | Salary ($) | Stock Awards ($) | Total ($) |", "|---|---|---|---|---|"]
        for _ in range(5):
            sal = int(rng.integers(300, 1500)) * 1000
            st = int(rng.integers(0, 9000)) * 1000
            rows.append(f"| {_person(rng)}, {_TITLES[int(rng.integers(len(_TITLES)))]} | 2024 | {sal:,} | {st:,} | {sal + st:,} |")
        parts += ["## Proxy Statement for the 2025 Annual Meeting of Stockholders\n\n", None,
                  "## Summary Compensation Table\n\n", "\n".join(rows) + "\n\n", None]
    elif spec.form in ("SC 13G", "SC 13G/A"):
        parts += [f"Name of Issuer: {company.name}\n\nTitle of Class of Securities: Common Stock\n\n",
                  f"Item 4. Ownership. Percent of class: {rng.uniform(5, 19.9):.1f}%\n\n", None]
    else:
        parts += [f"## {spec.form}\n\n", None, "## Signatures\n\n", BOILERPLATE[4] + "\n\n"]
    return parts
