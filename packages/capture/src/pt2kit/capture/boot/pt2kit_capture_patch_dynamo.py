"""Patch: ``torch._dynamo.repro.after_dynamo.wrap_backend_debug``, the function ``get_compiler_fn``
calls for every torch.compile and ``torch._dynamo.optimize`` backend, hands it a :class:`Capturing`
backend: the graph's line and files written (:func:`prepare`: who compiled it, with what, where; a DDP
bucket's graph with the frame's real inputs, ``pt2kit_capture_patch_ddp``), then the user's backend called.

Runs inside the user's interpreter: stdlib + torch. Guarantees: the user's backend gets the same graph
and inputs, every attribute Dynamo reads off it is its own, its result or exception passes unchanged
(what it returned is called through one more frame, :func:`pt2kit_capture_calls.watch`). Not guaranteed:
a record of a graph whose backend was made in a captured block (``with pt2kit.capture()``) and is called
after the block: the backend then runs alone.
"""

from __future__ import annotations

import os
from typing import Any

import pt2kit_capture_backend as backends
import pt2kit_capture_calls as calls
import pt2kit_capture_check as check
import pt2kit_capture_contract as contract
import pt2kit_capture_manifest as manifest
import pt2kit_capture_patch_ddp as ddp
import pt2kit_capture_process as process
import pt2kit_capture_torchapi as api
from pt2kit_capture_userfile import call_site

from pt2kit_portable import autocast_now, exception_line


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
    process.replace(module, "wrap_backend_debug", wrap_backend_debug)


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
            line = prepare(backend, self._pt2kit_name, gm, example_inputs)
        except Exception:
            line = None
        watch = check.watch(gm, line)  # --check: the graph copied before the backend may rewrite it
        out = manifest.compile_through(line, lambda: backend(gm, example_inputs, **kwargs))
        # its compiled code's first failing call is the graph's too (a runtime error names the graph)
        out = out if line is None else calls.watch(out, line, gm, watch)
        return out if watch is None or not callable(out) else watch.wrap(out)


def prepare(backend: Any, name: Any, gm: Any, args: Any) -> dict[str, Any] | None:
    """The graph's manifest line, its model file and tensors written (before the backend runs: a backend
    that runs the graph while compiling may change its inputs in place)."""
    import torch

    label, code, in_script = backends.describe(backend, name, backend_name(backend, name))
    line = manifest.new_line(label)
    if not process.kept(line["rank"]):  # a rank --rank does not keep: counted (the parent says so), not recorded
        process.mark(f"skipped {line['rank']}")
        return None
    line.update(backend_code=code, backend_in_script=in_script)
    compile_args = getattr(backend, "_pt2kit_compile", None) or {}
    mode = compile_args.get("mode")
    line.update(mode=None if mode in (None, "default") else str(mode),
                dynamic=compile_args.get("dynamic", getattr(backend, "dynamic", None)))
    try:
        line["options"] = {str(k): repr(v) for k, v in (compile_args.get("options") or {}).items()}
        if label == "inductor":  # what mode stands for, read here where torch is: the mode then travels
            line["mode_options"] = {str(k): repr(v) for k, v in api.mode_options(line["mode"], line["dynamic"]).items()}
            # where its autotuning and FX graphs are cached: a tool compiling the graph again reads them back there
            line["cache_dir"] = api.inductor_cache_dir()
        line["compile_id"] = api.compile_id(gm)
        frame = api.frame_code(gm)
        if frame:
            line["function"], line["source"] = frame[0], f"{os.path.abspath(frame[1])}:{frame[2]}"
        line["called_from"] = call_site()
        line["cell"] = process.cell_of(line["source"], line["called_from"])
        line["grad"] = torch.is_grad_enabled() and any(
            isinstance(a, torch.Tensor) and a.requires_grad for a in args)
        # what Dynamo compiled it under (its guards hold it): the graph's ops give their dtypes only under it
        line["autocast"] = autocast_now()
        manifest.record(line, gm, ddp.real_inputs(gm, list(args)), "torch.compile handed its backend")
    except Exception as e:
        line["capture_error"] = exception_line(e)
    return line


def backend_name(backend: Any, name: Any) -> str:
    if isinstance(name, str):
        return name
    for attr in ("compiler_name", "__name__"):
        value = getattr(backend, attr, None)
        if isinstance(value, str):
            return value
    return type(backend).__name__
