"""Triton's CPU interpreter (``TRITON_INTERPRET=1``), made to run our kernels on the versions we meet.

Triton 3.6's interpreter turns an ``int`` kernel argument into a one-element NumPy array and calls
``int()`` on it for a loop bound (``tl.range(0, n)``). NumPy 2.4 refuses that ("only 0-dimensional
arrays can be converted to Python scalars"), so every persistent-loop kernel fails there, while the
compiled kernel is fine. Triton 3.9 squeezes the array first; :func:`patch_interpreter_index` does
the same on older versions. It touches a private function, so it is the only place that does.
"""

from __future__ import annotations

import os

_MARK = "_pt2kit_index_fix"


def _index(self):  # tl.tensor.__index__ under the interpreter
    data = self.handle.data
    return int(data.reshape(-1)[0]) if getattr(data, "size", 0) == 1 else int(data)


def patch_interpreter_index() -> bool:
    """When interpreting, wrap the interpreter's tensor patching so ``__index__`` squeezes; idempotent.

    Returns whether the interpreter is now patched (False when not interpreting, or when this
    Triton has no such function: then there is nothing to mend).
    """
    if os.environ.get("TRITON_INTERPRET") != "1":
        return False
    try:
        from triton.runtime import interpreter
    except ImportError:
        return False
    original = getattr(interpreter, "_patch_lang_tensor", None)
    if original is None:
        return False
    if getattr(original, _MARK, False):
        return True

    def patched(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", _index)

    setattr(patched, _MARK, True)
    interpreter._patch_lang_tensor = patched
    return True
