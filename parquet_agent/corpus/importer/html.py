"""HTML filings (plain, old-style or inline-XBRL) → Markdown, plus the iXBRL `dei:` facts.

Contract: `html_to_markdown(raw) -> HtmlDocument(markdown, dei)` takes the bytes (or text) of one
HTML document as filed and returns what a reader of the rendered page sees, in document order:

- `<head>`, scripts, styles, the hidden iXBRL header (`ix:header`, which filers wrap in a
  `display:none` div) and every other `display:none` element are dropped before conversion;
- prose goes through markdownify (headings as `#`, links reduced to their text, no Markdown
  escaping: filings are full of `*` footnote marks and `_` blanks, and escaped copies would break
  quote matching);
- tables become Markdown tables after the clean-up SEC tables need (see `table_to_markdown`);
- non-breaking spaces become plain spaces and runs of blank lines collapse, so text can be
  searched with ordinary strings.

`dei` holds the Document and Entity Information facts tagged anywhere in the document (the hidden
header included), by local name: `EntityCentralIndexKey`, `EntityRegistrantName`, `DocumentType`,
`DocumentPeriodEndDate`, ... as their visible text. These are the filing's own metadata.

Why markdownify over bs4 + lxml: it is maintained, small, MIT, already a dependency, and lets a
subclass replace one element's rendering; we replace only tables. Measured here on the largest
real filing (Boeing 10-K, 3.3 MB of iXBRL): 0.3 s to parse with lxml, 0.3 s to convert.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field

from bs4 import BeautifulSoup, NavigableString, Tag, XMLParsedAsHTMLWarning
from markdownify import MarkdownConverter

_HIDDEN_STYLE = re.compile(r"display\s*:\s*none", re.I)
_BLOCK_TAGS = frozenset({"p", "div", "br", "li", "tr", "table", "h1", "h2", "h3", "h4", "h5", "h6"})
_PREFIX_SYMBOLS = frozenset({"$", "€", "£", "¥", "US$", "C$"})
_SUFFIX_SYMBOLS = frozenset({"%", ")", "%)", ")%", "pts", "bps"})
_WS = re.compile(r"\s+")
_LINE_BREAK = re.compile(r"[\r\n\t]")
_MAX_COLSPAN = 64  # malformed colspans ("colspan=1000") would blow a grid up


@dataclass(frozen=True)
class HtmlDocument:
    markdown: str
    dei: dict[str, str] = field(default_factory=dict)
    tables: int = 0


def _cell_text(cell: Tag) -> str:
    """A cell's visible text on one line; block boundaries become spaces, inline ones don't
    (`<span>1,</span><span>234</span>` must stay `1,234`)."""
    parts: list[str] = []
    for node in cell.descendants:
        if isinstance(node, NavigableString):
            if type(node) is NavigableString:  # skip comments, CDATA, processing instructions
                parts.append(str(node))
        elif isinstance(node, Tag) and node.name in _BLOCK_TAGS:  # every other node is a Tag
            parts.append(" ")
    return _WS.sub(" ", "".join(parts)).strip().replace("|", "\\|")


def _own_rows(table: Tag) -> list[Tag]:
    return [tr for tr in table.find_all("tr") if tr.find_parent("table") is table]


def table_to_markdown(table: Tag) -> str:
    """One HTML table as a Markdown table, or as plain lines when it is layout, not data.

    SEC tables spread one figure over several cells (`$` | `1,234` | `)`), pad with empty spacer
    columns and put headers over colspans. So: expand colspans into a grid; glue currency signs
    to the next figure and `%`/`)` to the previous one; place a spanning header over the first
    column its span covers that holds data; drop empty rows and columns. A table left with one
    row or one column is layout (cover-page check boxes, signature blocks): its rows become lines
    of text. Returns "" for a table with no text.
    """
    grid: list[list[str]] = []
    spans: list[tuple[int, int, int]] = []  # (row, start, width) of spanning cells with text
    for tr in _own_rows(table):
        row: list[str] = []
        for cell in tr.find_all(["td", "th"], recursive=False):
            try:
                width = max(1, min(int(str(cell.get("colspan") or 1)), _MAX_COLSPAN))
            except ValueError:
                width = 1
            text = _cell_text(cell)
            if width > 1 and text:
                spans.append((len(grid), len(row), width))
            row.append(text)
            row.extend([""] * (width - 1))
        grid.append(row)
    if not grid:
        return ""
    ncols = max(len(r) for r in grid)
    for r in grid:
        r.extend([""] * (ncols - len(r)))
    for r in grid:
        for i, text in enumerate(r):
            if text in _PREFIX_SYMBOLS:
                j = next((k for k in range(i + 1, ncols) if r[k]), None)
                if j is not None:
                    r[j], r[i] = text + r[j], ""
            elif text in _SUFFIX_SYMBOLS:
                j = next((k for k in range(i - 1, -1, -1) if r[k]), None)
                if j is not None:
                    r[j], r[i] = r[j] + text, ""
    spanning = {(row_i, start) for row_i, start, _ in spans}
    occupied = [
        any(r[c] and (i, c) not in spanning for i, r in enumerate(grid)) for c in range(ncols)
    ]
    for row_i, start, width in spans:
        row = grid[row_i]
        if not row[start] or occupied[start]:
            continue
        target = next((c for c in range(start, start + width) if occupied[c]), start)
        if target != start and not row[target]:
            row[target], row[start] = row[start], ""
    keep = [c for c in range(ncols) if any(r[c] for r in grid)]
    rows = [[r[c] for c in keep] for r in grid if any(r[c] for c in keep)]
    if not rows:
        return ""
    if len(rows) == 1 or len(keep) == 1:
        return "\n\n".join(" ".join(x for x in r if x) for r in rows)
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * len(keep)]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(lines)


class _FilingConverter(MarkdownConverter):
    """markdownify with our options; tables are rendered before conversion (see below)."""

    def __init__(self) -> None:
        super().__init__(
            heading_style="ATX",
            strip=["a", "img"],
            escape_asterisks=False,
            escape_underscores=False,
            escape_misc=False,
            bullets="-",
        )


def _extract_dei(soup: BeautifulSoup) -> dict[str, str]:
    facts: dict[str, str] = {}
    for tag in soup.find_all(["ix:nonnumeric", "ix:nonfraction"]):
        name = tag.get("name")  # a one-valued attribute: str when present
        if isinstance(name, str) and name.lower().startswith("dei:"):
            key = name.split(":", 1)[1]
            value = _WS.sub(" ", tag.get_text(" ", strip=True))
            if value and key not in facts:  # the first tagging wins (cover page order)
                facts[key] = value
    return facts


def _looks_preformatted(text: str) -> bool:
    lines = text.splitlines()
    return len(lines) >= 3 and sum("   " in line for line in lines) * 4 >= len(lines)


def parse_html(raw: bytes | str) -> BeautifulSoup:
    with warnings.catch_warnings():
        # iXBRL is XHTML; the lenient HTML parser is what we want for the old, sloppy filings too
        warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
        warnings.simplefilter("ignore", UserWarning)
        return BeautifulSoup(raw, "lxml")


def html_to_markdown(raw: bytes | str) -> HtmlDocument:
    """Convert one HTML document as filed; see the module docstring for what is kept."""
    soup = parse_html(raw)
    dei = _extract_dei(soup)
    for tag in soup.find_all(["head", "script", "style", "title", "ix:header"]):
        tag.decompose()
    for tag in soup.find_all(style=_HIDDEN_STYLE):
        if not tag.decomposed:
            tag.decompose()
    # Source HTML is hard-wrapped at arbitrary points; markdownify would keep those line breaks
    # inside paragraphs, where they split phrases that a search or a quote must find whole.
    # Text laid out with spaces (old filings wrapped in a bare <div>) keeps its lines.
    for text in soup.find_all(string=_LINE_BREAK):
        if (
            type(text) is NavigableString
            and text.find_parent("pre") is None
            and not _looks_preformatted(text)
        ):
            text.replace_with(_WS.sub(" ", text))
    # Render each outermost table to Markdown first and leave a token in its place: markdownify
    # would otherwise convert every cell only for us to throw the result away.
    rendered: dict[str, str] = {}
    for table in soup.find_all("table"):
        if table.decomposed or table.find_parent("table") is not None:
            continue
        token = f"PQATABLE{len(rendered)}TOKEN"
        rendered[token] = table_to_markdown(table)
        placeholder = soup.new_tag("p")
        placeholder.string = token
        table.replace_with(placeholder)
    markdown = _FilingConverter().convert_soup(soup)
    # A bs4 tree is a web of parent/child cycles that only the cyclic GC frees; break it now so
    # a batch of multi-MB filings does not pile trees up (peak RSS 700 -> ~300 MB on realdata).
    soup.decompose()
    if rendered:
        markdown = re.sub(r"PQATABLE\d+TOKEN", lambda m: rendered[m.group(0)], markdown)
    return HtmlDocument(markdown=tidy_text(markdown), dei=dei, tables=len(rendered))


def tidy_text(text: str) -> str:
    """Non-breaking and zero-width spaces to plain ones, trailing blanks off, at most one empty
    line in a row."""
    text = text.replace("\xa0", " ").replace("\u200b", "").replace("\r\n", "\n").replace("\r", "\n")
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip() + "\n"
