"""Which (model, backend) jobs a sweep runs, and which of them a shard takes. Imports no torch.

Guarantees:

* The jobs are every model crossed with every backend, models in the order given, backends in the
  order of --backend; a job is named ``MODEL × BACKEND`` everywhere (records, stderr, durations).
* ``--shard I/N`` (1 <= I <= N) takes the jobs of shard I of a partition that every shard computes
  alike from the same command line and the same ``--durations`` stream, so the N shards' streams
  together hold each job exactly once and ``cat`` merges them. With durations (the ``wall_s`` of an
  earlier stream's ``bench`` records; a job it lacks counts as their median) the longest job goes
  first to the least loaded shard (LPT); without, jobs are dealt by count (round robin).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from pt2kit.runtime.common.errors import UsageError
from pt2kit.runtime.common.pyfile import check_code
from pt2kit.schema import Bench, Crash

BUILTINS = ("eager", "aot_eager", "inductor")
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def parse_backend(spec: str) -> tuple[str, str]:
    """("builtin", name), ("mode", inductor mode) or ("callable", spec); UsageError otherwise."""
    if spec in BUILTINS:
        return "builtin", spec
    head, sep, tail = spec.partition(":")
    if head == "inductor" and sep:
        if tail not in MODES:
            raise UsageError(f"--backend {spec}: inductor's modes are {', '.join(MODES)}")
        return "mode", tail
    if ":" not in spec:
        raise UsageError(f"--backend {spec}: expected {', '.join(BUILTINS)}, inductor:MODE, FILE.py:NAME "
                         "or module:attr")
    return "callable", spec


def backends_of(values: list[str] | None) -> list[str]:
    """--backend, repeatable and comma-separated, in order, each once; default inductor."""
    out: list[str] = []
    for v in values or ["inductor"]:
        for b in (x.strip() for x in v.split(",")):
            if not b:
                raise UsageError(f"--backend {v!r}: an empty backend name")
            if parse_backend(b)[0] == "callable":  # a missing file is exit 2 before the sweep runs anything
                check_code(b, "--backend")
            if b not in out:
                out.append(b)
    return out


@dataclass(frozen=True)
class JobSpec:
    model: str  # FILE.py[:NAME] as given (or as the stream named it)
    label: str  # what records call the model
    backend: str
    device: str
    config: tuple[tuple[str, str], ...] = ()
    from_stream: bool = False
    first_of_model: bool = True  # writes the model's `model` record

    @property
    def key(self) -> str:
        return f"{self.label} × {self.backend}"


def parse_shard(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    i, sep, n = text.partition("/")
    try:
        shard, total = int(i), int(n)
    except ValueError:
        shard = total = 0
    if not sep or total < 1 or not 1 <= shard <= total:
        raise UsageError(f"--shard {text}: expected I/N with 1 <= I <= N, e.g. 2/4")
    return shard, total


def durations_from(records: Iterable[object]) -> dict[str, float]:
    """``MODEL × BACKEND`` -> seconds, from the ``bench`` (and ``crash``) records of an earlier run
    (records of other kinds are passed over)."""
    out: dict[str, float] = {}
    for r in records:
        if isinstance(r, Bench | Crash) and r.wall_s is not None and r.backend:
            out[f"{r.model} × {r.backend}"] = float(r.wall_s)
    return out


def shard_jobs(jobs: list[JobSpec], shard: int, total: int, durations: dict[str, float] | None = None) -> list[JobSpec]:
    """Shard ``shard`` (1-based) of ``total``, in the jobs' own order."""
    if durations:
        fill = statistics.median(durations.values())
        cost = [durations.get(j.key, fill) for j in jobs]
        load = [0.0] * total
        owner = [0] * len(jobs)
        for i in sorted(range(len(jobs)), key=lambda i: (-cost[i], i)):
            s = min(range(total), key=lambda s: (load[s], s))
            owner[i] = s
            load[s] += cost[i]
    else:
        owner = [i % total for i in range(len(jobs))]
    return [j for i, j in enumerate(jobs) if owner[i] == shard - 1]
