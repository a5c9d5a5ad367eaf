"""Patch: ``torch._inductor.aoti_compile_and_package(exported_program, ...)``: the exported program's
graph is recorded as a graph of backend "aoti" (compile id ``aoti/N``, the Nth in this process) before
AOT Inductor runs.

Runs inside the user's interpreter: stdlib + torch. Guarantees: AOT Inductor gets the same arguments and
its result or exception passes unchanged.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import pt2kit_capture_manifest as manifest


def patch(module: Any) -> None:
    """Wrap ``aoti_compile_and_package`` once."""
    import functools

    import pt2kit_capture_torchapi as api

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
        return manifest.compile_through(line, lambda: original(exported_program, *args, **kwargs))

    aoti_compile_and_package._pt2kit_capture = True
    module.aoti_compile_and_package = aoti_compile_and_package
