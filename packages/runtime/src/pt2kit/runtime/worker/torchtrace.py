"""torch's structured trace, in-process: what ``TORCH_TRACE`` writes and tlparse reads.

The ``torch.__trace`` logger is the long-lived hook (torch 2.4 to 2.13): torch emits structured
events only while that logger has a handler, so adding one turns them on for a block, with no
environment variable, and removing it turns them off again. Importing this module does not import
torch.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

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
