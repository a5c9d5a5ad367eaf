"""The capture boot's import hook: waits for the script to import torch (``python -c 'print(1)'``
never imports it), then installs each patch once the torch module it patches is imported.

Runs inside the user's interpreter: stdlib only (torch is handed in, never imported here).
Guarantees: the finder finds nothing itself (the finders after it do); an error in a patch never
breaks the user's import; the patches are imported at torch's import, not at start. Not guaranteed: the
patches where a finder put before ours in ``sys.meta_path`` loads torch (then torch is not hooked, and
the parent is told ``unhooked``).
"""

from __future__ import annotations

import sys
from typing import Any

import pt2kit_capture_process as process

HOOKED: list[bool] = []  # [True] once torch is hooked in this process


class AfterImport:
    """A meta-path finder that runs ``then(module)`` once a named module has finished importing. It finds
    nothing itself: it asks the finders after it and wraps the found loader's ``exec_module``."""

    def __init__(self, hooks: dict[str, Any]) -> None:
        self.hooks = hooks

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        then = self.hooks.get(name)
        if then is None:
            return None
        spec = None
        for finder in [f for f in sys.meta_path if f is not self]:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                break
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        del self.hooks[name]
        original = loader.exec_module

        def exec_module(module: Any) -> None:
            original(module)
            try:
                then(module)
            except Exception as e:  # capture never breaks the user's import, but says why it kept nothing
                failed(e)

        loader.exec_module = exec_module
        return spec


def failed(e: BaseException) -> None:
    """A patch raised at torch's import: the parent is told ``hookfailed <type>: <message>`` (one line), so
    it names the error instead of guessing (a stale ``pt2kit_portable`` first on sys.path raised ImportError
    here, and capture said torch was imported before its hook)."""
    said = " ".join(f"{type(e).__name__}: {e}".split())[:300]
    process.mark(f"hookfailed {said}")


def torch_imported(torch: Any) -> None:
    """Torch is imported: each patch installed, now or once the torch module it patches is imported.
    The patches are imported here, not at the top: a process that never imports torch loads none."""
    import pt2kit_capture_patch_aoti as aoti
    import pt2kit_capture_patch_compile as compile_args
    import pt2kit_capture_patch_ddp as ddp
    import pt2kit_capture_patch_dynamo as dynamo
    import pt2kit_capture_patch_export as export
    import pt2kit_capture_torchapi as api

    for finder in sys.meta_path:  # hooked now (a .pth file may have imported torch before the finder was in)
        if isinstance(finder, AfterImport):
            finder.hooks.pop("torch", None)
    HOOKED.append(True)
    process.mark("hooked")
    for cls in api.compile_wrapper_classes(torch):
        compile_args.patch(cls)
    when_imported(api.AFTER_DYNAMO, dynamo.patch)
    when_imported(api.AOTI_MODULE, aoti.patch)
    when_imported(api.DDP_MODULE, ddp.patch)
    when_imported(api.EXPORT_MODULE, export.patch)


def when_imported(name: str, then: Any) -> None:
    if name in sys.modules:
        then(sys.modules[name])
        return
    for finder in sys.meta_path:
        if isinstance(finder, AfterImport):
            finder.hooks[name] = then
