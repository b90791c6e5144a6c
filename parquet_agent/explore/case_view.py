"""The six sections of one case as HTML, from the case record (the same sections as report.html).

    html = render_case(record, run_dir=Path("runs/x"))   # record: report.case_model.CaseRecord

Sections (numbered and titled exactly as in `report/assets/report.js`):
  1. Question, reference, model, status, answer
  2. Tool counts, rounds, attempts, cost, timing
  3. Tool calls: one expandable `<details>` per call with its exact arguments, SQL, offsets,
     returned data and the text sent back to the model
  4. Final-answer request (exact), and for an unfinished case the latest context actually sent,
     missing raw requests and tool outputs that were never sent
  5. Judge: request, raw response, scores, rationale
  6. API attempts, with the raw file of each (and how to print it: `parquet-agent raw RUN PATH`)

Every string from a record is untrusted (model output, filing text): it goes through
`escape.html_text` (control and bidi characters as visible `<U+XXXX>` marks, then HTML-escaped,
as report.html shows them), and one text shows at most `SHOWN` characters.
Files: the case JSON and the journal are named by their path in the run folder, never linked
as `file://` (Chromium refuses those inside JupyterLab: "Not allowed to load local resource");
`CaseExplorer` serves them, and every raw file, through the kernel ("Files of this case"). Raw
files live in packs, so they are also named with the command that prints their exact bytes.
Timings are shown rounded (`ms`): 0.1 ms under 10 ms, whole ms above.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from parquet_agent.escape import html_text
from parquet_agent.report.case_model import AttemptRecord, CaseRecord, RawInline, ToolCall
from parquet_agent.report.case_record import TOOL_COUNT_FIELDS

SHOWN = 20_000  # characters of one text shown

SECTION_TITLES = (
    "Question, reference, model, status, answer",
    "Tool counts, rounds, attempts, cost, timing",
    "Tool calls",
    "Final-answer request (exact)",
    "Judge: request, raw response, scores, rationale",
    "API attempts",
)
_PRE = "white-space:pre-wrap;overflow-wrap:anywhere;max-height:24em;overflow:auto;" \
       "background:#f6f8fa;padding:4px;margin:2px 0;font-size:12px"


_CELL = "text-align:left;vertical-align:top;padding:1px 10px 1px 0;line-height:1.3"
_VALUE = _CELL + ";overflow-wrap:anywhere"  # a sha256, a path: long words break anywhere


def esc(value: Any) -> str:
    """`escape.html_text` of the value's text, cut at SHOWN characters (the rest is in the case
    record and raw files: a megabyte answer must not stall the notebook); None is an em dash."""
    if value is None:
        return "\u2014"
    return html_text(str(value), SHOWN)


def _pre(text: Any) -> str:
    return f'<pre style="{_PRE}">{esc(text)}</pre>'


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False, sort_keys=False)


def _kv(pairs: Iterable[tuple[str, Any]]) -> str:
    rows = "".join(f'<tr><th style="{_CELL};font-weight:600">{esc(k)}</th>'
                   f'<td style="{_VALUE}">{esc(v)}</td></tr>' for k, v in pairs)
    return f'<table class="pa-kv">{rows}</table>'


def _details(summary: str, body: str, *, open_: bool = False, cls: str = "") -> str:
    attrs = (' open' if open_ else '') + (f' class="{cls}"' if cls else '')
    return f"<details{attrs}><summary>{summary}</summary>{body}</details>"


def _section(n: int, title: str, body: str) -> str:
    return (f'<section class="pa-sec" data-section="{n}"><h3>{n}. {esc(title)}</h3>'
            f"{body}</section>")


def _raw_cmd(run_dir: Path | None, path: str) -> str:
    where = str(run_dir) if run_dir is not None else "RUN_DIR"
    return f"<code>parquet-agent raw {esc(where)} {esc(path)}</code>"


def _raw_block(title: str, raw: RawInline | None, run_dir: Path | None) -> str:
    if not raw:
        return f"<p><i>{esc(title)}: not recorded</i></p>"
    exact = raw.text if raw.text is not None else "(not UTF-8; base64) " + str(raw.base64)
    head = (f"<b>{esc(title)}</b> <span style=\"color:#666\">{esc(raw.path)} · "
            f"{esc(raw.bytes)} bytes · {esc(raw.sha256)}</span>")
    return _details(head, _pre(exact) + "print it with " + _raw_cmd(run_dir, raw.path))


def _sec1(c: CaseRecord) -> str:
    m = c.model
    reference = c.reference_answer
    if reference is None and not c.judgment:
        reference = "(not recorded: the judge never saw this case)"
    answer = c.final_answer
    body = _kv([
        ("case", c.case_id), ("question", c.question),
        ("question as recorded in", c.question_source),
        ("reference answer", reference),
        ("model", f"{m.name} \u2014 configured {m.configured_provider} / "
                  f"{m.configured_model}"),
        ("requested", f"{m.requested_provider} / {m.requested_model}"),
        ("actual", f"{m.actual_provider} / {m.actual_model}"),
        ("strategy", c.strategy),
        ("status", f"{c.status}" + (f" \u2014 {c.status_reason}" if c.status_reason else "")),
        ("final answer", "(none: no answer was given)" if answer is None else answer),
    ])
    if c.gold_evidence:
        body += _details(f"gold evidence ({len(c.gold_evidence)})", _pre(_pretty(c.gold_evidence)))
    if c.failures:
        failures = [f.model_dump(mode="json", exclude_unset=True) for f in c.failures]
        body += _details(f"failures in earlier sessions ({len(failures)})",
                         _pre(_pretty(failures)))
    return _section(1, SECTION_TITLES[0], body)


def ms(value: Any) -> str:
    """A duration in ms for people: `0.08`, `3.4`, `1,234` (`None` stays `None`)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return str(value)
    if abs(value) < 1:
        return f"{value:.2f}"
    return f"{value:.1f}" if abs(value) < 10 else f"{value:,.0f}"


