"""Hypothesis strategies that mutate real streams (tests/streams/) the way a hostile or broken
writer would: any value replaced, strings with control codes, `$...$`, markup or invalid UTF-8,
bytes flipped, lines cut. Shared by the schema's and reportgen's fuzz tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

STREAMS = Path(__file__).resolve().parents[2] / "tests" / "streams"


def real_lines() -> list[bytes]:
    lines = [ln for f in sorted(STREAMS.glob("*.ndjson")) for ln in f.read_bytes().splitlines() if ln.strip()]
    assert len(lines) > 100, f"the real streams in {STREAMS} are missing"
    return lines


NASTY = st.sampled_from([
    "$x^$", "$\\frac{$", "\x1b]0;owned\x07\x1b[2J", "<script>alert(1)</script>", "javascript:alert(1)",
    "a|b`c`*d*[e](f)", "/etc/passwd", "../../etc/passwd", "x" * 300, "‮evil", "nan", "inf", "", "\n\n",
])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats() | st.text() | NASTY,
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8) | NASTY, c, max_size=4),
    max_leaves=8,
)


def _paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, (*prefix, i))
    return out


def _set(obj: Any, path: tuple, value: Any) -> None:
    for p in path[:-1]:
        obj = obj[p]
    obj[path[-1]] = value


@st.composite
def mutated_stream(draw: Any) -> bytes:
    lines = list(real_lines())
    start = draw(st.integers(0, len(lines) - 1))
    lines = lines[start : start + draw(st.integers(1, 40))]
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        how = draw(st.sampled_from(["value", "value", "string", "utf8", "bytes", "cut"]))
        if how in ("value", "string"):
            try:
                obj = json.loads(lines[i])
            except ValueError:  # already broken by an earlier mutation
                continue
            paths = [p for p in _paths(obj) if p[-1] not in ("kind",) or how == "value"]
            if paths:
                path = draw(st.sampled_from(paths))
                _set(obj, path, draw(NASTY if how == "string" else JSON))
            lines[i] = json.dumps(obj, allow_nan=True).encode()
        elif not lines[i]:  # cut to nothing by an earlier mutation
            continue
        elif how == "utf8":
            quotes = [k for k, b in enumerate(lines[i]) if b == ord('"')]
            if not quotes:
                continue
            k = draw(st.sampled_from(quotes)) + 1
            lines[i] = lines[i][:k] + draw(st.sampled_from([b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\xe2\x82"])) + lines[i][k:]
        elif how == "bytes":
            k = draw(st.integers(0, len(lines[i]) - 1))
            lines[i] = lines[i][:k] + bytes([draw(st.integers(0, 255))]) + lines[i][k + 1 :]
        else:
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
    return b"\n".join(lines) + b"\n"
