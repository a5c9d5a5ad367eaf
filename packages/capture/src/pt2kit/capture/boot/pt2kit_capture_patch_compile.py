"""Patch: torch.compile's backend wrappers keep ``mode``/``options``/``dynamic`` (the inductor one drops
mode), so a graph's line says what the user asked for.

Runs inside the user's interpreter: stdlib + torch. Guarantees: the original ``__init__`` runs first,
with the same arguments; reading them never raises into the user's program. Not guaranteed: the mode of
a backend torch.compile did not wrap (``torch._dynamo.optimize(backend)``): its line has none.
"""

from __future__ import annotations

from typing import Any

import pt2kit_capture_process as process


def patch(cls: type) -> None:
    """Keep torch.compile's mode/options/dynamic on its backend wrapper (the inductor one drops mode)."""
    import functools
    import inspect

    original = cls.__init__
    signature = inspect.signature(original)

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        try:
            bound = signature.bind(self, *args, **kwargs).arguments
            self._pt2kit_compile = {k: bound.get(k) for k in ("mode", "options", "dynamic")}
        except Exception:
            pass

    process.replace(cls, "__init__", __init__)
