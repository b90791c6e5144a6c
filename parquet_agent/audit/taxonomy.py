"""The closed taxonomy of findings and the severity rule.

A finding's category is one of `CATEGORIES`. Its severity is derived, never chosen: the
category's base severity, one level up when at least 5 % of the rows are affected, one level
down below 0.1 %. A proposer may *lower* it (with a stated reason: e.g. a documented property),
never raise it (`settle_severity`).
"""

from __future__ import annotations

CATEGORIES: dict[str, str] = {
    "completeness": "missing values: nulls or empty strings where a value is expected",
    "uniqueness": "duplicates: a key or a record that occurs more than once",
    "validity": "a value in the wrong format: non-digit ids, mixed padding, unknown spellings",
    "range": "a value outside its plausible range: outliers, scale errors",
    "consistency": "two columns of one row that disagree (a count or hash vs its text)",
    "referential": "a value that should refer to something else and does not",
    "volume": "a file or partition with far fewer (or more) rows than its peers",
    "coverage": "a period or partition that is missing, or rows in the wrong partition",
    "distribution_drift": "a column whose distribution moved from a reference or its peers",
    "schema_drift": "a column whose type or presence differs between files",
}
SEVERITIES = ("info", "low", "medium", "high", "critical")  # ascending
BASE_SEVERITY = {
    "completeness": "medium", "uniqueness": "high", "validity": "medium", "range": "medium",
    "consistency": "high", "referential": "high", "volume": "high", "coverage": "medium",
    "distribution_drift": "low", "schema_drift": "high",
}
WIDE = 0.05
NARROW = 0.001


def derived_severity(category: str, fraction: float | None) -> str:
    """The severity the rule gives `category` at this affected fraction (None: base)."""
    level = SEVERITIES.index(BASE_SEVERITY[category])
    if fraction is not None and fraction >= WIDE:
        level += 1
    elif fraction is not None and fraction < NARROW:
        level -= 1
    return SEVERITIES[max(0, min(level, len(SEVERITIES) - 1))]


def settle_severity(derived: str, proposed: str | None, reason: str | None) -> tuple[str, str | None]:
    """(severity, problem): the proposal when it lowers `derived` with a reason, else `derived`
    with what was wrong with the proposal (None when nothing was)."""
    if proposed is None or proposed == derived:
        return derived, None
    if proposed not in SEVERITIES:
        return derived, f"severity {proposed!r} is not one of {', '.join(SEVERITIES)}"
    if SEVERITIES.index(proposed) > SEVERITIES.index(derived):
        return derived, (f"severity may be lowered, never raised: the rule gives {derived!r} "
                         f"and {proposed!r} was proposed")
    if not (reason or "").strip():
        return derived, f"lowering severity to {proposed!r} needs a severity_reason"
    return proposed, None
