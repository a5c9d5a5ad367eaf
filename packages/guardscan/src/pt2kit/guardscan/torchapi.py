"""Every private (or moving) torch API guardscan uses, each behind one small function (tests/test_torchapi.py).

Checked on torch 2.13 (CPU, CI) and 2.11 (the GPU machine). The structured trace is the long-lived
hook: the ``torch.__trace`` logger is what ``TORCH_TRACE`` writes through, and tlparse reads it.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator
from typing import Any

import torch

TRACE_LOGGER = "torch.__trace"


class _TraceHandler(logging.Handler):
    def __init__(self, on_event: Callable[[dict[str, Any], str | None], None]) -> None:
        super().__init__(logging.DEBUG)
        self.on_event = on_event

    def emit(self, record: logging.LogRecord) -> None:
        meta = getattr(record, "metadata", None)
        if isinstance(meta, dict):
            self.on_event(meta, getattr(record, "payload", None))


@contextlib.contextmanager
def capture_trace(on_event: Callable[[dict[str, Any], str | None], None]) -> Iterator[None]:
    """Every structured-trace event of the block, in-process: ``on_event(metadata, payload)``.

    torch emits structured events only while the trace logger has a handler, so adding ours turns
    them on (no TORCH_TRACE needed) and removing it turns them off again.
    """
    log = logging.getLogger(TRACE_LOGGER)
    handler = _TraceHandler(on_event)
    old_level, old_propagate = log.level, log.propagate
    log.setLevel(logging.DEBUG)
    log.propagate = False
    log.addHandler(handler)
    try:
        yield
    finally:
        log.removeHandler(handler)
        log.setLevel(old_level)
        log.propagate = old_propagate


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
