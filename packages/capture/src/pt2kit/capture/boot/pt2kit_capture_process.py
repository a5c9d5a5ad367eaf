"""This process as the capture boot sees it, the layer every other boot module stands on: whether it records
(its rank, the one ``PT2KIT_CAPTURE_RANK`` keeps), its directory in the scratch dir (``p<pid>/``), its
lines in ``markers``, and every patch the boot makes (:func:`replace`, undone by :func:`restore` at the
end of an in-process capture).

Runs inside the user's interpreter: stdlib only, imports no other boot module but the contract (the
boot's layers go contract -> process -> values and code -> manifest -> calls -> patches -> hook -> boot).
Guarantees: nothing here raises into the script but :func:`pdir` (no scratch dir: the caller is
recording, so it has one) and :func:`replace` (the ``setattr`` of a patch, which the patch's caller
guards); a ``markers`` line is one ``O_APPEND`` write, whole when every process writes at once. Not
guaranteed: the rank before torch.distributed is up, where a launcher sets no ``RANK`` (``mp.spawn``):
it is then taken as 0.
"""

from __future__ import annotations

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


# while attached in-process: (owner, attribute, what its own __dict__ held there, MISSING where it inherited
# it) for each patch, oldest first; a script's process keeps none (its patches last until it ends, and a
# reference to each compiled graph's Function class would keep it alive)
UNDO: list[tuple[object, str, object]] = []
ATTACHED: list[bool] = []
MISSING = object()


def replace(owner: object, name: str, new: object) -> None:
    """``owner.name = new`` for a patch; while attached, the value it replaces kept (its own, a descriptor as
    it was), so :func:`restore` puts it back."""
    if ATTACHED:
        UNDO.append((owner, name, vars(owner).get(name, MISSING)))
    setattr(owner, name, new)


def restore() -> None:
    """Every patch :func:`replace` kept put back, newest first (one that cannot be is left)."""
    while UNDO:
        owner, name, old = UNDO.pop()
        try:
            if old is MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, old)
        except Exception:
            pass


# while attached in a kernel: the kernel's name for a cell's file ("In[3]"; None for any other file), from the
# capture that attached (the boot itself never imports IPython)
NAMER: list[object] = []


def cell_of(*sites: str | None) -> str | None:
    """``In[3]:5``: the first of ``sites`` ("FILE:LINE") in a cell the kernel names; None where none is (a
    script, no kernel). Never raises: a graph is recorded without it."""
    for site in sites if NAMER else ():
        file, _, line = (site or "").rpartition(":")
        try:
            name = NAMER[0](file)  # type: ignore[operator]
        except Exception:
            name = None
        if name:
            return f"{name}:{line}"
    return None
