"""The windows of a filing's text around the matches of a pattern: what `read_filing` returns
when it is given one (in the worker child, after the row is read)."""

from __future__ import annotations

import re
from typing import Any

MAX_MATCHES_COUNTED = 10_000
MAX_STARTS_PER_WINDOW = 20


def match_windows(text: str, base: dict, start: int, max_chars: int, pattern: str) -> tuple[Any, Any]:
    """(output, truncation or None) of `read_filing` with a pattern: `base` plus the windows of
    `text` around each match from `start`, at most `max_chars` of them in all."""
    # A literal, case-insensitive pattern: re.escape keeps untrusted text from being a ReDoS.
    # Python's IGNORECASE makes some letters equal that are not the same text ("İ" matches
    # every "i"): a match counts only when it case-folds to the pattern.
    matcher = re.compile(re.escape(pattern), re.IGNORECASE)
    folded = pattern.casefold()
    context = max(40, min(400, max_chars // 4))
    windows: list[dict] = []
    used = 0
    total = 0
    next_start = None
    for match in matcher.finditer(text, start):
        if match.group().casefold() != folded:
            continue
        total += 1
        if total > MAX_MATCHES_COUNTED:
            break
        if next_start is not None:
            continue
        w_start = max(0, match.start() - context)
        w_end = min(len(text), match.end() + context)
        if windows and w_start <= windows[-1]["end"]:  # overlapping windows merge
            last = windows[-1]
            extra = w_end - last["end"]
            if used + extra > max_chars:
                next_start = match.start()
                continue
            last["end"] = w_end
            last["match_starts"].append(match.start())
            used += extra
            continue
        if windows and used + (w_end - w_start) > max_chars:
            next_start = match.start()
            continue
        w_end = min(w_end, w_start + max(max_chars, match.end() - w_start))
        windows.append({"start": w_start, "end": w_end, "match_starts": [match.start()]})
        used += w_end - w_start
    for window in windows:
        window["text"] = text[window["start"] : window["end"]]
        starts = window["match_starts"]
        if len(starts) > MAX_STARTS_PER_WINDOW:  # a common pattern must not blow the output up
            window["match_starts"] = starts[:MAX_STARTS_PER_WINDOW]
            window["more_match_starts"] = len(starts) - MAX_STARTS_PER_WINDOW
    out = {
        **base,
        "pattern": pattern,
        "from": start,
        "matches_total": min(total, MAX_MATCHES_COUNTED),
        "matches_total_capped": total > MAX_MATCHES_COUNTED,
        "windows": windows,
        "next_start": next_start,
    }
    truncated = {"next_start": next_start} if next_start is not None else None
    return out, truncated
