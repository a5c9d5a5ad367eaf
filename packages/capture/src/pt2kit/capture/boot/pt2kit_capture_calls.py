"""A compiled graph's calls, watched: the first call that raises gives its graph one more manifest line
(:func:`pt2kit_capture_manifest.failed`: ``stage`` "run", "aoti-load" or "aoti-run", ``call`` the call's
number, ``error``; ``phase`` "backward" where the backward of that call raised:
:mod:`pt2kit_capture_backward`), so the parent's
`crash` record names the graph, not only the script's exit. Where that call's inputs are not the ones
the graph's model file holds (a later call; a graph ``--graphs failing`` had not kept since its backend
returned), the line gets a model file of its own, with the inputs that call got.

Runs inside the user's interpreter: stdlib + torch. Guarantees: the compiled code gets the same
arguments and its result or exception passes unchanged; a call costs one more Python frame (a counter
and a try); a failure of ours is swallowed. Dynamo's graph is held as long as its compiled code is
(to write a later call's model file). Not guaranteed: a failing call's inputs as they were before it
(they are written as they are when it raised: an in-place update the compiled code made first stays);
AOT Inductor's run-time inputs once the script dropped its exported program (then its line names the
exported program's example inputs, and the call).
"""

from __future__ import annotations

import functools
import weakref
from typing import Any

import pt2kit_capture_backward as backward
import pt2kit_capture_check as check
import pt2kit_capture_manifest as manifest
import pt2kit_capture_process as process
import pt2kit_capture_running as running
import pt2kit_capture_torchapi as api

_LOADED: Any = weakref.WeakKeyDictionary()  # an AOT Inductor package's loaded model -> its state


def watch(fn: Any, line: dict[str, Any], gm: Any, checked: Any = None) -> Any:
    """``fn`` (what the backend returned for ``gm``, the graph of ``line``), its first failing call recorded;
    with ``checked`` (--check's :class:`pt2kit_capture_check.Checked` of it) its backward's gradients judged."""
    if not callable(fn):
        return fn
    import torch

    state = {"calls": 0, "failed": False, "backward_failed": False, "line": line, "gm": gm,
             "check": None if checked is None else check.CheckedBackward(checked)}

    def compiled(*args: Any, **kwargs: Any) -> Any:
        state["calls"] += 1
        call = state["calls"]
        token = running.enter(line, call, "forward")
        try:
            out = fn(*args, **kwargs)
        except Exception as e:
            if not state["failed"]:
                state["failed"] = True
                manifest.failed(line, gm, list(args), call, e, "run")
            raise
        finally:
            running.leave(token)
        if torch.is_grad_enabled():  # its backward runs later, from loss.backward(): noted with this call
            backward.watch(out, list(args), state, call)
        return out

    return compiled


def watch_loaded(runner: Any, line: dict[str, Any], program: Any) -> None:
    """An AOT Inductor package's loaded model (``aoti_load_package``'s result), its first failing call
    recorded as ``line``'s graph failing at "aoti-run", with that call's inputs where ``program()`` (a
    weak reference) still gives the exported program. Python looks ``__call__`` up on the class: the
    class's is wrapped once, and calls of a model we did not load pass straight through."""
    try:
        cls = type(runner)
        original = cls.__call__
        if not getattr(original, "_pt2kit_capture", False):

            @functools.wraps(original)
            def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
                state = _LOADED.get(self)
                if state is None:
                    return original(self, *args, **kwargs)
                state["calls"] += 1
                token = running.enter(state["line"], state["calls"], None, "aoti-run")
                try:
                    return original(self, *args, **kwargs)
                except Exception as e:
                    if not state["failed"]:
                        state["failed"] = True
                        _loaded_failed(state, args, kwargs, e)
                    raise
                finally:
                    running.leave(token)

            __call__._pt2kit_capture = True
            process.replace(cls, "__call__", __call__)
        _LOADED[runner] = {"calls": 0, "failed": False, "line": line, "program": program}
    except Exception:
        pass


def _loaded_failed(state: dict[str, Any], args: Any, kwargs: Any, e: BaseException) -> None:
    """The loaded package's call raised: its graph's line at "aoti-run", with a model file of the exported
    graph on the values of this call (the state dict's, then these inputs) where the program is there."""
    gm, flat, names = None, [], {}
    try:
        program = state["program"]()
        if program is not None:
            gm, flat, names = api.exported_graph(program, (args, kwargs))
    except Exception:
        gm = None
    manifest.failed(state["line"], gm, flat, state["calls"], e, "aoti-run", own=gm is not None, names=names)
