"""pt2kit capture's bootstrap: the parent puts this directory first on PYTHONPATH, so Python's ``site``
imports this file at start in the user's interpreter (and in every process it starts: torchrun ranks,
workers). It starts the capture (cheap: nothing happens until the script imports torch, and nothing
at all without PT2KIT_CAPTURE_DIR), then runs the ``sitecustomize`` this one shadows (the user's or
the distro's), as ``site`` would have.

Guarantees: stdlib only here; an error in the capture's start is swallowed; an error in the shadowed
sitecustomize is reported the way ``site`` reports it, and the program goes on. Every Python that runs
the command parses this file, python2.7 too (a script that starts one): it is written in the syntax
Python 2 and 3 share (no annotations, no f-strings), and does nothing, silently, on Python 2; on a
Python 3 older than 3.10 it starts no capture (the boot is written for 3.10 and newer) and only runs
the shadowed sitecustomize. Not guaranteed: a shadowed sitecustomize runs under Python 2.
"""

import os
import sys


def _start():
    try:
        import pt2kit_capture_boot

        pt2kit_capture_boot.start()
    except Exception:
        pass


def _chain():
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
            # no f-string: Python 2 parses this file too
            sys.stderr.write("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n" + type(err).__name__
                             + ": " + str(err) + "\n")


# the user's Python, not pt2kit's (3.11): the boot is written for 3.10 and newer (zip(strict=)), the
# chain for 3.5 (importlib.util.module_from_spec)
if sys.version_info >= (3, 10):  # noqa: UP036
    _start()
if sys.version_info >= (3, 5):  # noqa: UP036
    _chain()
