/* report.html: filters over the case rows, and a case's audit detail rendered when opened.
 *
 * Every string shown comes from model output or filings: it is untrusted. It only ever reaches
 * the page through text nodes (never innerHTML, never an href or event attribute), and control
 * and bidi-override characters are shown as visible <U+XXXX> marks so they cannot hide or
 * reorder what an auditor reads (the same set and marks as parquet_agent/escape.py; ASCII, so
 * a text full of them lays out at once). One text shows at most SHOWN characters until asked
 * for the rest: layout time grows faster than a text's length, and a case must open at once
 * whatever its answer holds. The index lives in a <script type="application/json"> block
 * (with "<" escaped by the exporter); each case's record in a deflated base64 block that is
 * decoded (DecompressionStream, no network) only when the case is opened.
 */
(function () {
  "use strict";
  var byId = function (id) { return document.getElementById(id); };
  var data = JSON.parse(byId("index-data").textContent);
  var rows = data.rows;
  var RUN = data.run_dir_hint;
  var ODD = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]/g;
  var SHOWN = 10000;

  function visible(s) {
    return String(s).replace(ODD, function (c) {
      return "<U+" + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0") + ">";
    });
  }
  /* A text node, or for a long text its first SHOWN characters and a button for the rest. */
  function textOf(s) {
    s = String(s);
    if (s.length <= SHOWN) return document.createTextNode(visible(s));
    var cut = SHOWN - (/[\ud800-\udbff]/.test(s.charAt(SHOWN - 1)) ? 1 : 0);
    var span = document.createElement("span");
    var more = document.createElement("button");
    more.className = "more";
    more.textContent = "show the other " + (s.length - cut).toLocaleString("en") + " characters";
    more.addEventListener("click", function (ev) {
      ev.stopPropagation();
      span.replaceChildren(document.createTextNode(visible(s)));
    });
    span.append(document.createTextNode(visible(s.slice(0, cut)) + "\u2026 "), more);
    return span;
  }
  function el(tag, cls) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined) continue;
      e.appendChild(typeof c === "object" ? c : textOf(c));
    }
    return e;
  }
  function fmt(v, digits) {
    if (v === null || v === undefined || v === "") return "\u2014";
    if (typeof v === "number") return digits === undefined ? String(v) : v.toFixed(digits);
    return String(v);
  }
  function pretty(v) { return JSON.stringify(v, null, 1); }
  function kv(pairs) {
    var dl = el("dl", "kv");
    pairs.forEach(function (p) {
      dl.appendChild(el("dt", null, p[0]));
      var dd = el("dd", null);
      if (p[1] !== null && typeof p[1] === "object" && p[1].nodeType) dd.appendChild(p[1]);
      else dd.appendChild(textOf(fmt(p[1])));
      dl.appendChild(dd);
    });
    return dl;
  }
  function pre(text) { return el("pre", null, text); }
  function folded(summary, body, open) {
    var d = el("details", null, el("summary", null, summary), body);
    if (open) d.open = true;
    return d;
  }
  function cmd(path) {
    return el("code", "cmd", "parquet-agent raw " + RUN + " " + path);
  }

  /* -- the exact bytes of a raw file, with an optional pretty view -------------------------- */
  function rawBlock(title, raw) {
    var box = el("div", "raw");
    if (!raw) { box.appendChild(el("p", "muted", title + ": not recorded")); return box; }
    box.appendChild(el("div", null, el("strong", null, title), " ",
      el("span", "muted", raw.path + " \u00b7 " + raw.bytes + " bytes \u00b7 " + raw.sha256)));
    var exact = raw.text !== null ? raw.text : "(not UTF-8; base64) " + raw.base64;
    var out = pre(exact);
    var btn = el("button", null, "pretty view");
    var isPretty = false;
    btn.addEventListener("click", function () {
      isPretty = !isPretty;
      var shown = exact;
      if (isPretty) {
        try {
          var rec = JSON.parse(raw.text);
          if (typeof rec.body === "string") {
            try { rec.body = JSON.parse(rec.body); } catch (e) { /* not JSON: keep text */ }
          }
          shown = pretty(rec);
        } catch (e) { shown = exact; }
      }
      out.replaceChildren(textOf(shown));
      btn.textContent = isPretty ? "exact bytes" : "pretty view";
    });
    box.appendChild(el("div", "muted", "Exact file content below (", btn,
      "); print it with ", cmd(raw.path)));
    box.appendChild(out);
    return box;
  }

  /* -- the six sections of a case -------------------------------------------------------- */
  function section(n, title) {
    var s = el("section", "sec");
    s.setAttribute("data-section", String(n));
    s.appendChild(el("h3", null, n + ". " + title));
    return s;
  }
  function sec1(c) {
    var s = section(1, "Question, reference, model, status, answer");
    var m = c.model;
    s.appendChild(kv([
      ["case", c.case_id], ["question", c.question],
      ["question as recorded in", c.question_source],
      ["reference answer", c.reference_answer === null && !c.judgment
        ? "(not recorded: the judge never saw this case)" : c.reference_answer],
      ["model", m.name + " \u2014 configured " + fmt(m.configured_provider) + " / " +
        fmt(m.configured_model)],
      ["requested", fmt(m.requested_provider) + " / " + fmt(m.requested_model)],
      ["actual", fmt(m.actual_provider) + " / " + fmt(m.actual_model)],
      ["strategy", c.strategy],
      ["status", c.status + (c.status_reason ? " \u2014 " + c.status_reason : "")],
      ["final answer", c.final_answer === null ? "(none: no answer was given)" : c.final_answer],
    ]));
    if (c.gold_evidence && c.gold_evidence.length)
      s.appendChild(folded("gold evidence (" + c.gold_evidence.length + ")", pre(pretty(c.gold_evidence))));
    if (c.failures && c.failures.length)
      s.appendChild(folded("failures in earlier sessions (" + c.failures.length + ")", pre(pretty(c.failures))));
    return s;
  }
  function sec2(c) {
    var s = section(2, "Tool counts, rounds, attempts, cost, timing");
    var t = c.tool_counts, pairs = [];
    // contract order (DESIGN.md), not the sorted order of the JSON keys
    ["requested_by_model", "processed", "budgeted_attempts", "dispatched", "cache_hits",
     "source_worker_runs", "errors", "budget_rejected", "model_rounds", "api_attempt_count"]
      .forEach(function (k) { pairs.push([k, t[k]]); });
    pairs.push(["(counts from)", c.tool_counts_source]);
    s.appendChild(kv(pairs));
    s.appendChild(kv([
      ["tokens in / out", fmt(c.tokens.input) + " / " + fmt(c.tokens.output)],
      ["tokens cached / reasoning", fmt(c.tokens.cached) + " / " + fmt(c.tokens.reasoning)],
      ["tokens written to the prompt cache", fmt(c.tokens.cache_write)],
      ["cost (USD)", c.cost.usd === null ? "unknown (" + c.cost.unknown_attempts +
        " attempts without a cost; known part " + c.cost.known_usd + ")" : c.cost.usd],
      ["cost answer / judge", fmt(c.cost.answer_usd) + " / " + fmt(c.cost.judge_usd)],
      ["cost source", c.cost.sources.join(", ")],
      ["started / ended", fmt(c.timing.started_at) + " \u2192 " + fmt(c.timing.ended_at)],
      ["wall ms", c.timing.wall_ms],
      ["model / judge / tool ms", fmt(c.timing.model_ms) + " / " + fmt(c.timing.judge_ms) +
        " / " + fmt(c.timing.tool_ms)],
    ]));
    return s;
  }
  function sec3(c) {
    var s = section(3, "Tool calls (" + c.tool_calls.length + ")");
    if (!c.tool_calls.length) s.appendChild(el("p", "muted", "no tool calls"));
    c.tool_calls.forEach(function (t, i) {
      var box = el("div", t.ok ? "call" : "call err");
      box.appendChild(el("div", null,
        el("strong", null, "#" + (i + 1) + " " + t.name), " ",
        el("span", "tag", "turn " + t.turn), el("span", "tag", "call " + t.call_id),
        el("span", t.ok ? "tag ok" : "tag bad", t.ok ? "ok" : "error: " + t.error_kind),
        el("span", "tag", t.cache_hit ? "cache hit" : (t.dispatched ? "worker run" : "not dispatched")),
        t.budgeted ? null : el("span", "tag bad", "over budget")));
      box.appendChild(el("div", "muted", "arguments (exact):"));
      box.appendChild(pre(pretty(t.arguments)));
      if (t.sql) { box.appendChild(el("div", "muted", "SQL:")); box.appendChild(pre(t.sql)); }
      if (t.error_message) box.appendChild(kv([["error", t.error_message]]));
      if (t.offsets && t.offsets.length)
        box.appendChild(kv([["offsets", t.offsets.map(function (o) {
          return fmt(o.file_stem) + " [" + o.start + ", " + o.end + ")"; }).join("; ")]]));
      box.appendChild(kv([["timings ms", pretty(t.timings)], ["worker", t.worker_id]]));
      box.appendChild(folded("returned data", pre(pretty(t.output))));
      if (t.model_text !== null && t.model_text !== undefined)
        box.appendChild(folded("text sent back to the model (exact)", pre(t.model_text)));
      else if (t.model_text_is_output_json)
        box.appendChild(el("div", "muted", "sent back to the model as the compact JSON of the " +
          "returned data (exactly as in the next request)"));
      s.appendChild(box);
    });
    return s;
  }
  function sec4(c) {
    var s = section(4, "Final-answer request (exact)");
    if (c.final_request) {
      s.appendChild(rawBlock("request", c.final_request));
      s.appendChild(folded("response", rawBlock("response", c.final_response)));
    } else {
      s.appendChild(el("p", "muted", "No final-answer request: the case has no successful answer turn."));
    }
    if (c.latest_request) s.appendChild(rawBlock("latest context actually sent", c.latest_request));
    if (c.incomplete) {
      var inc = c.incomplete;
      s.appendChild(el("h4", null, "Incomplete case"));
      s.appendChild(kv([["latest request", inc.latest_request_path || "(none written)"]]));
      s.appendChild(el("div", null, "Missing raw requests: " + inc.missing_raw_requests.length));
      if (inc.missing_raw_requests.length) s.appendChild(pre(pretty(inc.missing_raw_requests)));
      s.appendChild(el("div", null, "Tool outputs produced but not in the latest request: " +
        (inc.unsent_tool_outputs.length ? inc.unsent_tool_outputs.join(", ") : "none")));
    }
    return s;
  }
  function sec5(c) {
    var s = section(5, "Judge: request, raw response, scores, rationale");
    var j = c.judgment;
    if (!j) { s.appendChild(el("p", "muted", "Not judged (no answer to judge, or the run stopped first).")); return s; }
    s.appendChild(kv([
      ["judge", j.judge], ["scored", j.scored ? "yes" : "no \u2014 " + fmt(j.unscored_reason)],
      ["correctness", j.correctness], ["citation support", j.citation_support],
      ["rationale", j.rationale],
      ["judgments recorded", j.judgments_recorded],
    ]));
    s.appendChild(folded("deterministic checks", pre(pretty(j.checks))));
    s.appendChild(rawBlock("judge request", j.request));
    s.appendChild(rawBlock("judge raw response", j.response));
    return s;
  }
  function sec6(c) {
    var s = section(6, "API attempts (" + c.attempts.length + ")");
    var table = el("table", null);
    var head = el("tr", null);
    ["label", "#", "purpose", "outcome", "requested", "actual", "temp", "effort", "start (UTC)",
     "queue ms", "ms", "http", "finish", "tokens in/out/cached/reasoning", "USD (source)",
     "raw files"].forEach(function (h) { head.appendChild(el("th", null, h)); });
    table.appendChild(head);
    c.attempts.forEach(function (a) {
      var u = a.usage || {}, cost = a.cost || {};
      var files = el("div", null);
      [["request", a.request_path, a.request_in_store], ["response", a.response_path, a.response_in_store]]
        .forEach(function (f) {
          files.appendChild(el("div", null, f[0] + ": ", f[1] ? cmd(f[1]) : "(none)",
            f[1] && !f[2] ? el("span", "tag bad", "missing") : null));
        });
      var tr = el("tr", null);
      [a.label, a.number, a.purpose, a.outcome + (a.error ? ": " + a.error : "") +
        (a.notes && a.notes.length ? " [notes: " + a.notes.join("; ") + "]" : ""),
       fmt(a.requested_provider) + " / " + fmt(a.requested_model),
       (a.actual_provider || "unverified") + " / " + (a.actual_model || "unverified"),
       fmt(a.temperature),
       fmt(a.reasoning_effort), fmt(a.started_at), fmt(a.queue_ms), fmt(a.duration_ms),
       fmt(a.http_status), fmt(a.finish_reason) + (a.response_id ? " (" + a.response_id + ")" : ""),
       [u.input_tokens, u.output_tokens, u.cached_tokens, u.reasoning_tokens].map(function (x) { return fmt(x); }).join(" / "),
       (cost.usd === null || cost.usd === undefined ? "unknown" : cost.usd) + " (" + fmt(cost.source) + ")",
      ].forEach(function (v) { tr.appendChild(el("td", null, String(v))); });
      tr.appendChild(el("td", null, files));
      table.appendChild(tr);
    });
    s.appendChild(table);
    if (c.raw_files && c.raw_files.length)
      s.appendChild(folded("all raw files of this case (" + c.raw_files.length + ")",
        pre(c.raw_files.join("\n"))));
    return s;
  }
  function renderCase(c) {
    var box = el("div", "case-detail");
    [sec1, sec2, sec3, sec4, sec5, sec6].forEach(function (f) { box.appendChild(f(c)); });
    box.appendChild(el("p", "muted", "Case record: " + c.links.case + "; journal: " + fmt(c.links.journal)));
    return box;
  }
  /* A case block is its record's JSON, deflated and base64-encoded by the exporter. */
  function loadCase(n) {
    var b64 = byId("case-" + n).textContent.trim();
    var bytes;
    if (Uint8Array.fromBase64) bytes = Uint8Array.fromBase64(b64);
    else {
      var bin = atob(b64);
      bytes = new Uint8Array(bin.length);
      for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
    return new Response(stream).text().then(JSON.parse);
  }

  /* -- the table and its filters --------------------------------------------------------- */
  var tbody = byId("case-rows");
  var trs = [];
  var details = {};
  var COLS = 12;
  function uniq(key) {
    var seen = {};
    rows.forEach(function (r) { seen[r[key] === null ? "" : String(r[key])] = true; });
    return Object.keys(seen).sort();
  }
  function fillSelect(id, values) {
    var sel = byId(id);
    values.forEach(function (v) { var o = el("option", null, v); o.value = v; sel.appendChild(o); });
  }
  fillSelect("f-model", uniq("model"));
  fillSelect("f-strategy", uniq("strategy"));
  fillSelect("f-status", uniq("status"));

  function toggle(i) {
    var tr = trs[i];
    var d = details[i];
    if (d) {
      d.hidden = !d.hidden;
      tr.classList.toggle("open", !d.hidden);
      return;
    }
    d = el("tr", "detail");
    d.setAttribute("data-detail-for", rows[i].case_id);
    var td = el("td", null, el("p", "muted", "decoding the case record\u2026"));
    td.colSpan = COLS;
    loadCase(i).then(function (c) { td.replaceChildren(renderCase(c)); }, function (e) {
      td.replaceChildren(el("p", "status-failed", "cannot decode this case's record: " + e +
        "; read " + rows[i].case_json + " instead"));
      console.error(e);
    });
    d.appendChild(td);
    tr.parentNode.insertBefore(d, tr.nextSibling);
    details[i] = d;
    tr.classList.add("open");
  }

  var frag = document.createDocumentFragment();
  rows.forEach(function (r, i) {
    var tr = el("tr", "case");
    tr.setAttribute("data-case-id", r.case_id);
    var cells = [
      [r.question_id, ""], [r.question, "q"], [r.model, ""], [r.strategy, ""],
      [r.status, "status-" + r.status], [fmt(r.correctness), "num"],
      [fmt(r.citation_support), "num"], [fmt(r.processed), "num"], [fmt(r.model_rounds), "num"],
      [fmt(r.api_attempt_count), "num"],
      [r.cost_usd === null ? "unknown" : r.cost_usd.toFixed(4), "num"],
      [fmt(r.wall_ms === null ? null : Math.round(r.wall_ms)), "num"],
    ];
    cells.forEach(function (c) {
      var td = el("td", c[1], c[0] === null ? "\u2014" : c[0]);
      if (c[1] === "q" && c[0]) td.title = visible(String(c[0]).slice(0, 2000));
      tr.appendChild(td);
    });
    tr.tabIndex = 0;  // keyboard: Tab to a row, Enter or Space opens it
    tr.addEventListener("click", function () { toggle(i); });
    tr.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); toggle(i); }
    });
    trs.push(tr);
    frag.appendChild(tr);
  });
  tbody.appendChild(frag);

  function num(id, dflt) {
    var v = parseFloat(byId(id).value);
    return isNaN(v) ? dflt : v;
  }
  function applyFilters() {
    var q = byId("f-question").value.trim().toLowerCase();
    var model = byId("f-model").value, strategy = byId("f-strategy").value;
    var status = byId("f-status").value, field = byId("f-score-field").value;
    var lo = num("f-score-min", 0), hi = num("f-score-max", 100);
    var ranged = lo > 0 || hi < 100;
    var shown = 0;
    rows.forEach(function (r, i) {
      var ok = (!model || r.model === model) && (!strategy || r.strategy === strategy) &&
        (!status || r.status === status);
      if (ok && q) {
        ok = String(r.question_id).toLowerCase().indexOf(q) >= 0 ||
          String(r.question || "").toLowerCase().indexOf(q) >= 0 ||
          String(r.case_id).toLowerCase().indexOf(q) >= 0;
      }
      if (ok && ranged) {
        var s = r[field];
        ok = s !== null && s !== undefined && s >= lo && s <= hi;
      }
      trs[i].hidden = !ok;
      if (details[i]) details[i].hidden = !ok || !trs[i].classList.contains("open");
      if (ok) shown++;
    });
    byId("count").textContent = shown + " of " + rows.length + " cases";
  }
  ["f-question", "f-score-min", "f-score-max"].forEach(function (id) {
    byId(id).addEventListener("input", applyFilters);
  });
  ["f-model", "f-strategy", "f-status", "f-score-field"].forEach(function (id) {
    byId(id).addEventListener("change", applyFilters);
  });
  byId("f-reset").addEventListener("click", function () {
    ["f-question", "f-model", "f-strategy", "f-status"].forEach(function (id) { byId(id).value = ""; });
    byId("f-score-min").value = "0"; byId("f-score-max").value = "100";
    applyFilters();
  });
  /* -- sorting (click a column head; again to reverse) and the CSV of the shown rows ------ */
  var KEYS = ["question_id", "question", "model", "strategy", "status", "correctness",
              "citation_support", "processed", "model_rounds", "api_attempt_count", "cost_usd",
              "wall_ms"];
  var order = rows.map(function (r, i) { return i; });
  var sorted = {key: null, dir: 1};
  function compare(a, b) {
    if (a === b) return 0;
    if (a === null || a === undefined) return 1;  // unknown last, either direction
    if (b === null || b === undefined) return -1;
    if (typeof a === "number" && typeof b === "number") return a - b;
    return String(a).localeCompare(String(b), undefined, {numeric: true});
  }
  function sortBy(key) {
    sorted.dir = sorted.key === key ? -sorted.dir : 1;
    sorted.key = key;
    order.sort(function (i, j) {
      var a = rows[i][key], b = rows[j][key];
      if (a === null || a === undefined || b === null || b === undefined) return compare(a, b);
      return sorted.dir * compare(a, b) || i - j;
    });
    var frag2 = document.createDocumentFragment();
    order.forEach(function (i) {
      frag2.appendChild(trs[i]);
      if (details[i]) frag2.appendChild(details[i]);
    });
    tbody.appendChild(frag2);
    heads.forEach(function (th, k) {
      th.setAttribute("aria-sort", KEYS[k] !== key ? "none" :
        (sorted.dir > 0 ? "ascending" : "descending"));
    });
  }
  var heads = Array.prototype.slice.call(document.querySelectorAll("#cases thead th"));
  heads.forEach(function (th, k) {
    th.classList.add("sortable");
    th.setAttribute("aria-sort", "none");
    th.title = "sort by this column (click again to reverse)";
    th.addEventListener("click", function () { sortBy(KEYS[k]); });
  });
  function csvCell(v) {
    var t = v === null || v === undefined ? "" : String(v);
    // a spreadsheet must not run a cell as a formula (the guard of parquet_agent/escape.py)
    if (/^[=+\-@\t\r\n\uff1d\uff0b\uff0d\uff20]/.test(t)) t = "'" + t;
    return /[",\n\r]/.test(t) ? '"' + t.replace(/"/g, '""') + '"' : t;
  }
  byId("f-csv").addEventListener("click", function () {
    var lines = [["case_id"].concat(KEYS).join(",")];
    order.forEach(function (i) {
      if (trs[i].hidden) return;
      var r = rows[i];
      lines.push([r.case_id].concat(KEYS.map(function (k) { return r[k]; })).map(csvCell)
        .join(","));
    });
    var url = URL.createObjectURL(new Blob([lines.join("\r\n") + "\r\n"],
                                           {type: "text/csv;charset=utf-8"}));
    var a = el("a");
    a.href = url;
    a.download = "cases-shown.csv";
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(function () { URL.revokeObjectURL(url); }, 1000);
  });

  applyFilters();
  document.documentElement.setAttribute("data-ready", "1");
  window.reportReadyMs = performance.now();
})();
