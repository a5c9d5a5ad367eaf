"""The accuracy search, run ahead: started on the spare workers as soon as the graphs are captured,
while worker 0 still runs the original model to learn how it fails.

Most of minify's time on a compiled model that gives wrong numbers is two compiles that need not wait
for each other: the whole model's (which decides the failure) and the captured graph's with every node
an output (which finds the first diverging node). Run ahead, the search has often finished by the time
the original run is judged. In train mode the bet is on a gradient: the first backward graph.

Guarantees: the failure is still decided once, from the original run; the search ahead is a bet that
it is an accuracy failure (the kind it judges candidates by), and its result is used only when the
original run's failure is exactly that one. When it is not, the spare workers are killed (the pool
forks new ones) and nothing the search ahead saw is kept: not its answers, not its query count.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .. import ir
from ..ir import Config
from ..job import Job
from ..records import Want
from .search import Cancelled, Searcher


def accuracy_failure(job: Job, precision: dict[str, Any] | None = None, phase: str | None = None,
                     autocast: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The failure an accuracy failure of ``job`` is decided as (:func:`.onemodel._failure`): ``precision``, the
    settings the original run was judged under (pt2kit.runtime.common.precision), is applied by every query and
    by the repro; ``phase`` "backward": only gradients fail; ``autocast``: the torch.autocast the model file
    calls the graph under (its ``autocast_state``), entered around every candidate's call and the repro's."""
    return {"kind": "accuracy", "signature": "accuracy", **({"ref": job.ref} if job.ref != "eager" else {}),
            **({"rule": job.rule} if job.rule != "fp64" else {}), **({"precision": precision} if precision else {}),
            **({"phase": phase} if phase else {}), **({"autocast": autocast} if autocast else {})}


def worth_it(job: Job, want: Want | None) -> bool:
    """Whether the failure may be an accuracy failure minify searches for by localising (the pool then
    gets a second worker for it)."""
    kind = want.kind if want is not None else job.failure
    return kind in ("auto", "accuracy") and job.backend != "aoti" and job.profile is None and not job.check_str


class Ahead:
    def __init__(self, pool: Any, job: Job, graph: ir.Graph, config: Config, on_step: Callable[[str], None],
                 precision: dict[str, Any] | None = None, autocast: list[dict[str, Any]] | None = None) -> None:
        self.pool = pool
        # a backward graph, or one run as a training step (train mode), is a bet on a gradient's accuracy failure
        self.failure = accuracy_failure(job, precision, "backward" if graph.phase in ("backward", "joint") else None,
                                        autocast)
        self.lane = pool.lane(1)
        self.searcher = Searcher(self.lane, graph, self.failure, job.backend, config, jobs=len(self.lane.workers),
                                 on_step=lambda m: on_step(f"ahead, while the original runs: {m}"), seed=job.seed)
        self.searcher.stop = threading.Event()
        self.result: tuple[ir.Candidate, Config] | None = None  # the smallest failing candidate, its config
        self.done = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        s = self.searcher
        try:
            whole = s.whole()
            if whole is not None and s.localize_first():
                self.result = s.search(whole)
        except Cancelled:
            pass
        except Exception:  # a worker that cannot start: the search after the original run asks again itself
            self.result = None
        finally:
            self.done.set()

    def take(self, failure: dict[str, Any] | None, jobs: int) -> bool:
        """Whether ``failure`` is the one the search ahead bet on; if so, once it is done (``result``
        holds what it found, or None where the graph did not localise), its searcher asks any further
        question of every worker; if not, it is stopped."""
        if failure != self.failure:
            self.cancel()
            return False
        self.searcher.pool, self.searcher.jobs = self.pool, jobs  # worker 0 is free now: its next question
        self.done.wait()
        return True

    def cancel(self) -> None:
        assert self.searcher.stop is not None
        self.searcher.stop.set()
        while not self.done.wait(0.05):  # a question asked after the first kill starts a new worker: kill it too
            self.lane.kill()
