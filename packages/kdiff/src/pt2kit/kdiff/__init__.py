"""kdiff: numerical diff of a compiled model against a reference, down to the first diverging op.

Public (everything else is private):

* ``assert_same(actual, expected, *, atol=None, rtol=None, equal_nan=False)``: for a user's own
  tests. Raises ``AssertionError`` with kdiff's per-leaf table (worst index, both values,
  tolerances) when two outputs, any pytrees, differ.
* ``compare(ref, test, *, atol, rtol, equal_nan=False)``: one tensor pair, one pass (Triton on CUDA).
* ``localize(...)``: the first diverging aten node of a compiled model.

Importing this package does not import torch; each name imports it when first used.
"""

from pt2kit.runtime.api import exports

__version__ = "2.10.14"

_PUBLIC = {"assert_same": ".check", "compare": ".metrics", "localize": ".localization"}
__all__ = ["__version__", *_PUBLIC]
__getattr__, __dir__ = exports(__name__, _PUBLIC)
