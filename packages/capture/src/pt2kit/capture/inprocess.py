"""``with pt2kit.capture() as cap:``: pt2kit capture around a block of code in this process (a notebook's
cells, a REPL), for a user who has no script to hand to ``pt2kit capture -- python s.py``.

The block runs under the capture boot's own hooks: the variables the command line gives a script's
process set for the block, then :func:`pt2kit_capture_boot.attach` installs the finder and patches
sitecustomize's start installs, and :func:`pt2kit_capture_boot.detach` removes them; the records are
written by the command line's own :func:`.drive.write_records` from the same scratch dir. So
``cap.records`` holds what ``pt2kit capture -- python s.py`` writes for the same compiles: a `model`
record per graph torch.compile compiled inside the block (its model file, inputs, ``captured`` fields),
a `crash` where a backend or compiled code raised, and one for the block when it raised (the exception
still raised: the cell fails as it would have).

Guarantees: after the block the process is as before it: every patch put back, the finder gone, the
PT2KIT_CAPTURE_* variables as they were, the boot's folder off ``sys.path``; Dynamo's caches as the user had
them: a code Dynamo compiled in the block (through the capture's wrappers) is dropped from them, so its
next call compiles it again without capture. The model files are checked to run in a child process, never
here. Not captured: a function ``torch.compile`` wrapped before the block (its backend was taken then:
call ``torch.compile`` inside the block). torch's structured trace (guardscan's input) is written for the
block by one more handler on its trace logger (:func:`.torchapi.start_trace`), removed after it. Not
reentrant: one capture at a time.
"""

from __future__ import annotations

import importlib
import io
import json
import os
import shutil
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

from pt2kit.runtime.cli.storegc import BLOCK, scratch_owner
from pt2kit.runtime.parent.session import Session

from . import __version__, runs, torchapi
from .boot import pt2kit_capture_contract as contract
from .drive import BOOT, write_records
from .job import DEFAULT_MAX_VALUE_BYTES, Job, parse_graphs
from .narrate import Narrator
from .results import Records, Triage

_ACTIVE: list[Capture] = []
# (0.19) the header's argv after the tool's name: no command ran (the process's own flags, a kernel's -f, are
# none of capture's); pt2kit triage --from tells a block captured in process by it
IN_PROCESS = "(in process)"


