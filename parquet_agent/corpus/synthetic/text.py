"""Prose for synthetic filings, drawn from a precomputed pool so text costs almost no Python.

`TextPool(seed)` builds, once per process, a few tens of thousands of sentences in the register of
10-K/10-Q/8-K prose: boilerplate templates (risk factors, MD&A, controls, legal) whose slots are
filled from word lists with Zipf-like weights, plus forward-looking-statement boilerplate that
real filings repeat verbatim. A filing then picks sentence indices in bulk with numpy and joins
them. The pool size is tuned so that zstd on the resulting Parquet pages compresses about like
real filing text (ratio measured in docs/benchmarks.md), not like a tiny repeated corpus.

Everything is a pure function of the seed: the same seed gives the same pool in every process.
`ocr_noise(text, rng)` garbles a copy of a text the way OCR does (glyph confusions, dropped and
doubled spaces, broken lines).
"""

from __future__ import annotations

import random
from operator import itemgetter

import numpy as np

POOL_SENTENCES = 48_000
TAIL_WORDS = 6_000
TAIL_SHARE = 0.3
FREE_SHARE = 0.5

_ADJ = (
    "significant material adverse substantial additional certain future current competitive "
    "economic financial operational regulatory global domestic international general "
    "unexpected prolonged increased reduced higher lower new existing key critical strategic "
    "favorable unfavorable volatile uncertain limited adequate sufficient effective timely "
    "customary applicable proprietary third-party contractual contingent deferred recurring "
    "non-recurring seasonal cyclical cumulative incremental aggregate net gross long-term "
    "short-term"
).split()
_NOUN = (
    "revenue demand pricing margin cost liquidity capital growth competition supply chain "
    "inflation interest rate exchange rate cybersecurity litigation regulation taxation "
    "reputation workforce talent technology infrastructure product service customer supplier "
    "partner distributor market segment operation facility inventory receivable obligation "
    "indebtedness covenant credit facility cash flow backlog pipeline portfolio acquisition "
    "integration restructuring impairment goodwill asset liability reserve estimate judgment "
    "assumption disclosure control procedure audit compliance policy program initiative "
    "investment expenditure dividend repurchase share stock option award compensation benefit "
    "pension contract lease license patent trademark claim proceeding settlement warranty "
    "return allowance provision accrual amortization depreciation"
).split()
_NOUNS = [p.strip() for p in (
    "results of operations|financial condition|cash flows|business|prospects|operating results|"
    "gross margins|customers|suppliers|employees|shareholders|products|services|markets|"
    "competitors|regulators|counterparties|lenders|facilities|information systems|data centers|"
    "distribution channels|manufacturing operations|research and development programs|"
    "capital resources|contractual obligations|critical accounting estimates|internal controls|"
    "financial statements|tax positions|net sales|operating expenses|working capital|"
    "borrowing costs|credit ratings|stock price"
).split("|")]
_VERB = [v for v in (
    "affect|impact|reduce|increase|limit|harm|disrupt|delay|require|restrict|influence|change|"
    "offset|exceed|depend on|result in|adversely affect|materially affect|negatively impact|"
    "constrain|accelerate"
).split("|")]
_PARTY = (
    "we|the Company|management|our Board of Directors|the Audit Committee|our customers|"
    "our suppliers|government authorities|rating agencies|our lenders|our competitors|"
    "the SEC|the FASB|our independent registered public accounting firm"
).split("|")
_MARKET = (
    "North America|Europe|Asia Pacific|Latin America|the United States|China|Japan|Germany|"
    "the United Kingdom|Canada|Mexico|India|Brazil|emerging markets|the Middle East"
).split("|")
_TEMPLATES = (
    "{Party} may be unable to {verb} {adj} {noun} in a timely manner, which could {verb2} our {nouns}.",
    "Changes in {adj} {noun} could {verb} our {nouns} and {nouns2}.",
    "If {party} fail to manage {adj} {noun}, our {nouns} could be {adjv} affected.",
    "{Adj} {noun} in {market} increased {pct} compared with the prior year, primarily due to {adj2} {noun2}.",
    "The decrease in {noun} was partially offset by {adj} {noun2} in {market}.",
    "We expect {adj} {noun} to continue to {verb} our {nouns} in fiscal {year}.",
    "There can be no assurance that {adj} {noun} will not {verb} our {nouns}.",
    "Our {nouns} depend in part on {adj} {noun} and the {noun2} of our {nouns2}.",
    "{Party} evaluated the {noun} and concluded that no {adj} {noun2} was required as of the end of the period.",
    "We recognize {noun} when control of the promised goods or services is transferred to {party}.",
    "The {noun} is measured at fair value using {adj} inputs, including {adj2} {noun2} assumptions.",
    "As a result of {adj} {noun}, we recorded a charge of ${amount} million during fiscal {year}.",
    "{Party} periodically review {adj} {noun} and may adjust {noun2} as circumstances change.",
    "A {adj} decline in {noun} could require us to record an impairment of {noun2}.",
    "Our ability to {verb} {noun} is subject to {adj} {noun2} and other factors beyond our control.",
    "We have entered into {adj} agreements with {party} relating to {noun} and {noun2}.",
    "{Adj} {noun} accounted for approximately {pct} of total {noun2} in fiscal {year}.",
    "We believe that our existing {noun} and {adj} {noun2} will be sufficient to meet our needs for at least the next 12 months.",
    "Any {adj} breach of our {nouns} could {verb} our {nouns2} and expose us to {noun} claims.",
    "The {noun} bears interest at a rate equal to SOFR plus {pct2} per annum.",
    "We are subject to {adj} laws and regulations in {market} relating to {noun} and {noun2}.",
    "Fluctuations in {noun} may cause our {nouns} to vary significantly from period to period.",
    "{Party} do not believe that the outcome of any pending {noun} will have a {adj} effect on our {nouns}.",
    "During fiscal {year}, {party} continued to invest in {adj} {noun} to support {adj2} {noun2}.",
    "The {adj} {noun} reflects management's best estimate of {noun2} as of the balance sheet date.",
    "Recently issued accounting standards relating to {noun} are not expected to have a {adj} impact on our {nouns}.",
    "In {market}, {noun} was {adj} as a result of {adj2} {noun2} and lower {noun3}.",
    "Our {nouns} could suffer if we are unable to attract and retain {adj} personnel.",
    "We may need to raise {adj} capital, which may not be available on acceptable terms, to fund {noun}.",
    "Amounts related to {noun} are included in {adj} {noun2} in the consolidated balance sheets.",
)
# Verbatim boilerplate: real filings repeat these word for word across issuers.
BOILERPLATE = (
    "This report contains forward-looking statements within the meaning of Section 27A of the "
    "Securities Act of 1933, as amended, and Section 21E of the Securities Exchange Act of 1934, "
    "as amended. Words such as \"anticipate,\" \"believe,\" \"estimate,\" \"expect,\" \"intend,\" "
    "\"may,\" \"plan,\" \"project,\" \"should\" and \"will\" and similar expressions identify "
    "forward-looking statements. Actual results could differ materially from those projected.",
    "Our management, with the participation of our principal executive officer and principal "
    "financial officer, evaluated the effectiveness of our disclosure controls and procedures as "
    "of the end of the period covered by this report. Based on that evaluation, they concluded "
    "that our disclosure controls and procedures were effective at the reasonable assurance level.",
    "There were no changes in our internal control over financial reporting during the most "
    "recent fiscal quarter that have materially affected, or are reasonably likely to materially "
    "affect, our internal control over financial reporting.",
    "The information in this Current Report on Form 8-K, including Exhibit 99.1, is furnished and "
    "shall not be deemed \"filed\" for purposes of Section 18 of the Securities Exchange Act of "
    "1934, as amended, nor shall it be deemed incorporated by reference in any filing under the "
    "Securities Act of 1933, as amended.",
    "Pursuant to the requirements of the Securities Exchange Act of 1934, the registrant has duly "
    "caused this report to be signed on its behalf by the undersigned hereunto duly authorized.",
    "The accompanying unaudited condensed consolidated financial statements have been prepared in "
    "accordance with U.S. generally accepted accounting principles for interim financial "
    "information and should be read in conjunction with the audited consolidated financial "
    "statements included in our Annual Report on Form 10-K.",
)


