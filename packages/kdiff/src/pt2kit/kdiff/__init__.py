"""kdiff: numerical diff of a compiled model against a reference, down to the first diverging op.

Public (everything else is private):

* ``assert_same(actual, expected, *, atol=None, rtol=None, equal_nan=False)``: for a user's own
  tests. Raises ``AssertionError`` with kdiff's per-leaf table (worst index, both values,
  tolerances) when two outputs, any pytrees, differ.
* ``compare(ref, test, *, atol, rtol, equal_nan=False)``: one tensor pair, one pass (Triton on CUDA).
* ``localize(...)``: the first diverging aten node of a compiled model.

Importing this package does not import torch; each name imports it when first used.
"""

from typing import Any

__version__ = "1.3.0"

__all__ = ["assert_same", "compare", "localize"]


def __getattr__(name: str) -> Any:
    if name == "assert_same":
        from .check import assert_same

        return assert_same
    if name == "compare":
        from .metrics import compare

        return compare
    if name == "localize":
        from .localize import localize

        return localize
    raise AttributeError(f"module 'pt2kit.kdiff' has no attribute {name!r}")
