"""pt2kit capture's boot: the only pt2kit code that runs inside the user's program (sitecustomize
starts it in every Python process of the command). This module is its start and exit.

Stdlib + torch only, in the user's own interpreter (it may have neither pt2kit nor msgspec); the
boot's modules import each other by file name from this folder, in layers: each imports only the
layers below it (none above, none in a circle: ``tests/test_import_graph.py`` fails on one). Top down:

- ``sitecustomize``, which imports this one; ``pt2kit_capture_boot`` (here): whether this process hooks
  torch (``PT2KIT_CAPTURE_DIR`` set), the import hook installed, ``exit.json`` at exit;
  :func:`attach`/:func:`detach` (``with pt2kit.capture()``, in the user's own process) install and
  remove the same hooks around a block;
- ``pt2kit_capture_hook``: a ``sys.meta_path`` finder that waits for the script to import torch, then
  installs the patches, each once its torch module is imported;
- the patches, one a file: ``pt2kit_capture_patch_compile`` (torch.compile's mode/options),
  ``pt2kit_capture_patch_dynamo`` (every Dynamo backend, through ``wrap_backend_debug``: the graph's
  line prepared, the backend's result watched), ``pt2kit_capture_patch_aoti`` (``aoti_compile_and_package``
  and ``aoti_load_package``), ``pt2kit_capture_patch_ddp`` (DDPOptimizer's real inputs),
  ``pt2kit_capture_patch_export`` (a ``torch.export.export`` the script called that raised);
- ``pt2kit_capture_calls`` (a compiled call's first failure, its graph named), over
  ``pt2kit_capture_backward`` (the same for its compiled backward, run from ``loss.backward()``) and
  ``pt2kit_capture_check`` (``--check nan|accuracy``: each call judged against eager on copies, and its
  backward's gradients; the first failing call's inputs written);
- ``pt2kit_capture_manifest``: a graph's manifest line, its files written, the line appended (also the
  line of a call that failed); ``pt2kit_capture_running``: the call running now, in a mapped file a
  signal cannot take;
- the model file: ``pt2kit_capture_write`` (its code), over ``pt2kit_capture_tensors`` and
  ``pt2kit_capture_hops`` (tensors as expressions; what FX's codegen cannot write), over
  ``pt2kit_capture_values``, ``pt2kit_capture_code`` and ``pt2kit_capture_torchapi`` (every private torch
  API used, each behind one function);
- ``pt2kit_capture_process``: this process's rank, scratch directory, markers and the patches made
  (:func:`pt2kit_capture_process.replace`, which :func:`detach` undoes);
- leaves: ``pt2kit_capture_contract`` (the env names, defaults and manifest line the parent reads),
  ``pt2kit_capture_userfile`` (whose code a file is), ``pt2kit_capture_backend`` (a backend as a record
  names it) and ``pt2kit_portable`` (pt2kit's portable layer, copied beside this folder).

A boot module imported inside a function (here, in sitecustomize and in the hook; pt2kit_portable in
torchapi) is so for start-up cost only: a process without a scratch dir, or that never imports torch,
loads nothing more.

What it touches: ``sys.meta_path`` (one finder, first), the loaders of torch's modules (their
``exec_module``, wrapped once), ``wrap_backend_debug``, ``aoti_compile_and_package``, ``torch.export.export``,
``DDPOptimizer.compile_fn`` and torch.compile's backend wrapper classes' ``__init__`` (each wrapped,
calling the original), an attribute ``_pt2kit_compile`` on those wrapper objects; under ``--check`` the
callable a backend returns (wrapped: same arguments, same result); an ``atexit``
handler; the ``backward`` of AOTAutograd's Function class of each compiled graph called with gradients
(wrapped once, calling the original); ``faulthandler`` turned on into ``p<pid>/fault`` at a process's
first compiled call where the script had not turned it on (the fatal signal still kills it, same status);
files under ``PT2KIT_CAPTURE_DIR`` only (``p<pid>/``, ``markers``,
the run's budget ``run-bytes``).

Guarantees: without ``PT2KIT_CAPTURE_DIR`` nothing is installed (a process of a rank not kept is hooked,
its graphs counted in ``markers``, never recorded);
a script that never imports torch never has it imported; the user's backend gets the same graph and
inputs and its result or exception passes unchanged; any failure of ours is swallowed (a graph's is
named in its line's ``capture_error``). It never changes the graph, the inputs, torch's settings, the
script's stdout/stderr, signals (faulthandler's report of a fatal one lets it kill as before), fds or exit
code, and never reads the network. Not guaranteed: the
time a graph's writing takes (before the backend runs), nor its disk (the values budgets bound it);
that a process killed mid-write leaves a complete line (the parent skips a broken one and counts it).
"""

