"""Every private (or moving) torch API guardscan uses, each behind one small function (tests/test_torchapi.py).

Checked on torch 2.13 (CPU, CI) and 2.11 (the GPU machine). The structured trace is the long-lived
hook: the ``torch.__trace`` logger is what ``TORCH_TRACE`` writes through, and tlparse reads it.
"""

from __future__ import annotations

import contextlib
import logging
import os
from typing import Any

import torch

from pt2kit.runtime.worker.torchtrace import TRACE_LOGGER, capture_trace  # noqa: F401  (one copy, shared)


def recompile_limit_key() -> str:
    """``recompile_limit`` (torch >= 2.7) or ``cache_size_limit`` (older)."""
    import torch._dynamo.config as cfg

    return "recompile_limit" if hasattr(cfg, "recompile_limit") else "cache_size_limit"


def dynamo_patch(recompile_limit: int | None = None) -> contextlib.AbstractContextManager[Any]:
    import torch._dynamo.config as cfg

    if recompile_limit is None:
        return contextlib.nullcontext()
    return cfg.patch(**{recompile_limit_key(): recompile_limit})


def reset() -> None:
    """Forget every compiled frame, so each scan starts from frame 0."""
    torch._dynamo.reset()


def torch_dir() -> str:
    return os.path.dirname(torch.__file__)


def quiet_dynamo() -> None:
    """Silence Dynamo's own graph-break and recompile-limit warnings: our records say it in one line.

    After ``import torch``, whose logging set-up would set the level back.
    """
    logging.getLogger("torch._dynamo").setLevel(logging.ERROR)
