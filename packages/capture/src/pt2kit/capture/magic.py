"""``%load_ext pt2kit.capture``, then a ``%%pt2kit [TOOL [ARGS...]]`` cell: the cell's code run in the kernel
(its variables the kernel's, as any cell) under ``with pt2kit.capture() as cap:``. The cell shows the
records, or with a TOOL (kdiff, minify, guardscan, reportgen, fxcheck) that tool's records on them, as
``cap.kdiff(*ARGS)`` runs it, or with ``triage [--out DIR]`` (0.19) triage's bug report (``cap.triage()``);
``_pt2kit`` in the kernel's namespace holds the capture (``_pt2kit.records``).

Guarantees: the cell is compiled as IPython compiles a cell (its lines are the cell's, in tracebacks and
in the records' ``source``); an exception it raises is the cell's (shown as without the magic), and the
capture's records, a `crash` for it included, are kept in ``_pt2kit`` all the same. A bad TOOL is one
line before the cell runs.
"""

from __future__ import annotations

import shlex
from typing import Any

from .inprocess import capture
from .results import TOOLS

NAME = "_pt2kit"  # the kernel's name for the last cell's capture


def pt2kit(line: str, cell: str, shell: Any) -> Any:
    """The ``%%pt2kit`` cell magic: run ``cell`` under capture, then the tool ``line`` names on its records."""
    from IPython.core.error import UsageError  # IPython shows it as one line, no traceback

    args = shlex.split(line)
    if args and args[0] not in (*TOOLS, "triage"):
        raise UsageError(f"%%pt2kit {args[0]}: expected nothing or a tool: {', '.join(TOOLS)}, triage")
    source = shell.transform_cell(cell)
    # a name linecache knows, as a cell's; numbered as the cell running (its result's number: the shell's
    # count is the next cell's by now), so its graphs' labels say In[N]
    running = getattr(getattr(shell, "displayhook", None), "exec_result", None)
    number = getattr(running, "execution_count", None) or shell.execution_count
    code = compile(source, shell.compile.cache(source, number), "exec")
    cap = capture()
    shell.user_ns[NAME] = cap
    with cap:
        exec(code, shell.user_ns)
    if args[:1] == ["triage"]:  # its bug report shown; the folder and repro on it (_pt2kit's .triage() again)
        return cap.records.triage(*args[1:])
    return cap.records.run(*args) if args else cap.records


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext pt2kit.capture``: registers ``%%pt2kit``."""
    ipython.register_magic_function(lambda line, cell: pt2kit(line, cell, ipython), "cell", "pt2kit")
