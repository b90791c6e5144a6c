"""report.html's judge agreement section, in every export of a re-judged run (whoever exports
it: `parquet-agent judge`, `export`, a resumed run): the pair, repeat and check tables of
`Run.judge_agreement()` as plain escaped HTML. No `style=` attribute: the report's
Content-Security-Policy allows only its own stylesheet (pandas' `to_html` writes one per table
header, three console errors). The chart of the same tables is `explore.charts.judge_agreement`.
"""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the exporter loads no pandas for a run that was never re-judged
    import pandas as pd

TABLES = (("pairs", "Judge vs judge"), ("repeats", "The same judge repeated"),
          ("checks", "Judges vs the deterministic checks"))
INTRO = ("Every judgment of every judge is kept (the case records list them); the figures above "
         "use the primary judge. Kappa, Spearman and mean absolute difference with 95% paired "
         "bootstrap intervals; flip rate: share of cases whose correct / not-correct verdict "
         "changes between repeats.")


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "<td></td>"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"<td>{html.escape(str(value))}</td>"
    text = f"{value:.3f}" if isinstance(value, float) else str(value)
    return f'<td class="num">{text}</td>'


def frame_table(frame: pd.DataFrame) -> str:
    """A DataFrame as a table of class `agreement`: every string escaped, floats to 3 places."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>"
                   for row in frame.itertuples(index=False, name=None))
    return f'<table class="agreement"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


def agreement_section(tables: dict[str, pd.DataFrame]) -> str:
    """The section from `Run.judge_agreement()`'s tables; empty tables are left out."""
    parts = [f"<h2>Judge agreement</h2><p>{html.escape(INTRO)}</p>"]
    for name, title in TABLES:
        frame = tables.get(name)
        if frame is not None and len(frame):
            parts.append(f"<h3>{html.escape(title)}</h3>" + frame_table(frame))
    return "".join(parts)