class Capture:
    """One capture of a block (:func:`capture` makes it); ``records`` once the block has ended."""

    def __init__(self, *, store: str | os.PathLike[str] | None = None, graphs: str = "all", values: str = "small",
                 max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES, max_run_bytes: int | None = None,
                 check: str | None = None, quiet: bool = False) -> None:
        # what runs this process, for the records' ``captured.command`` (a kernel: python ipykernel_launcher.py)
        self.job = Job(command=[sys.executable, *sys.argv], graphs=parse_graphs(graphs), values=values,
                       max_value_bytes=max_value_bytes, max_run_bytes=max_run_bytes, check=check)
        self.session = Session("capture", __version__, store=store, quiet=quiet, stdout=io.BytesIO(),
                               records_on_stdout=False)
        # what recover() builds the same capture from, after a process that died in the block
        self.options = {"graphs": graphs, "values": values, "max_value_bytes": max_value_bytes,
                        "max_run_bytes": max_run_bytes, "check": check}
        self.records: Records | None = None
        self._env: dict[str, str | None] = {}
        self._codes: dict[int, tuple[Any, int]] = {}
        self.boot: Any = None  # the boot's module, once the block starts
        self.checker: Any = None  # the child that checks the model files run
        self._trace: Any = None

    def __enter__(self) -> Capture:
        import torch

        if _ACTIVE or os.environ.get(contract.ENV_DIR):
            raise RuntimeError("pt2kit.capture: this process is being captured already (one block at a time; "
                               "not inside pt2kit capture -- COMMAND)")
        s = self.session
        s.store.root.mkdir(parents=True, exist_ok=True)
        self.scratch = s.store.root / f".capture-{s.writer.run}"
        self.scratch.mkdir()
        _ACTIVE.append(self)
        try:
            (self.scratch / "owner").write_text(scratch_owner())
            (self.scratch / BLOCK).write_text(json.dumps({"options": self.options, "command": self.job.command}))
            # the graphs' files are on disk as they come: where to find them if the process dies in the block
            s.say(f"recording into {self.scratch}; if this process dies in the block (a segfault in compiled "
                  "code), pt2kit.capture.recover() after the restart reads what it recorded")
            env = contract.child_env(str(self.scratch), self.job.values, self.job.max_value_bytes,
                                     self.job.run_budget, self.job.rank, self.job.graphs, self.job.check)
            self._env = {k: os.environ.get(k) for k in env}
            os.environ.update(env)
            sys.path.insert(0, str(BOOT))
            self.boot = importlib.import_module("pt2kit_capture_boot")
            self._codes = torchapi.compiled_codes()
            self.checker = runs.start()  # its torch import overlaps the block
            self.boot.attach(torch, cell_namer())
            self._trace = torchapi.start_trace(self.scratch / "trace")
        except BaseException:  # the process as it was, nothing left behind
            self._restore()
            if self.checker is not None:
                self.checker.kill()
                self.checker.wait()
            shutil.rmtree(self.scratch, ignore_errors=True)
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        try:
            if exc is not None:
                self.boot.write_exit(exc)
        finally:
            self._restore()
        self.finish(0 if exc is None else 1)

    def finish(self, returncode: int, ended: str | None = None) -> None:
        """The records of the scratch dir (the block's, or one a dead process left: :func:`.recovery.recover`),
        written by the command line's own writer; the scratch dir removed."""
        s, job = self.session, self.job
        try:
            narrator = Narrator(s.say, "the block", job)
            argv, sys.argv = sys.argv, [sys.argv[0] if sys.argv else "", IN_PROCESS]  # the header's argv
            try:
                write_records(s, job, self.scratch, self.scratch / "trace", False, returncode, None, narrator,
                              self.checker, ended)
            finally:
                sys.argv = argv
        finally:
            if self.checker.poll() is None:
                self.checker.kill()
                self.checker.wait()
            shutil.rmtree(self.scratch, ignore_errors=True)
        self.records = Records(s.writer.out.getvalue(), s.store.root)
        if not self.records.of("model") and not s.quiet:
            s.say("a function torch.compile wrapped before the block is not captured: call torch.compile inside it")

    def _restore(self) -> None:
        """The process as before the block: the hooks out, the codes compiled through them dropped, the
        variables and ``sys.path`` put back."""
        _ACTIVE.remove(self)
        try:
            if self._trace is not None:
                torchapi.stop_trace(self._trace)
            if self.boot is not None:
                self.boot.detach()
            for key, (code, entries) in torchapi.compiled_codes().items():
                if key not in self._codes or entries > self._codes[key][1]:
                    torchapi.forget_compiled(code)
        finally:
            for k, v in self._env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            if str(BOOT) in sys.path:
                sys.path.remove(str(BOOT))

    # the pipes' next step, on the records (see :class:`.results.Records`)
    def write(self, path: str | os.PathLike[str]) -> Path:
        return self._done().write(path)

    def kdiff(self, *args: str) -> Records:
        return self._done().kdiff(*args)

    def minify(self, *args: str) -> Records:
        return self._done().minify(*args)

    def guardscan(self, *args: str) -> Records:
        return self._done().guardscan(*args)

    def triage(self, *args: str, out: str | os.PathLike[str] | None = None) -> Triage:
        return self._done().triage(*args, out=out)

    def _done(self) -> Records:
        if self.records is None:
            raise RuntimeError("pt2kit.capture: the block has not ended yet; its records come when it does")
        return self.records

    def _repr_html_(self) -> str | None:
        return None if self.records is None else self.records._repr_html_()


def cell_namer() -> Any:
    """A file's name as this process's IPython kernel names its cells (``In[3]``, as its tracebacks say
    "Cell In[3]"), None for any other file; None where no IPython shell runs here."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    name = getattr(getattr(shell, "compile", None), "format_code_name", None)  # IPython >= 8
    if name is None:
        return None

    def namer(file: str) -> str | None:
        got = name(file)
        return got[1] if got else None

    return namer


def capture(**options: Any) -> Capture:
    """``with pt2kit.capture() as cap:`` records every graph torch.compile compiles inside the block, as
    ``pt2kit capture -- python s.py`` does for a script. Options are the command line's: ``store`` (default
    ./pt2kit-out), ``graphs``, ``values``, ``max_value_bytes``, ``max_run_bytes``, ``check``, ``quiet``."""
    return Capture(**options)
