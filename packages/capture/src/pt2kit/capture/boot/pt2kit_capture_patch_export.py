"""Patch: ``torch.export.export``, as the script calls it: an export that raises (a data-dependent branch,
an op it cannot trace) has no graph yet, so no model record; it gets a line in ``p<pid>/exports.ndjson``
(the exception, the script's line that called it), and the parent a `crash` record of stage ``export``
saying so, never a silent "no graph was compiled".

Runs inside the user's interpreter: stdlib + torch. Guarantees: export gets the same arguments, its result
or exception passes unchanged; a call from torch's own code (``torch.onnx.export`` trying one export
strategy after another) is not the script's and is not recorded. Not guaranteed: a line for an export
that succeeds (its graph is recorded where it is compiled: ``pt2kit_capture_patch_aoti``), nor for one
in a process of a rank ``--rank`` does not keep.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any

import pt2kit_capture_contract as contract
import pt2kit_capture_manifest as manifest
import pt2kit_capture_process as process


def patch(module: Any) -> None:
    original = getattr(module, "export", None)
    if original is None or getattr(original, "_pt2kit_capture", False):
        return
    torch_dir = os.path.dirname(os.path.dirname(os.path.abspath(module.__file__)))

    @functools.wraps(original)
    def export(*args: Any, **kwargs: Any) -> Any:
        try:
            return original(*args, **kwargs)
        except Exception as e:
            _failed(e, sys._getframe(1), torch_dir)
            raise

    export._pt2kit_capture = True
    process.replace(module, "export", export)


def _failed(e: BaseException, caller: Any, torch_dir: str) -> None:
    try:
        file = os.path.abspath(caller.f_code.co_filename)
        if file.startswith(torch_dir + os.sep) or not process.kept(process.rank()):
            return
        line = {"exception": type(e).__name__, "message": manifest.exception_line(e).partition(": ")[2],
                "source": f"{file}:{caller.f_lineno}", "function": caller.f_code.co_name, "rank": process.rank()}
        manifest.add_line(contract.EXPORTS, line)
    except Exception:
        pass