def _zipf_choice(rnd: random.Random, words: list[str] | tuple[str, ...]) -> str:
    # Zipf-like: the first words of each list are the most frequent, like real usage.
    n = len(words)
    i = int(n * (rnd.random() ** 2.2))
    return words[min(i, n - 1)]


_OPENERS = ("", "", "", "", "In addition, ", "However, ", "As a result, ", "Accordingly, ", "Furthermore, ",
            "For example, ", "In particular, ", "Although we believe otherwise, ", "From time to time, ")
_CLOSERS = ("", "", "", " (see Note {n})", " as described under \"{Tail} {tail2}\"",
            ", including {tail} and {tail2} arrangements", ", which totaled ${amount} million at year end",
            " in the {tail} and {tail2} markets")


def _tail_words(rnd: random.Random, n: int) -> list[str]:
    # a long tail of rare terms (product lines, places, programs): real filings are full of
    # them, and they are what keeps real text from compressing like boilerplate
    syl = ("ka ro mi tel van dor sen lu pra vex qua nor bel tis ur om ack ent ion ics ade ex "
           "mon fer gal hy jo lin mar pol rek sta tru vin wen yel zor").split()
    out = []
    for _ in range(n):
        out.append("".join(rnd.choice(syl) for _ in range(rnd.randint(2, 4))))
    return out


