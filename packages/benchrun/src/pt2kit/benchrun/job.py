"""benchrun's options, typed: the one Struct the flags build, the sweep plans from and each worker decodes.

The sweep's fields (models, backends, shard...) are the command line's; the sweep hands each worker a
copy naming its one model, backend and phase (``msgspec.structs.replace``), with the timer resolved
for its device. Ranges are checked here, so a bad value is exit 2 before the header.
"""

from __future__ import annotations

from pt2kit.runtime.common.errors import UsageError
from pt2kit.runtime.common.flags import check_finite, check_range, check_seconds, check_seed
from pt2kit.runtime.common.job import ModelJob

# --repeat and --warmup, per side: the speedup's bootstrap resamples every sample 2000 times in pure
# Python, so 10000 samples already take seconds there; more only makes a run that does not end
MAX_CALLS = 10_000


class Job(ModelJob, frozen=True, kw_only=True):
    # the sweep: what the parent plans (a worker's copy keeps them, unread)
    models: tuple[str, ...] = ()  # MODEL.py[:NAME] | zoo:NAME; none: each `model` record on stdin
    backends: tuple[str, ...] = ("inductor",)  # plan.backends_of's: in order, each once
    fail_below: float | None = None  # exit 1 when a speedup's whole interval is below it
    shard: tuple[int, int] | None = None  # (I, N)
    durations: str | None = None  # an earlier run's stream, to balance --shard
    executor: str = "local"  # local | ray
    ray_address: str | None = None
    zoo: bool = False  # list the bundled models instead
    # one worker's job: the sweep sets these for each child
    backend: str = "inductor"  # eager | aot_eager | inductor | inductor:MODE | FILE.py:NAME | module:attr
    phase: str = "cold"  # cold: everything, with an empty cache; warm: the compile alone, caches kept
    # how every job measures
    mode: str = "infer"  # infer | train
    dtype: str | None = None
    timer: str | None = None  # events | cudagraph | wall; None: the device's default (the sweep resolves it)
    repeat: int | None = None  # samples per side; None: as many as fit in `budget_s`
    warmup: int = 5
    budget_s: float = 1.0
    accuracy: bool = True
    profile_kernels: bool = False
    seed: int = 0
    precision: str = "harness"  # the accuracy status's settings: harness | as-configured (timings: the model's own)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_seconds("--budget", self.budget_s)
        check_finite("--fail-below", self.fail_below, positive=True)
        check_range("--repeat", self.repeat, 3, MAX_CALLS)
        check_range("--warmup", self.warmup, 0, MAX_CALLS)
        check_seed("--seed", self.seed)
        if self.durations is not None and self.shard is None:
            raise UsageError("--durations: only balances --shard; give --shard I/N too")
        if self.ray_address is not None and self.executor != "ray":
            raise UsageError("--ray-address: give --executor ray too")
