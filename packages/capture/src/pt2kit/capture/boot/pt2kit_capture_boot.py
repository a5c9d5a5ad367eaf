"""pt2kit capture's boot: the only pt2kit code that runs inside the user's program (sitecustomize
starts it in every Python process of the command). This module is its start and exit.

Stdlib + torch only, in the user's own interpreter (it may have neither pt2kit nor msgspec); the
boot's modules import each other by file name from this folder:

- ``pt2kit_capture_boot`` (here): whether this process records (``PT2KIT_CAPTURE_DIR`` set, its rank the
  one ``PT2KIT_CAPTURE_RANK`` keeps), the import hook installed, ``exit.json`` at exit; each patch made
  through :func:`replace`, so :func:`attach`/:func:`detach` (``with pt2kit.capture()``, in the user's
  own process) install and remove the same hooks around a block;
- ``pt2kit_capture_hook``: a ``sys.meta_path`` finder that waits for the script to import torch, then
  installs the patches, each once its torch module is imported;
- ``pt2kit_capture_patch_compile`` (torch.compile's mode/options), ``pt2kit_capture_patch_dynamo``
  (every Dynamo backend, through ``wrap_backend_debug``), ``pt2kit_capture_patch_aoti``
  (``aoti_compile_and_package``), ``pt2kit_capture_patch_ddp`` (DDPOptimizer's real inputs), ``pt2kit_capture_patch_export``
  (a ``torch.export.export`` the script called that raised): one patch a file;
- ``pt2kit_capture_manifest``: a graph's manifest line, its model file and tensors written
  (``pt2kit_capture_write``, ``pt2kit_capture_tensors``, ``pt2kit_capture_values``, ``pt2kit_capture_code``),
  the line appended;
- ``pt2kit_capture_calls`` (a compiled call's first failure, its graph named), ``pt2kit_capture_backward``
  (the same for its compiled backward, run from ``loss.backward()``), ``pt2kit_capture_running`` (the call
  running now, in a mapped file a signal cannot take);
- ``pt2kit_capture_check`` (``--check nan|accuracy``: the backend's compiled callable wrapped, each call
  judged against eager on copies, and its backward's gradients) and ``pt2kit_capture_step`` (the first
  failing call's values written);
- ``pt2kit_capture_contract``: the env names, defaults and manifest line the parent reads;
  ``pt2kit_capture_torchapi``: every private torch API used, each behind one function.

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
from pathlib import Path

import pt2kit_capture_contract as contract


def env_int(name: str) -> int | None:
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return None


def rank() -> int | None:
    """This process's rank: torch.distributed's once a process group is up (mp.spawn's workers have no
    RANK in their environment, only the rank they pass init_process_group), else RANK, else None."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_rank())
    except Exception:
        pass
    return env_int("RANK")


def kept(r: int | None = None) -> bool:
    """Whether this process records: its rank (``r``, else RANK, else 0) is the one PT2KIT_CAPTURE_RANK
    keeps. Asked at start (RANK) and again at each graph (the rank torch.distributed knows by then)."""
    want = os.environ.get(contract.ENV_RANK, "0").strip()
    if want == "all":
        return True
    mine = (r if r is not None else env_int("RANK")) or 0
    try:
        return int(want) == mine
    except ValueError:
        return mine == 0


def pdir() -> Path:
    """This process's directory in the scratch dir (the pid read now: a forked child has its own)."""
    return Path(os.environ[contract.ENV_DIR]) / f"p{os.getpid()}"


def start() -> None:
    """Called by sitecustomize at interpreter start: cheap, imports no torch. Every process hooks torch,
    also one of a rank --rank does not keep (its graphs are counted, not recorded: the parent can say
    what --rank dropped). Its :func:`mark` lines tell the parent that the boot loaded here (``boot``),
    that it hooked torch (``hooked``; ``unhooked``: torch was imported, not through our hook)."""
    if not os.environ.get(contract.ENV_DIR):
        return
    import pt2kit_capture_hook as hook

    mark("boot")
    atexit.register(_at_exit)
    sys.meta_path.insert(0, hook.AfterImport({"torch": hook.torch_imported}))
    if "torch" in sys.modules:  # a .pth file imported it before sitecustomize ran: hook it now
        try:
            hook.torch_imported(sys.modules["torch"])
        except Exception:
            pass


HOOKED: list[bool] = []  # [True] once torch is hooked in this process


def mark(what: str) -> None:
    """``<pid> <what>`` appended to the scratch dir's ``markers`` (one short O_APPEND write: whole even
    when every process of the command writes at once), for the parent's account of what happened."""
    try:
        fd = os.open(os.path.join(os.environ[contract.ENV_DIR], contract.MARKERS),
                     os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{os.getpid()} {what}\n".encode())
        finally:
            os.close(fd)
    except Exception:
        pass


def _at_exit() -> None:
    if "torch" in sys.modules and not HOOKED:
        mark("unhooked")
    if kept():
        _write_exit()


def _write_exit() -> None:
    write_exit(getattr(sys, "last_exc", None) or getattr(sys, "last_value", None))


def write_exit(exc: BaseException | None) -> None:
    """``p<pid>/exit.json``: the exception the program (or the captured block) ended with."""
    if exc is None:
        return
    try:
        where = pdir()
        where.mkdir(parents=True, exist_ok=True)
        (where / contract.EXIT).write_text(json.dumps({"exception": type(exc).__name__, "message": str(exc)}))
    except Exception:
        pass


# while attached in-process: (owner, attribute, what its own __dict__ held there, MISSING where it inherited
# it) for each patch, oldest first; a script's process keeps none (its patches last until it ends, and a
# reference to each compiled graph's Function class would keep it alive)
UNDO: list[tuple[object, str, object]] = []
ATTACHED: list[bool] = []
MISSING = object()


def replace(owner: object, name: str, new: object) -> None:
    """``owner.name = new`` for a patch; while attached, the value it replaces kept (its own, a descriptor as
    it was), so :func:`detach` puts it back."""
    if ATTACHED:
        UNDO.append((owner, name, vars(owner).get(name, MISSING)))
    setattr(owner, name, new)


def attach(torch: object) -> None:
    """The in-process start (``with pt2kit.capture()``, torch imported already, the PT2KIT_CAPTURE_*
    variables set by the caller): the finder and patches :func:`start` installs, from a clean slate."""
    import pt2kit_capture_hook as hook

    _fresh()
    ATTACHED[:] = [True]
    mark("boot")
    sys.meta_path.insert(0, hook.AfterImport({}))
    hook.torch_imported(torch)


def detach() -> None:
    """The in-process end: every patch put back (newest first), the finder out, this process's mapped
    marker and faulthandler report file closed (faulthandler off where the capture turned it on)."""
    import pt2kit_capture_hook as hook
    import pt2kit_capture_running as running

    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, hook.AfterImport)]
    ATTACHED.clear()
    while UNDO:
        owner, name, old = UNDO.pop()
        try:
            if old is MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, old)
        except Exception:
            pass
    running.release()
    _fresh()


def _fresh() -> None:
    """The per-run state of the boot's modules as a new process has it (a second capture in one process
    starts over: its own scratch dir, budget, sequence numbers)."""
    import pt2kit_capture_manifest as manifest
    import pt2kit_capture_patch_aoti as aoti
    import pt2kit_capture_running as running

    HOOKED.clear()
    manifest._STATE.update(first=False, referenced=set(), run=None, seq=0)
    running._COMPILES[0] = 0
    aoti._PACKAGES.clear()
