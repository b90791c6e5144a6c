"""The corpus columns (a contract) and the check that a Parquet schema holds them.

A row is a filing record, not a unique document: duplicates exist. `accession` is the company
CIK as a string, sometimes zero-padded (the name is historical); `file_stem` is the filing's
accession number, the per-filing id; `parsed_md` holds the whole filing as Markdown.
"""

from __future__ import annotations

import pyarrow as pa

from parquet_agent.errors import SchemaError

# The types we write. Readers accept any width of integer and either string flavour.
CORPUS_SCHEMA = pa.schema(
    [
        pa.field("accession", pa.string()),
        pa.field("file_stem", pa.string()),
        pa.field("year", pa.int32()),
        pa.field("month", pa.int32()),
        pa.field("parsed_md", pa.string()),
        pa.field("char_count", pa.int64()),
        pa.field("md5", pa.string()),
        pa.field("has_ocr", pa.bool_()),
        pa.field("source_format", pa.string()),
    ]
)

COLUMNS: tuple[str, ...] = tuple(CORPUS_SCHEMA.names)

COLUMN_MEANINGS: dict[str, str] = {
    "accession": "company CIK as a string, sometimes zero-padded (the column name is historical)",
    "file_stem": "the filing's accession number: the per-filing id used by every tool",
    "year": "filing year",
    "month": "filing month (1-12)",
    "parsed_md": "the whole filing as Markdown; company name, form type, dates and financial "
    "tables live only in here",
    "char_count": "number of characters in parsed_md",
    "md5": "MD5 of parsed_md (UTF-8); equal md5 under different file_stem = duplicate document",
    "has_ocr": "true when the text came from OCR (expect noise)",
    "source_format": "the format the filing was parsed from (html, pdf, txt, xbrl, ...)",
}

_KIND_CHECKS = {
    "string": lambda t: pa.types.is_string(t) or pa.types.is_large_string(t),
    "integer": pa.types.is_integer,
    "boolean": pa.types.is_boolean,
}


def expected_kind(column: str) -> str:
    """The type family a column must have: `string`, `integer` or `boolean`."""
    t = CORPUS_SCHEMA.field(column).type
    return next(kind for kind, check in _KIND_CHECKS.items() if check(t))


def validate_schema(schema: pa.Schema, source: str) -> None:
    """Raise SchemaError naming `source` and the column when `schema` misses a required
    column or has one of the wrong type family. Extra columns are allowed."""
    names = set(schema.names)
    missing = [c for c in COLUMNS if c not in names]
    if missing:
        raise SchemaError(
            f"{source}: missing required column(s) {', '.join(missing)}; "
            f"a corpus file needs all of {', '.join(COLUMNS)}"
        )
    for column in COLUMNS:
        actual = schema.field(column).type
        kind = expected_kind(column)
        if not _KIND_CHECKS[kind](actual):
            raise SchemaError(
                f"{source}: column {column!r} has type {actual}; expected {kind} "
                f"({CORPUS_SCHEMA.field(column).type})"
            )
