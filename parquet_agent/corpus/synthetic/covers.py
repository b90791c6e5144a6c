"""Issuer cover pages in the shapes real parsed filings take.

Real corpora mix parsers, so the same facts (registrant name, CIK, commission file number,
form type, period, filing date, state) arrive in several shapes; a header parser that works on
only one of them would fail on real data. Styles:

0. page-marked plain text, as PyMuPDF gives for a PDF (like the FinanceBench texts);
1. Markdown from HTML with the cover's layout tables kept as pipe tables;
2. Markdown from HTML with headings and bold runs;
3. an EDGAR SGML submission header followed by the document text (`.txt` submissions).

`cover(style, spec, company, name, facts)` returns the cover text and records exact quotes
(file number, shares outstanding, ...) in `facts` for question generation.
"""

from __future__ import annotations

import datetime as dt

from parquet_agent.corpus.synthetic.companies import Company

FORM_TITLES = {
    "10-K": "ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934",
    "10-K/A": "ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934 (Amendment No. 1)",
    "10-Q": "QUARTERLY REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934",
    "10-Q/A": "QUARTERLY REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934 (Amendment No. 1)",
    "8-K": "CURRENT REPORT Pursuant to Section 13 or 15(d) of the Securities Exchange Act of 1934",
    "8-K/A": "CURRENT REPORT Pursuant to Section 13 or 15(d) of the Securities Exchange Act of 1934 (Amendment No. 1)",
    "20-F": "ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934",
    "6-K": "REPORT OF FOREIGN PRIVATE ISSUER PURSUANT TO RULE 13a-16 OR 15d-16 UNDER THE SECURITIES EXCHANGE ACT OF 1934",
    "DEF 14A": "SCHEDULE 14A Proxy Statement Pursuant to Section 14(a) of the Securities Exchange Act of 1934",
    "S-1": "REGISTRATION STATEMENT UNDER THE SECURITIES ACT OF 1933",
    "S-3": "REGISTRATION STATEMENT UNDER THE SECURITIES ACT OF 1933",
    "S-8": "REGISTRATION STATEMENT UNDER THE SECURITIES ACT OF 1933",
    "424B2": "PROSPECTUS SUPPLEMENT Filed Pursuant to Rule 424(b)(2)",
    "SC 13G": "SCHEDULE 13G Under the Securities Exchange Act of 1934",
    "SC 13G/A": "SCHEDULE 13G Under the Securities Exchange Act of 1934 (Amendment No. 2)",
    "11-K": "ANNUAL REPORT PURSUANT TO SECTION 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934",
    "NT 10-K": "NOTIFICATION OF LATE FILING",
    "13F-HR": "FORM 13F COVER PAGE",
}


def long_date(d: dt.date) -> str:
    return f"{d:%B} {d.day}, {d.year}"


def period_line(spec, company: Company, period_end: dt.date | None) -> str:
    if period_end is None:
        return ""
    if spec.form.startswith("10-K") or spec.form == "20-F":
        return f"For the fiscal year ended {long_date(period_end)}"
    return f"For the quarterly period ended {long_date(period_end)}"


