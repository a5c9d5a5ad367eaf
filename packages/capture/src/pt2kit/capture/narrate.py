"""What capture says on stderr: a line per graph it wrote, the command's end, and the count."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from pt2kit.runtime.common.text import summary_line
from pt2kit.runtime.parent.narrate import Narrator as Base
from pt2kit.runtime.parent.pythonrun import python_run
from pt2kit.schema import Crash, Model
from pt2kit_portable import autocast_words

from .crashes import RUN_STAGES, exit_code


@dataclass(frozen=True)
class Summary:
    """How the command went: what :meth:`Narrator.finish` reports and turns into capture's exit code."""

    returncode: int
    compiled: int  # graphs the kept processes compiled
    kept: int  # of them, the ones --graphs kept (a model record each)
    processes: int  # processes that compiled any
    broken: int  # manifest lines a killed process left half written
    unreadable: tuple[str, ...] = ()  # whole manifest lines capture could not read (why, each): its own fault
    interrupted: bool = False
    # why nothing was kept, from the boot's markers: processes it loaded in, hooked torch in, found torch
    # imported past its hook in; and the ranks of the graphs --rank (``rank``) dropped
    booted: int = 0
    hooked: int = 0
    unhooked: int = 0
    hook_errors: tuple[str, ...] = ()  # the distinct errors capture's patches raised at torch's import
    skipped: tuple[int | None, ...] = ()
    rank: int | None = 0
    failed: int = 0  # --check: graphs a later call of failed (a model record each, of that call's values)
    traces: int = 0  # traces of processes that kept no graph, carried by the header (guardscan reads them)
    exports: int = 0  # torch.export.export calls of the script that raised (a crash record each, no graph)


class Narrator(Base):
    def on_model(self, m: Model) -> None:
        c = m.captured
        if c is None:
            return
        where = " ".join(x for x in (c.function, f"at {c.source}" if c.source else None) if x)
        if c.called_from and (c.source or "").rpartition(":")[0] != c.called_from.rpartition(":")[0]:
            where += f", called from {c.called_from}"  # a library's function (a wrapper): the user's line
        how = ", ".join(x for x in (c.backend, f"mode={c.mode}" if c.mode else None, "grad" if c.grad else None,
                                    f"under {autocast_words(m.autocast)}" if m.autocast else None) if x)
        line = f"{m.model}: {where or 'graph'} ({how or 'backend unknown'}), {len(m.inputs)} inputs"
        line += f", {m.parameters} parameter elements" if m.parameters else ""
        if c.check:  # --check failed a call of the graph; this record holds that call's values
            line += f"; call {c.step} failed --check {summary_line(c.check)}"
        self.say(line + (f"; its backend raised {summary_line(c.error)}" if c.error else ""))

    def on_crash(self, c: Crash) -> None:
        if c.model is not None and c.stage not in RUN_STAGES:  # the backend raised on it: its model record said so
            if c.signal:  # or the process died in its compiler: said nowhere else
                self.say(f"{c.model}: {c.message}")
            return
        if c.model is not None:
            what = f"{RUN_STAGES[c.stage]}" + (" in its backward" if c.phase == "backward" else "") + \
                (f" at call {c.step}" if c.step else "")
            if c.signal:  # the message says where: its compiled backward, loading its AOT Inductor package
                self.say(f"{c.model}: {c.message}" + (f" at call {c.step}" if c.step and " at call " not in (c.message or "") else ""))
                return
            self.say(f"{c.model}: {what}: {c.exception or 'error'}" + (f": {summary_line(c.message)}" if c.message else ""))
            return
        if c.stage == "export":  # no graph, no model: the export itself failed
            self.say(f"{c.exception}: {summary_line(c.message or 'torch.export.export raised')}")
            return
        if c.exitcode is None and c.exception is None:  # no exit status read (a recovered block's process)
            self.say(f"{c.message}")
            return
        code = f"exit {exit_code(c.exitcode or 0)}"
        if c.exception:
            self.say(f"the command failed ({code}): {c.exception}" + (f": {summary_line(c.message)}" if c.message else ""))
        else:
            self.say(f"{c.message} ({code})")

    def finish(self, value: Any, notes: dict[str, Any]) -> int:
        s: Summary = value
        if s.broken:
            self.say(f"{s.broken} graph line(s) were cut short by the command's end and are left out")
        if s.unreadable:
            self.say(f"{len(s.unreadable)} graph line(s) capture could not read are left out ({s.unreadable[0]}): "
                     "a fault of pt2kit capture, please report it")
        if not s.compiled:
            self.say(_why_none(s, self.job.command if self.job is not None else []))
        else:
            kept = "" if s.kept == s.compiled else f", {s.kept} kept (--graphs)"
            failed = f"; {s.failed} failed --check (a record of the failing call's values each)" if s.failed else ""
            self.say(f"{s.compiled} graph{'s' * (s.compiled != 1)} from {s.processes} process"
                     f"{'es' * (s.processes != 1)}{kept}{failed}")
        return exit_code(s.returncode)