def _sec2(c: CaseRecord) -> str:
    tool_counts = c.tool_counts
    # the contract's order (DESIGN.md), as the report shows them; any extra fields after
    counts: list[tuple[str, Any]] = [(f, tool_counts[f]) for f in TOOL_COUNT_FIELDS
                                     if f in tool_counts]
    counts += [(k, v) for k, v in tool_counts.items() if k not in TOOL_COUNT_FIELDS]
    counts.append(("(counts from)", c.tool_counts_source))
    tokens, cost, timing = c.tokens, c.cost, c.timing
    body = _kv(counts) + _kv([
        ("tokens in / out", f"{tokens.input} / {tokens.output}"),
        ("tokens cached / reasoning", f"{tokens.cached} / {tokens.reasoning}"),
        ("tokens written to the prompt cache", tokens.cache_write),
        ("cost (USD)", cost.usd if cost.usd is not None else
         f"unknown ({cost.unknown_attempts} attempts without a cost; known part "
         f"{cost.known_usd})"),
        ("cost answer / judge", f"{cost.answer_usd} / {cost.judge_usd}"),
        ("cost source", ", ".join(cost.sources)),
        ("started / ended", f"{timing.started_at} \u2192 {timing.ended_at}"),
        ("wall ms", ms(timing.wall_ms)),
        ("model / judge / tool ms",
         f"{ms(timing.model_ms)} / {ms(timing.judge_ms)} / {ms(timing.tool_ms)}"),
    ])
    return _section(2, SECTION_TITLES[1], body)


