"""pt2kit capture's bootstrap: the parent puts this directory first on PYTHONPATH, so Python's ``site``
imports this file at start in the user's interpreter (and in every process it starts: torchrun ranks,
workers). It starts the capture (cheap: nothing happens until the script imports torch, and nothing
at all without PT2KIT_CAPTURE_DIR), then runs the ``sitecustomize`` this one shadows (the user's or
the distro's), as ``site`` would have.

Guarantees: stdlib only here; an error in the capture's start is swallowed; an error in the shadowed
sitecustomize is reported the way ``site`` reports it, and the program goes on.
"""

import os
import sys


def _start() -> None:
    try:
        import pt2kit_capture_boot

        pt2kit_capture_boot.start()
    except Exception:
        pass


def _chain() -> None:
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.realpath(__file__))
    rest = [p for p in sys.path if os.path.realpath(p or os.getcwd()) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    ours = sys.modules.get("sitecustomize")
    try:
        module = importlib.util.module_from_spec(spec)
        # it is the sitecustomize, as without capture: `import sitecustomize` finds it, during its run too
        # (site's import of this file re-reads sys.modules when it ends, so the user's stays there)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)
    except Exception as err:
        if ours is not None:
            sys.modules["sitecustomize"] = ours
        if sys.stderr is not None:
            sys.stderr.write(f"Error in sitecustomize; set PYTHONVERBOSE for traceback:\n{type(err).__name__}: {err}\n")


_start()
_chain()