_FUNCTION = ("the of and to in our we for a that is as on by with or be are from this which such "
             "these may our its under not at have has any other all their an will could would").split()


def _free_sentences(rnd: random.Random, tail: list[str], n: int) -> list[str]:
    """Sentences of words drawn from a Zipf distribution over function words, filing terms
    and the rare tail: less readable than the templates, but with the word-level entropy of
    real prose (templates alone compress far better than real filings do)."""
    vocab = list(_FUNCTION) + list(_NOUN) + list(_ADJ) + [w for p in _NOUNS for w in p.split()] + tail
    ranks = np.arange(1, len(vocab) + 1, dtype=float)
    p = 1.0 / ranks**1.05
    p /= p.sum()
    gen = np.random.default_rng(rnd.getrandbits(64))
    lengths = gen.integers(10, 32, size=n)
    words = gen.choice(len(vocab), size=int(lengths.sum()), p=p).tolist()
    out, i = [], 0
    for k in lengths.tolist():
        w = [vocab[j] for n, j in enumerate(words[i : i + k]) if n == 0 or j != words[i + n - 1]]
        i += k
        w[0] = w[0].capitalize()
        out.append(" ".join(w) + ".")
    return out


class TextPool:
    """A deterministic pool of filing sentences for one seed.

    `sentences` is a list of strings; `paragraphs(rng, n_sentences)` joins random picks into
    paragraphs separated by blank lines. Build one per process and reuse it for every filing.
    """

    def __init__(self, seed: int, size: int = POOL_SENTENCES):
        rnd = random.Random(f"textpool:{seed}")
        tail = _tail_words(rnd, TAIL_WORDS)
        out: list[str] = []
        for _ in range(size):
            t = _TEMPLATES[int(len(_TEMPLATES) * rnd.random())]
            party = _zipf_choice(rnd, _PARTY)
            fill = {
                "party": party,
                "Party": party[0].upper() + party[1:],
                "adj": _zipf_choice(rnd, _ADJ),
                "adj2": _zipf_choice(rnd, _ADJ),
                "Adj": _zipf_choice(rnd, _ADJ).capitalize(),
                "adjv": rnd.choice(("materially and adversely", "adversely", "negatively", "significantly")),
                "noun": _zipf_choice(rnd, _NOUN),
                "noun2": _zipf_choice(rnd, _NOUN),
                "noun3": _zipf_choice(rnd, _NOUN),
                "nouns": _zipf_choice(rnd, _NOUNS),
                "nouns2": _zipf_choice(rnd, _NOUNS),
                "verb": _zipf_choice(rnd, _VERB),
                "verb2": _zipf_choice(rnd, _VERB),
                "market": _zipf_choice(rnd, _MARKET),
                "pct": f"{rnd.randint(1, 60)}%",
                "pct2": f"{rnd.randint(50, 350) / 100:.2f}%",
                "year": str(rnd.randint(2022, 2025)),
                "amount": f"{rnd.randint(1, 9999) / 10:.1f}",
            }
            for slot in ("noun", "noun2", "noun3", "adj", "adj2"):
                if rnd.random() < TAIL_SHARE:
                    fill[slot] = _zipf_choice(rnd, tail)
            fill["tail"], fill["tail2"] = _zipf_choice(rnd, tail), _zipf_choice(rnd, tail)
            fill["Tail"] = fill["tail"].capitalize()
            fill["n"] = str(rnd.randint(2, 21))
            body = t.format(**fill)
            opener = _OPENERS[int(len(_OPENERS) * rnd.random())]
            if opener:
                body = opener + body[0].lower() + body[1:]
            closer = _CLOSERS[int(len(_CLOSERS) * rnd.random())].format(**fill)
            if closer:
                body = body[:-1] + closer + "."
            out.append(body)
        out.extend(_free_sentences(rnd, tail, int(size * FREE_SHARE)))
        rnd.shuffle(out)
        self.sentences = out
        self.mean_len = sum(len(x) for x in out) / len(out) + 1
        self._size = len(out)

    def paragraphs(self, rng: np.random.Generator, n_sentences: int) -> str:
        """About `n_sentences` pooled sentences as Markdown paragraphs of 2-7 sentences."""
        if n_sentences <= 0:
            return ""
        idx = rng.integers(0, self._size, size=n_sentences + 1).tolist()
        picked = itemgetter(*idx)(self.sentences)  # one C call; a tuple since len(idx) >= 2
        cuts = rng.integers(2, 8, size=n_sentences // 2 + 1).tolist()
        paras = []
        i = 0
        for c in cuts:
            if i >= n_sentences:
                break
            paras.append(" ".join(picked[i : min(i + c, n_sentences)]))
            i += c
        return "\n\n".join(paras)


# OCR confusions seen in scanned filings: glyph swaps, lost spaces, split words.
_OCR_SWAPS = str.maketrans({"l": "1", "O": "0", "S": "5", "e": "c", "i": "l", "m": "rn", ",": ".", "B": "8"})


def ocr_noise(text: str, rng: np.random.Generator, rate: float = 0.03) -> str:
    """A copy of `text` with OCR-like damage in about `rate` of its 40-character spans."""
    if not text:
        return text
    span = 40
    n = (len(text) + span - 1) // span
    hit = rng.random(n) < rate
    kind = rng.integers(0, 4, size=n)
    parts = []
    for k in range(n):
        piece = text[k * span : (k + 1) * span]
        if hit[k]:
            if kind[k] == 0:
                piece = piece.translate(_OCR_SWAPS)
            elif kind[k] == 1:
                piece = piece.replace(" ", "", 2)
            elif kind[k] == 2:
                piece = piece.replace(" ", "  ", 1).replace("\n", " ", 1)
            else:
                cut = len(piece) // 2
                piece = piece[:cut] + "-\n" + piece[cut:]
        parts.append(piece)
    return "".join(parts)
