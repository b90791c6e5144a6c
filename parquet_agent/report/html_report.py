"""report.html: one self-contained file, no network, safe with hostile case text.

    html_bytes = render_report(run_id, summary, rows, records)

The page is `assets/report.html` with `assets/report.css` and `assets/report.js` inlined. Data:
the index rows in `<script type="application/json" id="index-data">` and each case record in its
own `<script type="application/x-case-deflate-base64" id="case-<n>">` block (n = row number):
the record's JSON, zlib-deflated and base64-encoded. The browser decodes a block only when its
case is opened (`DecompressionStream("deflate")`, built into every current browser, no network),
so a 400-case page is ~6x smaller than plain JSON and the table is interactive at once.

Safety, in layers:
- embedded JSON has every `<` written as `\\u003c`, so no text can close the script element or
  open a comment; JSON.parse gives the original string back; case blocks are base64, which has
  no `<` at all;
- the script puts text on the page only through text nodes (never innerHTML or attributes that
  navigate), and shows control and bidi characters as visible marks;
- a Content-Security-Policy allows only this page's own script and style (by sha256), no
  connections, frames, fonts or images from anywhere: the page cannot make a network request
  even if something did slip through;
- the few server-side strings (run id, model and strategy names in the summary) go through
  `escape.html_text` (marks, then HTML-escaped), the rule every HTML writer uses.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import zlib
from dataclasses import dataclass
from importlib import resources
from typing import Any

from parquet_agent.escape import html_text

_LEVEL = 1  # deflate level: 0.35 s for 31 MB of records on 2 cores, 6x smaller; 6 costs 2x
_PLACEHOLDER = re.compile(r"__([A-Z_]+?)__")


def _asset(name: str) -> str:
    return resources.files("parquet_agent.report").joinpath("assets", name).read_text("utf-8")


def embed_json(value: Any) -> str:
    """JSON safe inside a <script> element: compact, sorted, every `<` escaped."""
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False)
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: fall back to ASCII escapes
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c")


def _csp_hash(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _known_usd(g: dict[str, Any]) -> str:
    """The known part of a cell's cost; "—" when no case's cost is known (never 0.0000)."""
    finished = g["complete"] + g["incomplete"] + g["failed"]
    if g["cases_with_unknown_cost"] and g["cases_with_unknown_cost"] >= finished:
        return "—"
    return _fmt(g["cost_usd_known"], 4)


def _verdict_rates(g: dict[str, Any]) -> str:
    """"83% / 12% / 5%" of the cases judged with a verdict; "—" before judge-v2."""
    rates = [g.get(f"{v}_rate") for v in ("correct", "incorrect", "abstained")]
    known = [r for r in rates if r is not None]
    if len(known) < len(rates):
        return "—"
    return " / ".join(f"{100 * r:.0f}%" for r in known)


def _summary_table(summary: dict[str, Any]) -> str:
    head = ("model", "strategy", "cases", "complete", "incomplete", "failed", "scored",
            "correctness (95% CI)", "correct / incorrect / abstained",
            "abstained on answerable", "citation support (95% CI)", "tool calls", "tool errors",
            "known USD", "cases w/ unknown cost", "p50 ms", "p95 ms")
    out = []
    mode = str(summary.get("sandbox_mode") or "")
    if mode.startswith("UNPROTECTED"):  # accepted explicitly (allow_unprotected_sandbox)
        out.append(f"<p class=\"warning\" id=\"unprotected\"><strong>UNPROTECTED sandbox:</strong> "
                   f"{html_text(mode)}. Nothing in the kernel kept the tool workers from "
                   "writing the corpus files during this run.</p>")
    integrity = summary.get("integrity") or {"ok": True}
    if not integrity.get("ok", True):
        items = "".join(f"<li>{html_text(p)}</li>" for p in integrity.get("problems", [])[:50])
        out.append("<div class=\"warning\" id=\"integrity\"><strong>Damaged or edited records:"
                   "</strong> these cases may not show what was recorded: "
                   f"{html_text(', '.join(integrity.get('damaged_cases', [])) or 'see below')}"
                   f"<ul>{items}</ul></div>")
    out.append("<table id=\"summary\"><thead><tr>")
    out += [f"<th>{html_text(h)}</th>" for h in head]
    out.append("</tr></thead><tbody>")
    for g in summary.get("by_model_strategy", []):
        c, s = g["correctness"], g["citation_support"]
        cells = (
            g["model"], g["strategy"], g["cases"], g["complete"], g["incomplete"], g["failed"],
            g["scored"], f"{_fmt(c['mean'])} [{_fmt(c['low'])}, {_fmt(c['high'])}]",
            _verdict_rates(g), _fmt(g.get("abstained_answerable")),
            f"{_fmt(s['mean'])} [{_fmt(s['low'])}, {_fmt(s['high'])}]",
            g["tool_counts"]["processed"], g["tool_counts"]["errors"],
            _known_usd(g), g["cases_with_unknown_cost"],
            _fmt(g["latency_p50_ms"], 0), _fmt(g["latency_p95_ms"], 0))
        out.append("<tr>" + "".join(f"<td>{html_text(str(v))}</td>" for v in cells) + "</tr>")
    out.append("</tbody></table>")
    run = summary.get("run") or {}
    counts = summary.get("status_counts", {})
    out.append(f"<p class=\"muted\">{summary.get('cases', 0)} cases: "
               + ", ".join(f"{counts.get(s, 0)} {s}" for s in ("complete", "incomplete", "failed"))
               + " · "
               f"run wall time {_fmt((run.get('wall_ms') or 0) / 1000)} s over "
               f"{run.get('sessions', 0)} session(s)</p>")
    return "".join(out)


@dataclass(frozen=True)
class ReportExtras:
    """Optional sections after the summary. `sections` are trusted HTML built by our own code
    with every data string escaped (`RunComparison.to_html()`); `scripts` run in order, each
    allowed by its sha256 in the page's CSP (plotly.js and one script per chart)."""

    sections: tuple[str, ...] = ()
    scripts: tuple[str, ...] = ()

    def html(self) -> str:
        return "".join(self.sections) + "".join(f"<script>{s}</script>" for s in self.scripts)