def cover(style: int, spec, company: Company, name: str, period_end: dt.date | None,
          shares_line: str, facts: dict) -> str:
    """The cover page of one filing in the given style; quotes go into `facts`."""
    form = spec.form
    title = FORM_TITLES.get(form, f"FORM {form}")
    per = period_line(spec, company, period_end)
    event = f"Date of Report (Date of earliest event reported): {long_date(spec.filed - dt.timedelta(days=2))}"
    fileno = f"Commission File Number: {company.file_number}" if style else f"Commission file number {company.file_number}"
    facts["file_number"] = fileno
    lines: list[str]
    if style == 0:
        lines = ["<!-- page 1 -->", "Table of Contents", "UNITED STATES", "SECURITIES AND EXCHANGE COMMISSION",
                 "Washington, D.C. 20549 ", f"FORM {form}", "☒", title]
        lines += [per] if per else ([event] if form.startswith("8-K") else [])
        lines += ["or", "☐", "TRANSITION REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES", "EXCHANGE ACT OF 1934"] if per else []
        lines += [fileno, name, "(Exact name of registrant as specified in its charter)", company.state, " ",
                  company.irs_number, "(State or other jurisdiction of", "incorporation or organization)", " ",
                  "(I.R.S. Employer Identification No.)",
                  f"{company.street}, {company.city}, {company.city_state} {company.zip_code}",
                  "(Address of principal executive offices) (Zip Code)",
                  f"Registrant’s telephone number, including area code: {company.phone}",
                  "Securities registered pursuant to Section 12(b) of the Act:", "Title of each class",
                  "Trading Symbol", " ", "Name of each exchange on", "which registered",
                  "Common Stock, $0.001 par value", company.ticker, company.exchange]
        if shares_line:
            lines.append(shares_line)
        return "\n".join(lines) + "\n\n"
    if style == 1:
        out = ([ixbrl_preamble(spec, company, period_end)]
               if spec.period and period_end is not None and spec.content_id % 5 < 3 else [])
        out += ["UNITED STATES  \nSECURITIES AND EXCHANGE COMMISSION  \nWashington, D.C. 20549", "",
               f"**FORM {form}**", "", f"**{title}**", ""]
        if per:
            out += [per, ""]
        elif form.startswith("8-K"):
            out += [event, ""]
        out += [fileno, "", f"**{name}**", "", "(Exact name of registrant as specified in its charter)", "",
                f"| {company.state} | | {company.irs_number} |", "|---|---|---|",
                "| (State or other jurisdiction of incorporation or organization) | | (I.R.S. Employer Identification No.) |",
                "", f"| {company.street}, {company.city}, {company.city_state} | {company.zip_code} |", "|---|---|",
                "| (Address of principal executive offices) | (Zip Code) |", "",
                f"Registrant's telephone number, including area code: {company.phone}", "",
                "Securities registered pursuant to Section 12(b) of the Act:", "",
                "| Title of each class | Trading Symbol(s) | Name of each exchange on which registered |",
                "|---|---|---|", f"| Common Stock, par value $0.0001 per share | {company.ticker} | {company.exchange} |", ""]
        if shares_line:
            out += [shares_line, ""]
        return "\n".join(out) + "\n"
    if style == 2:
        out = ["# UNITED STATES SECURITIES AND EXCHANGE COMMISSION", "", "**Washington, D.C. 20549**", "",
               f"## FORM {form}", "", title, ""]
        if per:
            out += [f"**{per}**", ""]
        elif form.startswith("8-K"):
            out += [event, ""]
        out += [f"### {name.upper()}", "", "*(Exact name of registrant as specified in its charter)*", "",
                f"**{company.state}** (State or other jurisdiction of incorporation)  ", f"**{fileno}**  ",
                f"**{company.irs_number}** (IRS Employer Identification No.)", "",
                f"{company.street}  ", f"{company.city}, {company.city_state} {company.zip_code}  ",
                "(Address of principal executive offices, including zip code)", "",
                f"{company.phone}  ", "(Registrant's telephone number, including area code)", "",
                f"Common Stock — trading symbol **{company.ticker}** — {company.exchange}", ""]
        if shares_line:
            out += [shares_line, ""]
        return "\n".join(out) + "\n"
    return sgml_header(spec, company, period_end) + cover(1, spec, company, name, period_end, shares_line, facts)


