"""JSON Schema of the current major, generated from the Structs (``nox -s schemas`` writes it)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from .records import RECORD_TYPES, SCHEMA_MAJOR, AnyRecord


def schema_filename(major: int = SCHEMA_MAJOR) -> str:
    return f"pt2kit-records-v{major}.schema.json"


def json_schema() -> str:
    """The schema of every record kind, as deterministic, human-diffable text."""
    schema = msgspec.json.schema(AnyRecord)
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"pt2kit record stream, schema major {SCHEMA_MAJOR}",
        "description": "One JSON object per line; `kind` tags the record. Kinds: "
        + ", ".join(t.__struct_config__.tag for t in RECORD_TYPES),
        **schema,
    }
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def write(directory: str | Path) -> Path:
    from .store import atomic_write

    return atomic_write(Path(directory) / schema_filename(), json_schema())
