"""benchrun [MODEL.py[:NAME]|zoo:NAME]...: eager against compiled backends, numbers a performance
engineer can trust.

Every (model, backend) pair runs in a fresh process of its own (a crash or --timeout becomes a
`crash` record and the sweep goes on), with an empty Inductor cache, and again in a second fresh
process with that cache, for the warm compile. One `bench` record each: compile time cold and
warm, split into Dynamo, AOTAutograd, Inductor and the first run; latency of eager and the backend
sampled interleaved (CUDA: events around each call with the L2 flushed before it, as do_bench
times; CPU: perf_counter), median, p10, p90, IQR and n; the speedup (median eager / median
backend) with a bootstrap 95% interval; peak memory cold and warm and the compression ratio
(CUDA); graphs, breaks, recompiles, generated kernels and launches per iteration; the accuracy
status against a float64 run (pass / fail_accuracy / fail_to_run, kdiff's rule); with
--profile-kernels the per-kernel time table.

Without MODEL, runs each `model` record on stdin (`fxcheck m.py | benchrun`). `benchrun --zoo`
lists the bundled models (BERT-base, GPT-2, ResNet-18, an SSM loop; random weights, no downloads).
Exit 0 all ran and passed accuracy, 1 an accuracy failure or a speedup whose whole interval is
below --fail-below, 2 bad input, 3 a crash, a timeout or a side that failed to run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pt2kit.runtime.common.config import parse_config
from pt2kit.runtime.parent.options import (
    Config,
    Debug,
    DeviceFromRecord,
    NoStreamConfig,
    Precision,
    Quiet,
    Store,
    Timeout,
    Version,
    command,
    one_of,
    tool_app,
)
from pt2kit.runtime.parent.session import Session

from . import __version__, drive
from .job import Job
from .plan import backends_of, parse_shard

app = tool_app("benchrun", __doc__ or "")


@command(app)
def benchrun(
    models: Annotated[list[str] | None, typer.Argument(metavar="[MODEL.py[:NAME]|zoo:NAME]...",
                                                       show_default=False)] = None,
    backend: Annotated[list[str] | None, typer.Option(
        "--backend", "-b", metavar="B[,B...]", show_default=False,
        help="eager, aot_eager, inductor, inductor:MODE (max-autotune, reduce-overhead, ...), FILE.py:NAME or "
        "module:attr; comma-separated or repeated [default: inductor].")] = None,
    mode: Annotated[one_of(("infer", "train")), typer.Option("--mode", help="infer: forward under no_grad; train: forward, loss, backward.")] = "infer",
    device: DeviceFromRecord = None,
    dtype: Annotated[one_of(("float32", "bfloat16", "float16")) | None, typer.Option("--dtype",
        show_default=False,
        help="Cast the model and its floating inputs [default: as the file makes them].")] = None,
    repeat: Annotated[int | None, typer.Option("--repeat",
        show_default=False,
        help="Samples per side, 3 to 10000 [default: as many as fit in --budget, 10 to 1000].")] = None,
    warmup: Annotated[int, typer.Option("--warmup", help="Warm-up calls per side before sampling, 0 to 10000.")] = 5,
    budget: Annotated[float, typer.Option("--budget", help="Seconds of samples per side when --repeat is not given.")] = 1.0,
    timer: Annotated[one_of(("events", "cudagraph", "wall")) | None, typer.Option("--timer",
        show_default=False,
        help="events: CUDA events, L2 flushed (do_bench); cudagraph: replays of a captured graph; wall: "
        "perf_counter with syncs [default: events on CUDA, wall on CPU].")] = None,
    accuracy: Annotated[bool, typer.Option("--accuracy/--no-accuracy", help="Judge the backend's outputs against a float64 run.")] = True,
    profile_kernels: Annotated[bool, typer.Option(
        "--profile-kernels", help="Time every kernel with torch.profiler (a table in the store, top kernels in "
        "the record).")] = False,
    fail_below: Annotated[float | None, typer.Option(
        "--fail-below", metavar="SPEEDUP", show_default=False,
        help="Exit 1 when a speedup's whole 95% interval is below this.")] = None,
    shard: Annotated[str | None, typer.Option("--shard",
        metavar="I/N", show_default=False, help="Run shard I of N of the (model, backend) jobs.")] = None,
    durations: Annotated[Path | None, typer.Option("--durations",
        metavar="STREAM", dir_okay=False, show_default=False,
        help="An earlier run's stream: balance --shard by its jobs' wall times (longest first).")] = None,
    executor: Annotated[one_of(("local", "ray")), typer.Option("--executor", help="local: here, one job per GPU; ray: a Ray task each.")] = "local",
    ray_address: Annotated[str | None, typer.Option("--ray-address",
        metavar="ADDRESS", show_default=False, help="The Ray cluster to use [default: start a local one].")] = None,
    zoo: Annotated[bool, typer.Option("--zoo", help="List the bundled models and exit.")] = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed set before the accuracy runs (-2**63 to 2**64-1).")] = 0,
    precision: Precision = "harness",
    timeout: Timeout = None,
    config: Config = None,
    no_stream_config: NoStreamConfig = False,
    store: Store = None,
    quiet: Quiet = False,
    debug: Debug = False,
    version: Version = False,
) -> None:
    with Session("benchrun", __version__, store=store, quiet=quiet, debug=debug,
                 precision=precision if accuracy else None) as s:
        job = Job(models=tuple(models or ()), backends=tuple(backends_of(backend)), mode=mode, device=device,
                  dtype=dtype, repeat=repeat, warmup=warmup, budget_s=budget, timer=timer, accuracy=accuracy,
                  profile_kernels=profile_kernels, fail_below=fail_below, shard=parse_shard(shard),
                  durations=None if durations is None else str(durations), executor=executor,
                  ray_address=ray_address, zoo=zoo, seed=seed, precision=precision, timeout=timeout,
                  config=parse_config(config), stream_config=not no_stream_config)
        s.done(drive.run(s, job))


def main() -> None:
    app()