def _tool_call(i: int, t: ToolCall) -> str:
    state = "ok" if t.ok else f"error: {t.error_kind}"
    where = "cache hit" if t.cache_hit else ("worker run" if t.dispatched else "not dispatched")
    total = ms(t.timings.get("total_ms"))
    summary = (f"<b>#{i} {esc(t.name)}</b> · turn {esc(t.turn)} · "
               f"call {esc(t.call_id)} · <span style=\"color:"
               f"{'#1a7f37' if t.ok else '#cf222e'}\">{esc(state)}</span> · "
               f"{esc(where)}{'' if t.budgeted else ' · over budget'}"
               f" · {esc(total)} ms")
    body = "arguments (exact):" + _pre(_pretty(t.arguments))
    if t.sql:
        body += "SQL:" + _pre(t.sql)
    extra: list[tuple[str, Any]] = []
    if t.error_message:
        extra.append(("error", t.error_message))
    if t.offsets:
        extra.append(("offsets", "; ".join(f"{o.file_stem} [{o.start}, {o.end})"
                                           for o in t.offsets)))
    timings = {k: ms(v) for k, v in t.timings.items()}
    extra += [("timings ms", ", ".join(f"{k} {v}" for k, v in timings.items())),
              ("worker", t.worker_id)]
    body += _kv(extra)
    body += _details("returned data", _pre(_pretty(t.output)))
    if t.model_text is not None:
        body += _details("text sent back to the model (exact)", _pre(t.model_text))
    elif t.model_text_is_output_json:
        body += ("<div style=\"color:#666\">sent back to the model as the compact JSON of the "
                 "returned data (exactly as in the next request)</div>")
    return _details(summary, body, cls="pa-call")


def _sec3(c: CaseRecord) -> str:
    calls = c.tool_calls
    body = ("".join(_tool_call(i, t) for i, t in enumerate(calls, 1))
            or "<p><i>no tool calls</i></p>")
    return _section(3, f"{SECTION_TITLES[2]} ({len(calls)})", body)


def _sec4(c: CaseRecord, run_dir: Path | None) -> str:
    if c.final_request:
        body = (_raw_block("request", c.final_request, run_dir)
                + _raw_block("response", c.final_response, run_dir))
    else:
        body = "<p><i>No final-answer request: the case has no successful answer turn.</i></p>"
    if c.latest_request:
        body += _raw_block("latest context actually sent", c.latest_request, run_dir)
    inc = c.incomplete
    if inc:
        missing = [m.model_dump(mode="json", exclude_unset=True)
                   for m in inc.missing_raw_requests]
        unsent = inc.unsent_tool_outputs
        body += "<h4>Incomplete case</h4>" + _kv([
            ("latest request", inc.latest_request_path or "(none written)"),
            ("missing raw requests", len(missing)),
            ("tool outputs produced but not in the latest request",
             ", ".join(unsent) if unsent else "none"),
        ])
        if missing:
            body += _pre(_pretty(missing))
    return _section(4, SECTION_TITLES[3], body)


def _sec5(c: CaseRecord, run_dir: Path | None) -> str:
    j = c.judgment
    if not j:
        return _section(5, SECTION_TITLES[4], "<p><i>Not judged (no answer to judge, or the run "
                                              "stopped first).</i></p>")
    body = _kv([
        ("judge", j.judge),
        ("scored", "yes" if j.scored else f"no \u2014 {j.unscored_reason}"),
        ("correctness", j.correctness), ("citation support", j.citation_support),
        ("rationale", j.rationale), ("judgments recorded", j.judgments_recorded),
    ])
    body += _details("deterministic checks", _pre(_pretty(j.checks)))
    body += _raw_block("judge request", j.request, run_dir)
    body += _raw_block("judge raw response", j.response, run_dir)
    return _section(5, SECTION_TITLES[4], body)


_ATTEMPT_HEAD = ("attempt", "outcome (http)", "requested \u2192 actual", "temp / effort",
                 "start (UTC)", "queue / ms", "finish (response id)",
                 "tokens in / out / cached / reasoning / cache-write", "USD (source)")
_TH = "text-align:left;vertical-align:bottom;padding:2px 8px 2px 0;border-bottom:1px solid #d5dae0"
_TD = "text-align:left;vertical-align:top;padding:2px 8px 0 0"