def render_report(run_id: str, summary: dict[str, Any], rows: list[dict[str, Any]],
                  case_texts: list[bytes], *, extra: ReportExtras | None = None) -> bytes:
    """The whole report.html as UTF-8 bytes (deterministic for the same inputs).

    `case_texts` are the case records as UTF-8 JSON, in row order (`exporter.case_json`);
    `extra` adds sections after the summary (charts, a run comparison)."""
    extra = extra or ReportExtras()
    script, style = _asset("report.js"), _asset("report.css")
    index = {"schema_version": 1, "run_id": run_id, "run_dir_hint": ".", "rows": rows}
    cases = "\n".join(
        f'<script type="application/x-case-deflate-base64" id="case-{n}">'
        f'{base64.b64encode(zlib.compress(text, _LEVEL)).decode()}'
        "</script>" for n, text in enumerate(case_texts))
    # plotly sets style attributes as it draws (its titles vanish otherwise), and a hash in
    # style-src would make the browser ignore 'unsafe-inline': so charts relax styles only
    style_src = "'unsafe-inline'" if extra.scripts else f"'{_csp_hash(style)}'"
    values = {"SCRIPT_HASH": _csp_hash(script), "STYLE_SRC": style_src,
              "TITLE": html_text(run_id), "STYLE": style, "SUMMARY": _summary_table(summary),
              "SCRIPT": script, "INDEX": embed_json(index), "CASES": cases,
              "EXTRA": extra.html(),
              "EXTRA_SCRIPT_HASHES": "".join(f" '{_csp_hash(s)}'" for s in extra.scripts)}
    # one pass over the template: inserted text (case data included) is never scanned again
    page = _PLACEHOLDER.sub(lambda m: values[m.group(1)], _asset("report.html"))
    return page.encode("utf-8")
