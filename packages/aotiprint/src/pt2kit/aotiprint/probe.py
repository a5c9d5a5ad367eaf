"""What the instrumented JIT wrapper calls around each kernel launch (see :mod:`.jitwrap`).

``before``/``after`` hand the launch's tensors to the active :class:`Recorder`; with none active
(the module was imported outside aotiprint) they do nothing. Launches are numbered across every
compiled graph in the order they ran.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

RECORDER: Recorder | None = None


class Recorder:
    """Turns probe calls into `kernel` records through ``emit(name, launch, when, args, sites)``."""

    def __init__(self, mode: str, kernels: list[str] | None, arg_of: Callable[..., Any],
                 emit: Callable[..., None], on_launch: Callable[[str], None]) -> None:
        self.mode = mode
        self.kernels = {k.strip().lower() for k in kernels or [] if k.strip()}
        self.arg_of = arg_of  # (name, value, uninitialised, when, launch, kernel) -> KernelArg | None
        self.emit = emit
        self.on_launch = on_launch
        self.count = 0
        self.current: int | None = None
        self.sync: Callable[[], None] | None = None
        self._before: dict[str, Any] = {}

    def wanted(self, kernel: str) -> bool:
        return not self.kernels or kernel.lower() in self.kernels or kernel.split(".")[-1].lower() in self.kernels

    def before(self, site: int, kernel: str, tensors: dict[str, Any], fresh: list[str]) -> None:
        self.current = self.count
        self.count += 1
        self.on_launch(kernel)
        if not self.wanted(kernel):
            return
        args = [] if self.mode == "names" else [
            a for a in (self.arg_of(n, v, n in fresh, "before", self.current, kernel) for n, v in tensors.items())
            if a is not None
        ]
        self._before = {a.name: a for a in args}
        self.emit(kernel, self.current, "before", args, site, None)

    def after(self, site: int, kernel: str, tensors: dict[str, Any]) -> None:
        if self.sync is not None:
            self.sync()  # a launch that faults fails here, not at a later one
        launch = self.current if self.current is not None else self.count
        if not self.wanted(kernel):
            return
        args = [] if self.mode == "names" else [
            a for a in (self.arg_of(n, v, False, "after", launch, kernel) for n, v in tensors.items())
            if a is not None
        ]
        self.emit(kernel, launch, "after", args, site, self._finding(args))

    def _finding(self, args: list[Any]) -> str | None:
        """What this launch left NaN/Inf in where there was none (:func:`.records.introduced`): a
        candidate; the parent keeps the one :func:`.records.decide` names."""
        from .records import introduced

        return introduced(args, self._before)[0]

def before(site: int, kernel: str, tensors: dict[str, Any], fresh: list[str]) -> None:
    if RECORDER is not None:
        RECORDER.before(site, kernel, tensors, fresh)


def after(site: int, kernel: str, tensors: dict[str, Any]) -> None:
    if RECORDER is not None:
        RECORDER.after(site, kernel, tensors)
