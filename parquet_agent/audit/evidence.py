"""The finding gate's own evidence: re-run a proposal's queries in the sandbox.

`compute(proposal, tools)` returns `(Evidence, None)` or `(None, problem)`; nothing the proposer
said about counts is used, and a count that is not within its denominator (`count_problem`) is
no evidence. Schema-drift findings are proven from the snapshot's file schemas
(the files whose type for the column differs from the most common one), not from SQL.
"""

from __future__ import annotations

from collections import Counter

from parquet_agent.audit.finding import Evidence, Proposal, fingerprint, referenced_columns
from parquet_agent.audit.tools import AuditTools


def compute(proposal: Proposal, tools: AuditTools) -> tuple[Evidence | None, str | None]:
    queries = proposal.queries(tools.dataset.key_columns)
    if queries is None:
        return _schema_evidence(proposal, tools)
    views = tools.dataset.views()
    if proposal.predicate is not None and proposal.view not in views:
        return None, (f"no view {proposal.view!r}: a predicate selects rows of one of the views "
                      f"{', '.join(tools.dataset.table_names)} (set `view`)")
    count_sql, denominator_sql, examples_sql = queries
    count, result = tools.scalar(count_sql)
    if result.error is not None:
        return None, f"the count query failed: {result.model_text()}"
    denominator, result = tools.scalar(denominator_sql)
    if result.error is not None:
        return None, f"the denominator query failed: {result.model_text()}"
    problem = count_problem(count, denominator)
    if problem:
        return None, problem
    examples: tuple[dict, ...] = ()
    if examples_sql:
        result = tools.run_query(examples_sql)
        if not result.ok:
            return None, f"the examples query failed: {result.model_text()}"
        columns = result.output["columns"]
        examples = tuple(dict(zip(columns, row)) for row in result.output["rows"][:5])
    return Evidence(count_sql, denominator_sql, examples_sql, count, denominator, examples), None


MAX_COUNT = 2**63 - 1  # what the findings store (SQLite INTEGER) and every reader can hold


def count_problem(count: object, denominator: object) -> str | None:
    """Why `count` of `denominator` is not evidence (None when it is): both integers, the
    count within its denominator (0 <= count <= denominator), neither past a 64-bit integer.
    A count of 500 over a denominator of 10, a negative count or 5 of 0 is refused here rather
    than committed (or crashing the interval)."""
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (count, denominator)):
        return "the count and denominator queries must each return one integer"
    assert isinstance(count, int) and isinstance(denominator, int)
    if not 0 <= count <= denominator <= MAX_COUNT:
        return (f"the evidence must be a count within its denominator (0 <= count <= "
                f"denominator <= {MAX_COUNT}): the count query gave {_short(count)} and the "
                f"denominator query {_short(denominator)}")
    return None


def _short(value: int) -> str:
    text = str(value)
    return text if len(text) <= 40 else text[:20] + f"...({len(text)} digits)"


def _schema_evidence(proposal: Proposal, tools: AuditTools) -> tuple[Evidence | None, str | None]:
    """The files of each column's table whose type for it differs from the most common one."""
    dataset = tools.dataset
    drifted: list[dict] = []
    files: set[str] = set()
    for column in proposal.columns:
        found = dataset.resolve(column)
        table, stored = (found[0], found[1].stored) if found else (None, column)
        schemas = dataset.file_schemas(table)
        files |= set(schemas)
        kinds = {name: schema.get(stored, "<absent>") for name, schema in schemas.items()}
        usual, _ = Counter(kinds.values()).most_common(1)[0]
        drifted += [{"_file": name, "column": column, "type": kind, "usual_type": usual}
                    for name, kind in kinds.items() if kind != usual]
    return Evidence(None, None, None, len(drifted), len(files), tuple(drifted[:5]), "schema"), None


def proposal_fingerprint(proposal: Proposal, tools: AuditTools) -> str:
    """The parse-tree fingerprint of the count query (schema findings: of their columns)."""
    queries = proposal.queries(tools.dataset.key_columns)
    if queries is None:
        return fingerprint("SELECT 'schema' AS evidence, " + ", ".join(
            "'" + c.replace("'", "''") + "'" for c in proposal.columns))
    return fingerprint(queries[0])


def proposal_reads(proposal: Proposal, tools: AuditTools) -> list[str] | None:
    """The identifiers the count query reads, lower-cased; None for a schema finding, a query
    that reads `*`, or one that does not parse (the fingerprint says so)."""
    queries = proposal.queries(tools.dataset.key_columns)
    if queries is None:
        return None
    try:
        names = referenced_columns(queries[0])
    except ValueError:
        return None
    return None if names is None else sorted(names)
