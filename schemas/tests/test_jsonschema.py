from __future__ import annotations

from pathlib import Path

import jsonschema
import msgspec

from pt2kit.schema import SCHEMA_MAJOR, Violation, encode
from pt2kit.schema.export import json_schema, schema_filename

JSON_DIR = Path(__file__).resolve().parents[1] / "json"


def test_committed_json_schema_matches_the_structs():
    committed = (JSON_DIR / schema_filename()).read_text()
    assert committed == json_schema(), "schemas/json is stale: run `nox -s schemas`"


def test_records_validate_against_the_exported_schema():
    schema = msgspec.json.decode(json_schema())
    rec = Violation(v=SCHEMA_MAJOR, run="r", constraint="align", message="m", phase="forward", shape=[10, "s0"])
    jsonschema.validate(msgspec.json.decode(encode(rec)), schema)
    bad = msgspec.json.decode(encode(rec))
    del bad["v"]
    try:
        jsonschema.validate(bad, schema)
    except jsonschema.ValidationError:
        pass
    else:
        raise AssertionError("a record without `v` must not validate")