def ixbrl_preamble(spec, company: Company, period_end: dt.date) -> str:
    """What a Markdown converter leaves of an inline-XBRL document's hidden header: the
    document name, then the hidden `dei:` values run together (flag, fiscal year end, fiscal
    period, year, the zero-padded CIK) and taxonomy URLs, as in real converted 10-Ks."""
    fy, q = spec.period
    fp = "FY" if spec.form in ("10-K", "20-F") else f"Q{q}"
    fye = f"--{company.fye_month:02d}-{_month_days(company.fye_month)}"
    urls = "".join(f"http://fasb.org/us-gaap/2024#{t}" for t in
                   ("OtherAssetsNoncurrent", "AccruedLiabilitiesCurrent", "InterestExpenseNonoperating"))
    return (f"{company.ticker.lower()}-{period_end:%Y%m%d}\n\n"
            f"false{fye}{fp}{fy}{company.cik_padded}{urls}\n")


def _month_days(month: int) -> int:
    return 31 if month in (1, 3, 5, 7, 8, 10, 12) else (28 if month == 2 else 30)


def sgml_header(spec, company: Company, period_end: dt.date | None) -> str:
    d = spec.filed
    per = f"CONFORMED PERIOD OF REPORT:\t{period_end:%Y%m%d}\n" if period_end else ""
    return (
        f"<SEC-DOCUMENT>{spec.origin_stem}.txt : {d:%Y%m%d}\n"
        f"<SEC-HEADER>{spec.origin_stem}.hdr.sgml : {d:%Y%m%d}\n"
        f"ACCESSION NUMBER:\t\t{spec.origin_stem}\n"
        f"CONFORMED SUBMISSION TYPE:\t{spec.form}\n"
        "PUBLIC DOCUMENT COUNT:\t\t3\n"
        f"{per}"
        f"FILED AS OF DATE:\t\t{d:%Y%m%d}\n\n"
        "FILER:\n\n\tCOMPANY DATA:\t\n"
        f"\t\tCOMPANY CONFORMED NAME:\t\t\t{company.conformed}\n"
        f"\t\tCENTRAL INDEX KEY:\t\t\t{company.cik_padded}\n"
        f"\t\tSTATE OF INCORPORATION:\t\t\t{company.state_code}\n"
        f"\t\tFISCAL YEAR END:\t\t\t{company.fye_month:02d}{_month_days(company.fye_month)}\n\n"
        "\tFILING VALUES:\n"
        f"\t\tFORM TYPE:\t\t{spec.form}\n\t\tSEC ACT:\t\t1934 Act\n"
        f"\t\tSEC FILE NUMBER:\t{company.file_number}\n\n"
        "\tBUSINESS ADDRESS:\t\n"
        f"\t\tSTREET 1:\t\t{company.street.upper()}\n\t\tCITY:\t\t\t{company.city.upper()}\n"
        f"\t\tSTATE:\t\t\t{company.city_state}\n\t\tZIP:\t\t\t{company.zip_code}\n"
        f"\t\tBUSINESS PHONE:\t\t{company.phone}\n"
        "</SEC-HEADER>\n\n"
    )


def ownership_cover(spec, company: Company, person: str, title: str) -> str:
    """Forms 3 and 4 arrive as XML and are flattened into labelled lines."""
    kind = "STATEMENT OF CHANGES IN BENEFICIAL OWNERSHIP" if spec.form == "4" else \
        "INITIAL STATEMENT OF BENEFICIAL OWNERSHIP OF SECURITIES"
    return (
        f"FORM {spec.form}\n\nUNITED STATES SECURITIES AND EXCHANGE COMMISSION\nWashington, D.C. 20549\n\n"
        f"{kind}\n\n"
        f"1. Name and Address of Reporting Person: {person}, c/o {company.name}, {company.street}, "
        f"{company.city}, {company.city_state} {company.zip_code}\n\n"
        f"2. Issuer Name and Ticker or Trading Symbol: {company.name} [ {company.ticker} ]\n\n"
        f"3. Date of Earliest Transaction (Month/Day/Year): {spec.filed - dt.timedelta(days=2):%m/%d/%Y}\n\n"
        f"5. Relationship of Reporting Person(s) to Issuer: Officer (give title below): {title}\n\n"
    )