from __future__ import annotations

import atexit
import json
import os
import sys

import pt2kit_capture_contract as contract
import pt2kit_capture_process as process


def start() -> None:
    """Called by sitecustomize at interpreter start: cheap, imports no torch. Every process hooks torch,
    also one of a rank --rank does not keep (its graphs are counted, not recorded: the parent can say
    what --rank dropped). Its :func:`pt2kit_capture_process.mark` lines tell the parent that the boot
    loaded here (``boot``), that it hooked torch (``hooked``; ``unhooked``: torch was imported, not
    through our hook)."""
    if not os.environ.get(contract.ENV_DIR):
        return
    import pt2kit_capture_hook as hook  # here, not at the top: a process without a scratch dir loads no more

    process.mark("boot")
    atexit.register(_at_exit)
    sys.meta_path.insert(0, hook.AfterImport({"torch": hook.torch_imported}))
    if "torch" in sys.modules:  # a .pth file imported it before sitecustomize ran: hook it now
        try:
            hook.torch_imported(sys.modules["torch"])
        except Exception as e:
            hook.failed(e)


def _at_exit() -> None:
    import pt2kit_capture_hook as hook

    if "torch" in sys.modules and not hook.HOOKED:
        process.mark("unhooked")
    if process.kept():
        _write_exit()


def _write_exit() -> None:
    write_exit(getattr(sys, "last_exc", None) or getattr(sys, "last_value", None))


def write_exit(exc: BaseException | None) -> None:
    """``p<pid>/exit.json``: the exception the program (or the captured block) ended with."""
    if exc is None:
        return
    try:
        where = process.pdir()
        where.mkdir(parents=True, exist_ok=True)
        (where / contract.EXIT).write_text(json.dumps({"exception": type(exc).__name__, "message": str(exc)}))
    except Exception:
        pass


def attach(torch: object, namer: object = None) -> None:
    """The in-process start (``with pt2kit.capture()``, torch imported already, the PT2KIT_CAPTURE_*
    variables set by the caller): the finder and patches :func:`start` installs, from a clean slate, each
    patch's old value kept (:func:`pt2kit_capture_process.replace`); ``namer``: a file's cell name
    (``In[3]``) in a kernel, or None (:func:`pt2kit_capture_process.cell_of`)."""
    import pt2kit_capture_hook as hook

    _fresh()
    process.ATTACHED[:] = [True]
    process.NAMER[:] = [namer] if namer is not None else []
    process.mark("boot")
    sys.meta_path.insert(0, hook.AfterImport({}))
    hook.torch_imported(torch)


def detach() -> None:
    """The in-process end: every patch put back (newest first), the finder out, this process's mapped
    marker and faulthandler report file closed (faulthandler off where the capture turned it on)."""
    import pt2kit_capture_hook as hook
    import pt2kit_capture_running as running

    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, hook.AfterImport)]
    process.ATTACHED.clear()
    process.NAMER.clear()
    process.restore()
    running.release()
    _fresh()


def _fresh() -> None:
    """The per-run state of the boot's modules as a new process has it (a second capture in one process
    starts over: its own scratch dir, budget, sequence numbers)."""
    import pt2kit_capture_hook as hook
    import pt2kit_capture_manifest as manifest
    import pt2kit_capture_patch_aoti as aoti
    import pt2kit_capture_running as running

    hook.HOOKED.clear()
    manifest._STATE.update(first=False, referenced=set(), run=None, seq=0)
    running._COMPILES[0] = 0
    aoti._PACKAGES.clear()
