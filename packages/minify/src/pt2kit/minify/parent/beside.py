"""The bisection of the repro, run beside its verification instead of after it.

Both need only what the search made: the verification the repro's text (run in fresh processes forked
from the fork server), the bisection its query (compiled in the warm workers). Neither's answer changes
the other's work, so their compiles overlap instead of adding up (on a quiet 16-core machine the
verification took 4.5 s and the bisection 7 s, one after the other, of a 1-op compile-error repro).

Guarantees: the verification is the same (the same fresh runs, judged the same way; the fork server
never runs anything of the bisection's). The bisection's answer is kept only where a fresh run of the
repro failed, as when it ran after: where none did, it is stopped (the workers it was using are killed,
the pool forks new ones where anything is asked again) and nothing of it is kept. The stage lines of both
are said as they happen.

Only where the machine has cores to spare (:func:`side_by_side`): on a loaded 2-core machine the two
side by side took 23.9 s where one after the other took 19.6 (aot_compile_error's repro, same stream,
back to back), so there the bisection still starts once the verification has ended.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Any

from ..records import Outcome
from .pool import Lane, Pool
from .search import Cancelled


class _Stoppable(Lane):
    """Every worker of the pool, asked like a pool, until :meth:`stop`: then the next question (or the
    answer to one already asked, which the kill ended) raises :class:`.search.Cancelled`."""

    def __init__(self, pool: Pool) -> None:
        super().__init__(pool, 0)
        self.stopped = threading.Event()

    def _check(self) -> None:
        if self.stopped.is_set():
            raise Cancelled

    def ask(self, op: str, payload: Any, on_message: Callable[[dict[str, Any]], None] = lambda m: None,
            worker: int = 0) -> dict[str, Any]:
        self._check()
        a = super().ask(op, payload, on_message, worker)
        self._check()
        return a

    def map(self, op: str, payloads: list[Any], timeout: float | None = None,
            straggle: Callable[[float], float] | None = None) -> list[dict[str, Any]]:
        self._check()
        out = super().map(op, payloads, timeout, straggle)
        self._check()
        return out


def side_by_side(cores: int, workers: int) -> bool:
    """Whether the bisection runs beside the verification: a worker's compile keeps two cores busy (the
    C++ compiler beside its Python), and a fresh run's compile two more."""
    return cores >= 2 * workers + 2


class Beside:
    """``run(pool)`` (the bisection: its record's fields) in a thread of its own from now where ``now``,
    else in :meth:`into`, once the verification has ended."""

    def __init__(self, pool: Pool, run: Callable[[Any], dict[str, Any]], now: bool = True) -> None:
        self.lane = _Stoppable(pool)
        self.run = run
        self.fields: dict[str, Any] | None = None
        self.error: BaseException | None = None
        self.done = threading.Event()
        self.started = now
        if now:
            threading.Thread(target=self._run, args=(run,), daemon=True).start()

    def _run(self, run: Callable[[Any], dict[str, Any]]) -> None:
        try:
            self.fields = run(self.lane)
        except Cancelled:
            pass
        except BaseException as e:  # raised where the bisection after the verification would have raised it
            self.error = e
        finally:
            self.done.set()

    def into(self, made: Outcome) -> Outcome:
        """``made`` (a repro that failed in a fresh run) with the bisection's fields, once it is done, and
        the stage written into its docstring."""
        from . import bisected

        if not self.started:
            self.started = True
            self._run(self.run)
        self.done.wait()
        if self.error is not None:
            raise self.error
        assert self.fields is not None and made.text is not None
        fields = {**self.fields, "graph": made.fields.get("graph"), "phase": made.fields.get("phase")}
        return dataclasses.replace(made, bisect=fields, text=bisected.into_repro(made.text, fields))

    def cancel(self) -> None:
        """Stopped, its answers dropped: no fresh run of the repro failed."""
        self.lane.stopped.set()
        if not self.started:
            return
        while not self.done.wait(0.05):  # a question asked after the first kill starts a new worker: kill it too
            self.lane.kill()


def bisecting(pool: Pool, query: dict[str, Any], failure: dict[str, Any], backend: str | None, say: Any
              ) -> Beside | None:
    """The bisection of the repro whose query is ``query`` (:mod:`.bisect`), started where the machine
    has the cores for it; None where there is no stage to tell (said so): a violation is the graph's, not
    a stage's, and an AOT Inductor package is not torch.compile's."""
    from pt2kit.runtime.common.flags import usable_cpus

    from .bisect import bisect

    if failure["kind"] == "violation" or backend == "aoti":
        why = ("a violation is the graph's, not a compiler stage's" if failure["kind"] == "violation"
               else "--backend aoti: an AOT Inductor package is not built by torch.compile's stages")
        say(f"not bisected: {why}")
        return None
    now = side_by_side(usable_cpus(), len(pool.workers))

    def run(lane: Any) -> dict[str, Any]:
        say("bisecting the repro" + (" beside its verification" if now else "") + ": which compiler stage breaks it")
        return bisect(lane, query, failure, backend or "inductor", say)

    return Beside(pool, run, now)
