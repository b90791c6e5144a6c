"""Synthetic issuers and their financials, consistent across every filing that shows them.

`make_companies(seed, n)` returns `n` `Company` records, a pure function of its arguments, so a
worker process rebuilds exactly the main process's list from two integers. Each company has a
charter name (as on its cover page), name variants used by some filings (upper-case conformed
name, no comma, "Corp" for "Corporation"), often a brand or ticker that differs from the charter
name, a CIK, a commission file number, a state, a fiscal year end and segments.

`financials(seed, company)` gives quarterly figures (USD thousands) for fiscal years 2023-2025.
Annual figures are sums of the quarters and year-end balances are fourth-quarter balances, so a
10-K's quarterly table adds up to its annual column and a 10-Q's prior-year column equals the
matching quarter in the 10-K: consistency holds by construction, not by checking.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cached_property

import numpy as np

_SYL_A = ("Ab Al Am Ar As Bel Bri Cal Cor Dal Del Ev Fal Gal Hal Is Jun Kal Lum Mar Nor Or Pal "
          "Quin Ros Sal Tal Ul Val Ver Wes Xan Yor Zen Ben Cas Dun Fen Gar Hel Ker Lan Mer Ost "
          "Pem Red Sto Tor Vin Win Ash Bro Cle Dra Eth Fro Gre Hol").split()
_SYL_B = ("a o i e u ar or en an on el ix ex ia io ara ora ena ica").split()
_SYL_C = ("tech dyne gen vance tra com point line field stone bridge gate wave core star mark "
          "rock well ford wood land port view crest haven rix tex lux nova sys med cor bio").split()
_KINDS = (
    ("Holdings, Inc.", "HOLDINGS INC", "Holdings Inc."),
    ("Corporation", "CORP", "Corp."),
    ("Inc.", "INC", "Inc"),
    ("Group, Inc.", "GROUP INC", "Group Inc."),
    ("Technologies, Inc.", "TECHNOLOGIES INC", "Technologies Inc."),
    ("Bancorp, Inc.", "BANCORP INC", "Bancorp"),
    ("Therapeutics, Inc.", "THERAPEUTICS INC", "Therapeutics Inc"),
    ("Industries, Inc.", "INDUSTRIES INC", "Industries Inc."),
    ("Energy Corp.", "ENERGY CORP", "Energy Corporation"),
    ("Brands, Inc.", "BRANDS INC", "Brands Inc."),
    ("Financial Corporation", "FINANCIAL CORP", "Financial Corp."),
    ("Pharmaceuticals, Inc.", "PHARMACEUTICALS INC", "Pharmaceuticals"),
    ("Systems, Inc.", "SYSTEMS INC", "Systems Inc."),
    ("Partners, L.P.", "PARTNERS L P", "Partners LP"),
)
_STATES = (("Delaware", "DE"),) * 6 + (
    ("Nevada", "NV"), ("Maryland", "MD"), ("New York", "NY"), ("California", "CA"), ("Texas", "TX"),
    ("Ohio", "OH"), ("Florida", "FL"), ("Washington", "WA"), ("Minnesota", "MN"), ("Pennsylvania", "PA"),
    ("Massachusetts", "MA"), ("Georgia", "GA"), ("New Jersey", "NJ"), ("Virginia", "VA"),
)
_CITIES = (("Wilmington", "DE", "19801"), ("Austin", "TX", "78701"), ("Columbus", "OH", "43215"),
           ("Denver", "CO", "80202"), ("Boston", "MA", "02110"), ("Seattle", "WA", "98101"),
           ("Atlanta", "GA", "30303"), ("Chicago", "IL", "60601"), ("Minneapolis", "MN", "55401"),
           ("San Jose", "CA", "95113"), ("Charlotte", "NC", "28202"), ("Phoenix", "AZ", "85004"),
           ("Nashville", "TN", "37203"), ("Pittsburgh", "PA", "15222"), ("Reno", "NV", "89501"),
           ("Houston", "TX", "77002"), ("Irvine", "CA", "92618"), ("Stamford", "CT", "06901"))
_STREETS = ("Main Street", "Market Street", "Commerce Drive", "Park Avenue", "Technology Way",
            "Lake Drive", "Innovation Boulevard", "Corporate Center Drive", "Harbor Road", "Elm Street")
_SEGMENTS = ("Products", "Services", "Software", "Industrial", "Consumer", "Healthcare",
             "Commercial", "Residential", "Aerospace", "Energy Solutions", "Retail", "Wholesale",
             "International", "Specialty Materials", "Digital Media", "Financial Services")
_AUDITORS = ("Harlow & Pike LLP", "Merrin Stokes LLP", "Delacroix Ashby LLP", "Brennan Voss & Co. LLP",
             "Whitcombe Hale LLP", "Tamsin Grove LLP", "Oakridge Partners LLP")
_EXCHANGES = ("The Nasdaq Global Select Market", "New York Stock Exchange", "The Nasdaq Capital Market",
              "NYSE American")
FYE_MONTHS = (12, 12, 12, 12, 12, 12, 9, 6, 3)


@dataclass(frozen=True)
class Company:
    index: int
    cik: int
    name: str  # exactly as in the charter (cover page)
    conformed: str  # EDGAR conformed name, upper case
    variant: str  # an informal spelling used by some filings
    brand: str | None  # a common name that differs from the charter name, if any
    ticker: str
    exchange: str
    state: str
    state_code: str
    file_number: str
    irs_number: str
    street: str
    city: str
    city_state: str
    zip_code: str
    phone: str
    fye_month: int  # 12 = fiscal year ends December 31
    segments: tuple[str, ...]
    auditor: str
    foreign: bool  # files 20-F / 6-K instead of 10-K / 10-Q
    size: float  # revenue scale, USD thousands per quarter

    @property
    def cik_padded(self) -> str:
        return f"{self.cik:010d}"

    @property
    def common_name(self) -> str:
        """How people call the company: its brand, else the charter name without the suffix."""
        return self.brand or self.name.split(" ")[0].rstrip(",")


def unique_names(rnd: random.Random, n: int) -> list[str]:
    """`n` distinct invented company names (also used for companies that do not exist)."""
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < n:
        name = rnd.choice(_SYL_A) + rnd.choice(_SYL_B) + rnd.choice(_SYL_C)
        if rnd.random() < 0.3:
            name = rnd.choice(_SYL_A) + rnd.choice(_SYL_C)
        if name in seen or len(name) < 5:
            continue
        seen.add(name)
        out.append(name)
    return out


def _ticker(core: str, taken: set[str], rnd: random.Random) -> str:
    letters = [c for c in core.upper() if c.isalpha()]
    for _ in range(50):
        k = rnd.randint(3, 4)
        picked = sorted(rnd.sample(range(1, len(letters)), min(k - 1, len(letters) - 1)))[: k - 1]
        t = letters[0] + "".join(letters[i] for i in picked)
        if t not in taken:
            taken.add(t)
            return t
    t = letters[0] + "".join(rnd.choice("ABCDEFGHJKLMNPQRSTVWXYZ") for _ in range(4))
    while t in taken:
        t = letters[0] + "".join(rnd.choice("ABCDEFGHJKLMNPQRSTVWXYZ") for _ in range(4))
    taken.add(t)
    return t


def make_companies(seed: int, n: int) -> tuple[Company, ...]:
    """`n` distinct issuers for `seed`. Core names, tickers and CIKs are unique."""
    rnd = random.Random(f"companies:{seed}")
    # one draw of unique names: the first n are company cores, the rest brand names
    names = unique_names(rnd, n + n // 2 + 20)
    cores, brands = names[:n], iter(names[n:])
    ciks = rnd.sample(range(1_000_000, 2_050_000), n)
    tickers: set[str] = set()
    used: set[str] = set()
    out = []
    for i, core in enumerate(cores):
        kind = _KINDS[int(len(_KINDS) * rnd.random() ** 1.5)]
        brand = None
        if rnd.random() < 0.22:
            # the registrant is a holding entity with initials; people use the brand name
            brand = next(brands)
            initials = "".join(rnd.choice("ABCDEFGHJKLMNPRSTW") for _ in range(rnd.randint(2, 3)))
            while f"{initials} {kind[0]}" in used:  # charter names are unique
                initials += rnd.choice("ABCDEFGHJKLMNPRSTW")
            name = f"{initials} {kind[0]}"
            conformed = f"{initials} {kind[1]}"
            variant = f"{initials} {kind[2]}"
        else:
            name = f"{core} {kind[0]}"
            conformed = f"{core.upper()} {kind[1]}"
            variant = f"{core} {kind[2]}"
        used.add(name)
        state, code = rnd.choice(_STATES)
        city, cstate, zip_code = rnd.choice(_CITIES)
        n_seg = rnd.choice((1, 2, 2, 3, 3, 4))
        segs = tuple(rnd.sample(_SEGMENTS, n_seg))
        size = float(np.exp(rnd.gauss(11.0, 1.6)))  # median ~$60m per quarter, heavy tail
        out.append(
            Company(
                index=i,
                cik=ciks[i],
                name=name,
                conformed=conformed,
                variant=variant,
                brand=brand,
                ticker=_ticker(brand or core, tickers, rnd),
                exchange=rnd.choice(_EXCHANGES),
                state=state,
                state_code=code,
                file_number=rnd.choice(("001-", "001-", "000-")) + str(rnd.randint(10000, 42999)),
                irs_number=f"{rnd.randint(10, 99)}-{rnd.randint(1000000, 9999999)}",
                street=f"{rnd.randint(1, 9999)} {rnd.choice(_STREETS)}",
                city=city,
                city_state=cstate,
                zip_code=zip_code,
                phone=f"({rnd.randint(201, 989)}) {rnd.randint(200, 999)}-{rnd.randint(1000, 9999)}",
                fye_month=rnd.choice(FYE_MONTHS),
                segments=segs,
                auditor=rnd.choice(_AUDITORS),
                foreign=rnd.random() < 0.06,
                size=size,
            )
        )
    return tuple(out)


INCOME_LINES = ("revenue", "cost_of_revenue", "gross_profit", "rd", "sga", "operating_income",
                "interest_expense", "pretax_income", "tax", "net_income")
BALANCE_LINES = ("cash", "receivables", "inventory", "current_assets", "ppe", "goodwill",
                 "total_assets", "current_liabilities", "long_term_debt", "total_liabilities",
                 "equity")
FISCAL_YEARS = (2023, 2024, 2025)
BOOK_CACHE = 4096  # companies whose financials a CompanyBook keeps at once


@dataclass(frozen=True)
class Financials:
    """Quarterly figures in USD thousands, keyed by (fiscal_year, quarter 1-4)."""

    quarters: dict  # (fy, q) -> {line: int}
    segment_revenue: dict  # (fy, q) -> {segment: int}
    balance: dict  # (fy, q) -> {line: int}, at quarter end
    employees: dict  # fy -> headcount at year end
    shares: dict  # fy -> shares outstanding at year end

    def annual(self, fy: int) -> dict:
        return {k: sum(self.quarters[(fy, q)][k] for q in range(1, 5)) for k in INCOME_LINES}

    def annual_segments(self, fy: int) -> dict:
        segs = self.segment_revenue[(fy, 1)].keys()
        return {s: sum(self.segment_revenue[(fy, q)][s] for q in range(1, 5)) for s in segs}

    def ytd(self, fy: int, q: int) -> dict:
        return {k: sum(self.quarters[(fy, i)][k] for i in range(1, q + 1)) for k in INCOME_LINES}


def financials(seed: int, company: Company) -> Financials:
    """The company's figures: a pure function of the seed and the company."""
    rng = np.random.default_rng([seed, 11, company.index])
    quarters: dict = {}
    segments: dict = {}
    balance: dict = {}
    base = company.size
    growth = rng.normal(0.015, 0.03)
    gross_margin = rng.uniform(0.25, 0.7)
    rd_share = rng.uniform(0.0, 0.15)
    sga_share = rng.uniform(0.08, 0.3)
    debt = base * rng.uniform(0.2, 3.0)
    seg_weights = rng.dirichlet(np.ones(len(company.segments)) * 3)
    assets = base * rng.uniform(3, 8)
    t = 0
    for fy in FISCAL_YEARS:
        for q in range(1, 5):
            seasonal = 1.0 + 0.06 * np.sin((q + company.index % 4) * np.pi / 2)
            rev = int(base * (1 + growth) ** t * seasonal * rng.normal(1.0, 0.04))
            seg_vals = [int(rev * w) for w in seg_weights]
            seg_vals[-1] = rev - sum(seg_vals[:-1])  # segments add up to the total exactly
            cost = int(rev * (1 - gross_margin) * rng.normal(1.0, 0.02))
            gross = rev - cost
            rd = int(rev * rd_share)
            sga = int(rev * sga_share * rng.normal(1.0, 0.05))
            op = gross - rd - sga
            interest = int(debt * 0.015)
            pretax = op - interest
            tax = int(max(pretax, 0) * 0.21)
            net = pretax - tax
            quarters[(fy, q)] = dict(zip(INCOME_LINES, (rev, cost, gross, rd, sga, op, interest, pretax, tax, net)))
            segments[(fy, q)] = dict(zip(company.segments, seg_vals))
            cash = int(base * rng.uniform(0.3, 1.5))
            rec = int(rev * rng.uniform(0.4, 0.7))
            inv = int(cost * rng.uniform(0.2, 0.9))
            cur = cash + rec + inv + int(rev * 0.05)
            ppe = int(assets * 0.35)
            gw = int(assets * 0.15)
            total = cur + ppe + gw + int(assets * 0.1)
            cl = int(cur * rng.uniform(0.4, 0.8))
            ltd = int(debt * (1 + 0.03 * t))  # drawn down over time: each year-end differs
            tl = cl + ltd + int(assets * 0.05)
            balance[(fy, q)] = dict(zip(BALANCE_LINES, (cash, rec, inv, cur, ppe, gw, total, cl, ltd, tl, total - tl)))
            assets *= 1 + growth
            t += 1
    employees = {fy: int(base / 55 * rng.uniform(0.8, 1.2)) + 12 for fy in FISCAL_YEARS}
    shares = {fy: int(base * rng.uniform(0.5, 4) * 1000 / 7) for fy in FISCAL_YEARS}
    return Financials(quarters, segments, balance, employees, shares)


def quarter_end(company: Company, fy: int, q: int) -> tuple[int, int]:
    """(year, month) of the end of fiscal quarter `q` of fiscal year `fy` (named for the
    calendar year in which the fiscal year ends)."""
    months_before_fye = 3 * (4 - q)
    m = company.fye_month - months_before_fye
    y = fy
    while m <= 0:
        m += 12
        y -= 1
    return y, m


@dataclass(frozen=True)
class CompanyBook:
    """Companies and their financials for one seed, computed lazily per company."""

    seed: int
    companies: tuple[Company, ...]

    @cached_property
    def _cache(self) -> dict:
        return {}

    def fin(self, index: int) -> Financials:
        cache = self._cache
        if index not in cache:
            if len(cache) >= BOOK_CACHE:
                # bounded: one Financials is ~20 KB, and a full-scale month touches ~20,000
                # companies; unbounded, this cache alone grew a worker by ~400 MiB
                cache.clear()
            cache[index] = financials(self.seed, self.companies[index])
        return cache[index]