def _why_none(s: Summary, command: list[str]) -> str:
    """Why no graph was kept, as the boot's markers tell it: the boot never loaded (in a Python whose flags
    explain it, a Python, or no Python at all), torch came past its hook, --rank dropped them all, or
    nothing was compiled."""
    if s.skipped:
        ranks = ",".join(sorted({str(r or 0) for r in s.skipped}, key=int))
        return (f"{len(s.skipped)} graph{'s' * (len(s.skipped) != 1)} compiled on rank{'s' * (',' in ranks)} {ranks}; "
                f"--rank {s.rank} kept none (--rank all keeps every rank's)")
    if not s.booted:
        return _never_booted(command)
    if s.hook_errors and not s.hooked:
        return (f"no graph was captured: capture's hook raised when torch was imported, in {s.unhooked} "
                f"process{'es' * (s.unhooked != 1)}: {'; '.join(s.hook_errors)}")
    if s.unhooked and not s.hooked:
        return ("no graph was captured: torch was imported before capture could hook it, in "
                f"{s.unhooked} process{'es' * (s.unhooked != 1)}")
    if s.exports:  # the graph the script asked for never existed: its crash record said why
        return (f"no graph was captured: the script's torch.export.export raised {s.exports} time"
                f"{'s' * (s.exports != 1)} before any graph existed (said above), and nothing else compiled")
    # Dynamo may run a compiled function's every frame eagerly (torch.compile(DDP(nn.Sequential)) does)
    return ("no graph was compiled (torch.compile handed its backend none: the command called no compiled "
            "function, or Dynamo ran every frame eagerly; " + ("`| guardscan` reads the script's trace, kept in the "
            "stream's header, and says why)" if s.traces else "TORCH_LOGS=graph_breaks says why)"))


def _never_booted(command: list[str]) -> str:
    """No process loaded the boot: said of what the command is (its argv and first line), since `ls`, a
    missing Python and ``python -I`` look alike from the markers (there are none)."""
    run = python_run(command)
    name = command[0] if command else "the command"
    if run is None:  # `ls`, a shell script: it ran, and no Python it started compiled anything
        return (f"no graph was captured: {name} is not Python, and it started no Python that loaded capture's boot "
                "(capture keeps what torch.compile compiles in the Python processes a command starts)")
    flags = run.ignores()
    if "I" in flags or "E" in flags:
        return ("no graph was captured: capture's boot never loaded in the command's Python (python -I and -E "
                "ignore PYTHONPATH, through which capture hooks in; run python without them)")
    if flags:
        return ("no graph was captured: capture's boot never loaded in the command's Python (python -S skips the "
                "site module, which loads capture's sitecustomize; run python without it)")
    return (f"no graph was captured: capture's boot never loaded in {run.exe} (it loads through PYTHONPATH's "
            "sitecustomize.py in Python 3.10 or newer: an older Python, or a run that resets PYTHONPATH, is not "
            "hooked)")


def not_runnable(program: str) -> str:
    """Why ``program`` cannot be started (PATH has no such command, or the path names no executable file),
    in the shell's words."""
    if "/" not in program:
        return f"{program}: command not found"
    if not os.path.exists(program):
        return f"{program}: no such file or directory"
    if os.path.isdir(program):
        return f"{program}: is a directory"
    return f"{program}: permission denied (it is not executable)"
