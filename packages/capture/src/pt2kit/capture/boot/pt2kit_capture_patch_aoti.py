"""Patch: ``torch._inductor.aoti_compile_and_package(exported_program, ...)``: the exported program's
graph is recorded as a graph of backend "aoti" (compile id ``aoti/N``, the Nth in this process) before
AOT Inductor runs; it failing is the graph failing at "aoti-compile". ``aoti_load_package(path)`` of a
package compiled here: its failing is the graph's "aoti-load", its loaded model's first failing call
the graph's "aoti-run" (``pt2kit_capture_calls``), with the inputs of that call where the exported
program is still there.

Runs inside the user's interpreter: stdlib + torch. Guarantees: AOT Inductor gets the same arguments and
its result or exception passes unchanged. Not guaranteed: a package's load and calls in a process other
than the one that compiled it (not recorded: the package's graph is this process's), nor a failing
call's inputs once the script dropped its exported program (the line names the call, with the exported
program's example inputs).
"""

from __future__ import annotations

import os
import sys
import weakref
from typing import Any

import pt2kit_capture_calls as calls
import pt2kit_capture_manifest as manifest
import pt2kit_capture_process as process
import pt2kit_capture_running as running
import pt2kit_capture_torchapi as api

# a package compiled here (its real path) -> its graph's line, and its exported program (weakly: the user's
# to free) whose graph a failing call's inputs are written with
_PACKAGES: dict[Any, tuple[dict[str, Any], Any]] = {}


def _key(path: Any) -> Any:
    """A package's path as one key (``package_path`` may also be a file object: then that object)."""
    try:
        return os.path.realpath(os.fspath(path))
    except TypeError:
        return id(path)


def patch(module: Any) -> None:
    """Wrap ``aoti_compile_and_package`` and ``aoti_load_package`` once."""
    import functools

    original = api.aoti_entry(module)
    if original is None or getattr(original, "_pt2kit_capture", False):
        return
    count = [0]

    @functools.wraps(original)
    def aoti_compile_and_package(exported_program: Any, *args: Any, **kwargs: Any) -> Any:
        line = None
        try:
            line = manifest.new_line("aoti")
            line["compile_id"], count[0] = f"aoti/{count[0]}", count[0] + 1
            caller = sys._getframe(1)
            line["function"] = caller.f_code.co_name
            line["source"] = f"{os.path.abspath(caller.f_code.co_filename)}:{caller.f_lineno}"
            options = kwargs.get("inductor_configs") or {}
            line["options"] = {str(k): repr(v) for k, v in options.items()}
            gm, flat, names = api.exported_graph(exported_program)
            manifest.record(line, gm, flat, "torch.export exported for AOT Inductor", names)
        except Exception as e:
            if line is not None:
                line["capture_error"] = manifest.exception_line(e)
        out = manifest.compile_through(line, lambda: original(exported_program, *args, **kwargs), "aoti-compile")
        if line is not None:
            try:
                _PACKAGES[_key(out)] = (line, weakref.ref(exported_program))
            except TypeError:
                _PACKAGES[_key(out)] = (line, lambda: None)
        return out

    aoti_compile_and_package._pt2kit_capture = True
    process.replace(module, "aoti_compile_and_package", aoti_compile_and_package)
    load = api.aoti_loader(module)
    if load is not None and not getattr(load, "_pt2kit_capture", False):
        process.replace(module, "aoti_load_package", _loading(load))


def _loading(original: Any) -> Any:
    import functools

    @functools.wraps(original)
    def aoti_load_package(path: Any, *args: Any, **kwargs: Any) -> Any:
        line, program = _PACKAGES.get(_key(path), (None, None))
        token = None if line is None else running.enter(line, 0, None, "aoti-load")  # a load that segfaults names it
        try:
            runner = original(path, *args, **kwargs)
        except Exception as e:
            if line is not None:
                manifest.failed(line, None, [], None, e, "aoti-load")
            raise
        finally:
            running.leave(token)
        if line is not None:
            calls.watch_loaded(runner, line, program)
        return runner

    aoti_load_package._pt2kit_capture = True
    return aoti_load_package
