"""fxcheck: capture every graph a model compiles to and check it against an accelerator's capabilities.

Library use::

    import pt2kit.fxcheck as fxcheck
    be = fxcheck.backend("npu-bf16", strict=False, align=16)
    torch.compile(model, backend=be)(x)
    be.findings  # violation records

Importing this package does not import torch; ``backend()`` does.
"""

from __future__ import annotations

from typing import Any

__version__ = "1.2.0"


def backend(profile: Any = None, *, strict: bool | None = None, **overrides: Any) -> Any:
    from .capture import backend as _backend

    return _backend(profile, strict=strict, **overrides)


__all__ = ["__version__", "backend"]
