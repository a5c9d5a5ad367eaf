"""Python literals as a repro.py writes them (:mod:`.repro`): INPUTS with real values in their shortest digits,
and a record's value (FAILURE) filled to the line width, broken only between items, so each stays one expression.

Guarantees: each literal is Python's own ``repr`` of the value (a float32's or float16's shortest digits that round
to the same value), never a record's text copied: nothing written here can become code.
"""

from __future__ import annotations

import math
import pprint
import struct
from typing import Any

from .. import ir

# struct's formats of the dtypes whose values a repro writes in their own shortest digits
_NARROW = {"float32": "f", "float16": "e"}


def shortest(value: float, fmt: str) -> float:
    """The float of fewest significant digits that rounds to ``value`` (a float32's or float16's, held in a Python
    float) as the repro rounds it, a float64 cast to the dtype: -0.9989788, not -0.9989787936210632."""
    want = struct.pack(fmt, value)
    for digits in range(1, 18):
        short = float(f"{value:.{digits}g}")
        if struct.pack(fmt, short) == want:
            return short
    return value


def inputs_literal(c: ir.Candidate) -> str:
    """INPUTS as a literal: each spec's tuple, a float32 or float16 input's real values in their shortest digits
    (:func:`shortest`: the same tensor, in fewer lines)."""
    specs = []
    for s in c.inputs:
        t = s.as_tuple()
        if s.values is not None and s.dtype in _NARROW:
            at = 9 if s.kind == "jagged" else 7  # where as_tuple puts the values: after the offsets and ragged dim
            short = [shortest(v, _NARROW[s.dtype]) if isinstance(v, float) and math.isfinite(v) else v for v in s.values]
            t = (*t[:at], short, *t[at + 1:])
        specs.append(t)
    return pprint.pformat(specs, width=110, compact=True)


def _tokens(value: Any) -> list[str]:
    """A literal as pieces that may each end a line: a dict's or list's items, nested ones' too."""
    if isinstance(value, dict | list) and value:
        items = list(value.items()) if isinstance(value, dict) else [(None, v) for v in value]
        out: list[str] = []
        for i, (k, v) in enumerate(items):
            sub = _tokens(v)
            sub[0] = (f"{k!r}: " if k is not None else "") + sub[0]
            out += sub
            out[-1] += ", " if i < len(items) - 1 else ""
        brackets = "{}" if isinstance(value, dict) else "[]"
        return [brackets[0] + out[0], *out[1:-1], out[-1] + brackets[1]] if len(out) > 1 else \
            [brackets[0] + out[0] + brackets[1]]
    return [repr(value)]


def wrapped(value: Any, width: int = 110, indent: int = 4) -> str:
    """``value``'s literal filled to ``width``, broken only after an item's comma (inside brackets, so it
    is one expression): a failure's precision settings take 2 lines, not pprint's one a key."""
    lines = [""]
    for t in _tokens(value):
        if lines[-1].strip() and len(lines[-1]) + len(t.rstrip()) > width:
            lines[-1] = lines[-1].rstrip()
            lines.append(" " * indent)
        lines[-1] += t
    return "\n".join(lines)
