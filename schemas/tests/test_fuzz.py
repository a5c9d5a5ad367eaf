from __future__ import annotations

import io
import os
from unittest import mock

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


from mutate import mutated_stream  # noqa: E402


@settings(max_examples=400, deadline=None)
@given(mutated_stream())
def test_mutated_real_streams_read_or_stop_with_one_line_at_file_line(data):
    seen = 0
    try:
        for _ in read_stream(["-"], stdin=io.BytesIO(data)):
            seen += 1
    except StreamError as e:
        msg = str(e)
        assert "\n" not in msg and msg.startswith("<stdin>:"), msg
        lineno = int(msg.split(":")[1])
        assert seen < lineno


from mutate import HOSTILE_CAP, Endless, hostile_stream  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(hostile_stream())
def test_cut_endless_oversized_and_mutated_streams_end_in_one_line_having_read_about_the_cap(stream):
    data, endless = stream
    src = Endless(data) if endless else io.BytesIO(data)
    longest = max(map(len, data.split(b"\n")))
    with mock.patch.dict(os.environ, PT2KIT_LINE_CAP=str(HOSTILE_CAP)):
        try:
            list(read_stream(["-"], stdin=io.BufferedReader(src)))
            assert not endless and longest <= HOSTILE_CAP  # an endless line always stops the read
        except StreamError as e:
            assert "\n" not in str(e) and str(e).startswith("<stdin>:")
    if endless:
        assert src.taken <= len(data) + HOSTILE_CAP + 3 * (1 << 16)
