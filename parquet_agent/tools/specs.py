"""The four tools as typed Python signatures: the single source of their schemas and validation.

Names and arguments are a contract (DESIGN.md): `describe_corpus()`, `sql(query,
file_stem=None)`, `search_headers(query, page=1, page_size=20)`, `read_filing(file_stem,
start=0, max_chars=4000, pattern=None)`. Each signature below is turned into a strict pydantic
model (`extra="forbid"`, no type coercion), whose JSON Schema is what the model sees
(`ToolSpec.parameters`) and whose validation every untrusted call goes through. The function
bodies never run: the work happens in the sandboxed worker. Docstrings are the tool
descriptions, so they steer the agent (narrow by metadata first; contains over ILIKE).
"""

from __future__ import annotations

import inspect
import typing
from typing import Annotated, Any, Callable

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, create_model

from parquet_agent.models.protocol import ToolSpec
from parquet_agent.tools.gate import MAX_QUERY_CHARS

TOOL_VERSION = "tools-1"  # part of every cache key: bump when any tool's output changes
# A call's raw argument text (the JSON a model sent) is refused unread above this: room for a
# longest query written entirely in JSON unicode escapes, far below what parsing would cost.
MAX_ARGUMENT_CHARS = 8 * MAX_QUERY_CHARS


def _clean_text(value: str) -> str:
    if "\x00" in value:
        raise ValueError("text must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("text must be valid UTF-8 (it holds a lone surrogate)") from exc
    return value


Text = Annotated[str, AfterValidator(_clean_text)]
FileStem = Annotated[
    Text,
    Field(
        min_length=1,
        max_length=128,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._:\-]*$",
        description="the filing's file_stem (its accession number, e.g. from search_headers)",
    ),
]


def describe_corpus() -> None:
    """Describe the corpus: its Parquet files, their schema, row counts and sizes, and what each
    column means. Call this first. The text of each filing is only in `parsed_md`."""


def sql(
    query: Annotated[
        Text,
        Field(
            min_length=1,
            max_length=MAX_QUERY_CHARS,
            description="exactly one read-only DuckDB SELECT (WITH ... SELECT allowed) over "
            "the view `filings`, or over `filing` when file_stem is given",
        ),
    ],
    file_stem: Annotated[
        FileStem | None,
        Field(description="scope the query to this one filing: it runs over a one-row view "
        "`filing` (same columns as `filings`) and reads nothing else; much faster for "
        "questions about one known filing"),
    ] = None,
) -> None:
    """Run one read-only DuckDB SELECT over the view `filings` (columns: accession, file_stem,
    year, month, parsed_md, char_count, md5, has_ocr, source_format). Metadata queries are fast;
    scanning parsed_md across the whole corpus is slow and is stopped at 20 CPU seconds, so
    narrow first by year, month, accession or file_stem, and search text with
    contains(parsed_md, 'Exact Text') (about 2.5x faster than ILIKE). Select
    substr(parsed_md, start, n) rather than whole cells. Output is capped at 200 rows,
    2,000 characters per cell and 30,000 characters in all, and says what it cut."""


def search_headers(
    query: Annotated[
        Text,
        Field(
            min_length=1,
            max_length=200,
            description="words to match: company name words, CIK (with or without zero "
            "padding), form type (10-K, 10-Q, 8-K, ...), period or filing date (YYYY, YYYY-MM, "
            "YYYY-MM-DD) or a file_stem; every word must match",
        ),
    ],
    page: Annotated[int, Field(ge=1, le=10_000, description="1-based page number")] = 1,
    page_size: Annotated[int, Field(ge=1, le=100, description="results per page")] = 20,
) -> None:
    """Search the issuer headers of all filings (company, CIK, form type, period, filing date)
    without reading any filing text. Returns the matching filings' file_stem, company, form,
    dates and file, one page at a time, with the total number of matches. Use it to find the
    file_stem of a company's filing before reading it."""


def read_filing(
    file_stem: FileStem,
    start: Annotated[int, Field(ge=0, description="character offset into parsed_md to start at")] = 0,
    max_chars: Annotated[
        int, Field(ge=1, le=20_000, description="how many characters to return at most")
    ] = 4000,
    pattern: Annotated[
        Text | None,
        Field(
            min_length=1,
            max_length=200,
            description="literal text to find (case-insensitive, not a regex): returns windows "
            "around the matches at or after `start` instead of one excerpt",
        ),
    ] = None,
) -> None:
    """Read part of one filing's text (parsed_md), by file_stem. Returns a capped excerpt with
    its source id and [start, end) character offsets, and next_start to continue from. With
    pattern, returns windows of text around each match (paginated with next_start) and the
    number of matches."""


ALL_TOOLS: dict[str, Callable[..., None]] = {
    f.__name__: f for f in (describe_corpus, sql, search_headers, read_filing)
}
STRATEGIES: dict[str, tuple[str, ...]] = {
    "sql": ("describe_corpus", "sql"),
    "sql+stream": ("describe_corpus", "sql", "search_headers", "read_filing"),
}


def arguments_model(func: Callable[..., None]) -> type[BaseModel]:
    """A strict pydantic model of `func`'s parameters (no coercion, no unknown keys)."""
    hints = typing.get_type_hints(func, include_extras=True)
    fields: dict[str, Any] = {}
    for name, param in inspect.signature(func).parameters.items():
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[name] = (hints[name], default)
    return create_model(
        f"{func.__name__}_arguments",
        __config__=ConfigDict(extra="forbid", strict=True),
        **fields,
    )


def _strip_titles(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strip_titles(v) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


# Local servers compile the schema into a sampling grammar: llama.cpp's grammar builder
# segfaults on `maxLength: 20000` (200 works). Long limits stay out of the schema the model sees
# and are enforced by validation, where a breach is an error value the model reads.
MAX_SCHEMA_LENGTH = 256


def _portable(schema: Any) -> Any:
    """`schema` without string length limits above MAX_SCHEMA_LENGTH (said in the description)."""
    if isinstance(schema, list):
        return [_portable(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _portable(v) for k, v in schema.items()}
    limit = out.get("maxLength")
    if isinstance(limit, int) and limit > MAX_SCHEMA_LENGTH:
        del out["maxLength"]
        out["description"] = f"{out.get('description', '')} (at most {limit:,} characters)".strip()
    return out


def tool_spec(func: Callable[..., None]) -> ToolSpec:
    schema = _portable(_strip_titles(arguments_model(func).model_json_schema()))
    schema.setdefault("properties", {})
    schema["additionalProperties"] = False
    description = inspect.cleandoc(func.__doc__ or "").replace("\n", " ")
    return ToolSpec(name=func.__name__, description=description, parameters=schema)


class ArgumentCheck:
    """Validates untrusted arguments of one tool; `check(arguments) -> (dict, None) | (None, msg)`."""

    def __init__(self, func: Callable[..., None]):
        self.name = func.__name__
        self._model = arguments_model(func)

    def check(self, arguments: Any) -> dict[str, Any] | str:
        """The validated arguments (defaults filled in), or what is wrong with them."""
        if not isinstance(arguments, dict):
            return f"arguments of {self.name} must be a JSON object, not {type(arguments).__name__}"
        try:
            parsed = self._model.model_validate(arguments)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                for e in exc.errors(include_url=False)[:5]
            )
            return f"invalid arguments for {self.name}: {problems}"
        return parsed.model_dump()
