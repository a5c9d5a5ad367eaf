"""The outcomes every tool that judges compiled code gives, decided here once (README: "Outcomes").

* **nothing compiled**: torch.compile ran, and Dynamo handed its backend no graph (every frame skipped or
  broken before an op: an ``nn.LSTM`` it will not trace, a function that graph-breaks on everything).
  The compiler never ran, so "pass" or "clean" would be a verdict on eager code: :class:`Compiled`
  watches a compiled run and gives Dynamo's own reason; the tool says it and exits 1 (a finding).
* **the model's own failure**: a run that fails where the same model run eagerly, with nothing of the
  compiler in it, fails too. :func:`model_or_compiler` tells the two apart; the model's is exit 2 (bad
  input, one line ending "(the model, not the compiler)"), the compiler's stays a crash (exit 3).

Not guaranteed: a reason for every skip (Dynamo gives none for a frame its skip rules leave out, e.g.
code inside torch: then the line says Dynamo gave no reason).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import UsageError
from .text import exception_line

NOTHING = "nothing compiled"
OWN = "the model's own eager run fails (the model, not the compiler)"


class ModelsOwnFailure(UsageError):
    """The model fails without the compiler: exit 2, one line."""


def model_or_compiler(label: str, what: str, e: BaseException, eager: Callable[[], Any]) -> BaseException:
    """What to raise for ``e``, raised by a run of ``label`` that involved the compiler: the model's own
    failure (:class:`ModelsOwnFailure`) when ``eager()``, the same work without the compiler, fails
    too; else ``e`` itself (a crash of the compiler). ``what`` names the work ("eager run")."""
    try:
        eager()
    except Exception as own:
        return ModelsOwnFailure(f"{label}: the model's own {what} fails, so there is no compiled code to judge "
                                f"(the model, not the compiler): {exception_line(own)}")
    return e


def _first_line(reason: str) -> str:
    return reason.strip().split("\n")[0].strip()


class Compiled:
    """``with Compiled() as c: <compiled run>``; then ``c.nothing`` is None when Dynamo compiled at least
    one graph, else the line saying why not, in Dynamo's words."""

    def __init__(self) -> None:
        self.graphs = 0
        self.nothing: str | None = None

    def __enter__(self) -> Compiled:
        from ..shims.torchapi import dynamo_counts

        self._before = dynamo_counts()
        return self

    def __exit__(self, *exc: Any) -> None:
        from ..shims.torchapi import dynamo_counts

        graphs, reasons = dynamo_counts()
        self.graphs = graphs - self._before[0]
        if self.graphs == 0:
            new = [_first_line(r) for r in reasons if r not in self._before[1]] or \
                [_first_line(r) for r in reasons]
            self.nothing = nothing_line(list(dict.fromkeys(new)))


def nothing_line(reasons: list[str]) -> str:
    """The one line for a compiled run in which Dynamo compiled no graph."""
    why = "; ".join(reasons[:3]) if reasons else "Dynamo gave no reason (a frame its skip rules leave out)"
    return f"{NOTHING}: Dynamo handed the backend no graph, so the compiled run was eager code ({why})"


CANNOT = "cannot judge"


def unrunnable(label: str, record: Any) -> CannotJudge | None:
    """(2.14) For a `model` record whose graph ``pt2kit capture`` found not to run here
    (``captured.unrunnable``): the cannot-judge error to say for it (exit 2); None for any other record.
    Its eager run would fail for a reason of the capture, not of the model: never "the model's own"."""
    why = getattr(getattr(record, "captured", None), "unrunnable", None)
    if not why:
        return None
    return CannotJudge(f"{label}: {CANNOT}: the captured graph does not run here: {why}")


class CannotJudge(UsageError):
    """The check cannot apply to this model here: exit 2, one line naming why."""