def _attempt_rows(a: AttemptRecord, case_id: str) -> str:
    """One attempt: its figures in a row, then its raw files across the table's whole width
    (in a column of their own, the paths wrapped into four lines)."""
    u, cost = a.usage, a.cost
    label = a.label
    label = label[len(f"{case_id}/"):] if label.startswith(f"{case_id}/") else label
    usd = cost.usd if cost else None
    cells = (f"{label} #{a.number} ({a.purpose})",
             f"{a.outcome}" + (f": {a.error}" if a.error else "") + f" ({a.http_status})",
             f"{a.requested_provider} / {a.requested_model} \u2192 "
             f"{a.actual_provider} / {a.actual_model}",
             f"{a.temperature} / {a.reasoning_effort}", a.started_at,
             f"{ms(a.queue_ms)} / {ms(a.duration_ms)}",
             f"{a.finish_reason}" + (f" ({a.response_id})" if a.response_id else ""),
             " / ".join(str(v) for v in (u.input_tokens, u.output_tokens, u.cached_tokens,
                                         u.reasoning_tokens, u.cache_write_tokens)),
             f"{'unknown' if usd is None else usd} ({cost.source if cost else None})")
    files = []
    for kind, path, stored in (("request", a.request_path, a.request_in_store),
                               ("response", a.response_path, a.response_in_store)):
        mark = "" if not path or stored else ' <b style="color:#cf222e">missing</b>'
        files.append(f"{kind}: {esc(path) if path else '(none)'}{mark}")
    figures = "".join(f'<td style="{_TD}">{esc(v)}</td>' for v in cells)
    return (f'<tr class="pa-attempt">{figures}</tr>'
            f'<tr class="pa-attempt-files"><td colspan="{len(cells)}" style="{_TD};'
            f'padding-bottom:3px;border-bottom:1px solid #eaeef2;color:#5b6470;'
            f'overflow-wrap:anywhere">raw files: '
            f'{" · ".join(files)}</td></tr>')


def _sec6(c: CaseRecord, run_dir: Path | None) -> str:
    attempts = c.attempts
    head = "<tr>" + "".join(f'<th style="{_TH}">{esc(h)}</th>' for h in _ATTEMPT_HEAD) + "</tr>"
    rows = "".join(_attempt_rows(a, c.case_id) for a in attempts)
    # fits a ~900-px pane; a narrower one scrolls the table in its own box
    body = ('<div style="overflow-x:auto"><table class="pa-attempts" style="font-size:12px;'
            f'border-collapse:collapse">{head}{rows}</table></div>')
    raw_files = c.raw_files
    if raw_files:
        body += _details(f"all raw files of this case ({len(raw_files)})",
                         _pre("\n".join(raw_files)) + "print one with "
                         + _raw_cmd(run_dir, "PATH"))
    return _section(6, f"{SECTION_TITLES[5]} ({len(attempts)})", body)


def _links(c: CaseRecord, run_dir: Path | None) -> str:
    parts = []
    for label, rel in (("case record", c.links.case), ("journal", c.links.journal)):
        if not rel:
            continue
        parts.append(f"{esc(label)}: <code>{esc(rel)}</code>")
    where = " (open them below, under “Files of this case”)" if run_dir else ""
    return f'<p class="pa-links" style="color:#666">{" · ".join(parts)}{where}</p>'


# The case takes the width of the pane it is shown in, never its content's: an ipywidgets HTML
# is a flex item as wide as its widest unbreakable content (a 16-column table, a sha256), which
# was 1,459 px in a 932-px notebook pane with its right third cut off. Long words in values,
# paths and blocks break anywhere, as in report.html; the line height is the page's, not the
# widgets' 28-px inline height (which made an API attempt's row 142 px tall).
_CASE = "contain:inline-size;overflow-wrap:break-word;line-height:1.4"


def render_case(record: CaseRecord, *, run_dir: Path | None = None) -> str:
    """The case's six sections as one HTML fragment (escaped; no script)."""
    return (f'<div class="pa-case" style="{_CASE}">' + _sec1(record) + _sec2(record) + _sec3(record)
            + _sec4(record, run_dir) + _sec5(record, run_dir) + _sec6(record, run_dir)
            + _links(record, run_dir) + "</div>")
