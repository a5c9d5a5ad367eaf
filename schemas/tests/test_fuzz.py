from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from pt2kit.schema import StreamError, read_stream

TEXT = st.characters(exclude_categories=("Cs",))  # lone surrogates are not JSON at all
PREFIXES = [b'{"kind":"graph","v":1,"run":"r","phase":"dynamo"', b'{"kind":"diff","v":1,', b'{"kind":', b""]


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(PREFIXES), st.binary(max_size=300))
def test_reader_never_raises_anything_but_stream_error(prefix, tail):
    try:
        for _ in read_stream(["-"], stdin=io.BytesIO(prefix + tail)):
            pass
    except StreamError as e:
        assert "\n" not in str(e)


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(TEXT),
                    lambda c: st.lists(c) | st.dictionaries(st.text(TEXT), c), max_leaves=20))
def test_arbitrary_json_values_as_records(value):
    import json

    line = json.dumps({"kind": "graph", "v": 1, "run": "r", "phase": value}).encode()
    try:
        list(read_stream(["-"], stdin=io.BytesIO(line)))
    except StreamError as e:
        assert str(e).startswith("<stdin>:1: invalid `graph` record")
