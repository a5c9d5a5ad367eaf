"""Patch: ``torch._dynamo.repro.after_dynamo.wrap_backend_debug``, the function ``get_compiler_fn``
calls for every torch.compile and ``torch._dynamo.optimize`` backend, hands it a :class:`Capturing`
backend: the graph's line and files written, then the user's backend called.

Runs inside the user's interpreter: stdlib + torch. Guarantees: the user's backend gets the same graph
and inputs, every attribute Dynamo reads off it is its own, its result or exception passes unchanged
(what it returned is called through one more frame, :func:`pt2kit_capture_calls.watch`).
"""

from __future__ import annotations

import os
from typing import Any

import pt2kit_capture_boot as boot
import pt2kit_capture_calls as calls
import pt2kit_capture_check as check
import pt2kit_capture_contract as contract
import pt2kit_capture_manifest as manifest


def patch(module: Any) -> None:
    original = module.wrap_backend_debug
    if getattr(original, "_pt2kit_capture", False):
        return

    def wrap_backend_debug(unconfigured_compiler_fn: Any, *args: Any, **kwargs: Any) -> Any:
        name = args[0] if args else kwargs.get("compiler_name")
        try:
            fn = Capturing(unconfigured_compiler_fn, name)
        except Exception:
            fn = unconfigured_compiler_fn
        return original(fn, *args, **kwargs)

    wrap_backend_debug._pt2kit_capture = True
    boot.replace(module, "wrap_backend_debug", wrap_backend_debug)


class Capturing:
    """The user's backend, recording each graph it is handed. Dynamo reads attributes off a backend
    (``compiler_name``, ``get_compiler_config``, ``reset``...): every one we do not set is the backend's;
    ``_torchdynamo_orig_backend`` leads Dynamo's unwrapping to the backend itself."""

    def __init__(self, backend: Any, name: Any) -> None:
        self._torchdynamo_orig_backend = backend
        self._pt2kit_name = name

    def __getattr__(self, name: str) -> Any:
        backend = self.__dict__.get("_torchdynamo_orig_backend")
        if backend is None:  # copy/pickle look attributes up before __init__ ran
            raise AttributeError(name)
        return getattr(backend, name)

    def __call__(self, gm: Any, example_inputs: Any, **kwargs: Any) -> Any:
        backend = self._torchdynamo_orig_backend
        if not os.environ.get(contract.ENV_DIR):  # made in a captured block that has ended: the backend alone
            return backend(gm, example_inputs, **kwargs)
        try:
            line = manifest.prepare(backend, self._pt2kit_name, gm, example_inputs)
        except Exception:
            line = None
        watch = check.watch(gm, line)  # --check: the graph copied before the backend may rewrite it
        out = manifest.compile_through(line, lambda: backend(gm, example_inputs, **kwargs))
        # its compiled code's first failing call is the graph's too (a runtime error names the graph)
        out = out if line is None else calls.watch(out, line, gm, watch)
        return out if watch is None or not callable(out) else watch.wrap(out)
