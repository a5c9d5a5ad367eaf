"""The private torch APIs the in-process capture (:mod:`.inprocess`) and the run check's child (:mod:`.runs`)
use, each behind one small function; the boot's own are in ``boot/pt2kit_capture_torchapi.py``. Imported only
where torch is imported already (once the block starts; in the check's child)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any


def compiled_codes() -> dict[int, tuple[Any, int]]:
    """id -> (code, its cache entries now) of each code Dynamo compiled here (the tracker torch._dynamo.reset reads)."""
    from torch._dynamo import convert_frame, eval_frame

    codes = [c for c in (ref() for ref in list(convert_frame.input_codes.seen)) if c is not None]
    return {id(c): (c, len(eval_frame._debug_get_cache_entry_list(c))) for c in codes}


def forget_compiled(code: Any) -> None:
    """Drop what Dynamo compiled for ``code``: its next call compiles it again (torch._dynamo.reset, one code)."""
    from torch._dynamo.eval_frame import reset_code

    reset_code(code)


def start_trace(folder: Path) -> Any:
    """torch's structured trace (what TORCH_TRACE turns on at import, tlparse's and guardscan's input) also
    written into ``folder`` from now on: one more handler on torch's trace logger, as torch adds its own;
    a trace the user turned on keeps being written. The token is for :func:`stop_trace`."""
    from torch._logging._internal import LazyTraceHandler, TorchLogsFormatter, trace_log

    handler = LazyTraceHandler(str(folder))
    handler.setFormatter(TorchLogsFormatter(trace=True))
    token = (handler, trace_log.level, trace_log.propagate)
    trace_log.setLevel(logging.DEBUG)
    trace_log.propagate = False
    trace_log.addHandler(handler)
    return token


def stop_trace(token: Any) -> None:
    """The handler :func:`start_trace` added removed and its file closed; the logger's level as it was."""
    from torch._logging._internal import trace_log

    handler, level, propagate = token
    trace_log.removeHandler(handler)
    handler.close()
    trace_log.setLevel(level)
    trace_log.propagate = propagate


def fake_run(fn: Any, inputs: Any) -> Any:
    """``fn(inputs)`` with every input tensor a fake one, under torch's FakeTensorMode: the shape and dtype
    propagation (meta kernels, decompositions) Dynamo's example values come from, with no values computed.
    Tensors ``fn`` holds itself (a module's parameters) are taken as fake where they meet (allowed)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils._pytree import tree_map_only

    mode = FakeTensorMode(allow_non_fake_inputs=True)
    fake = tree_map_only(torch.Tensor, mode.from_tensor, inputs)
    with mode:
        return fn(fake)
