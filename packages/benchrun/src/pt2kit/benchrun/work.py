"""The child-process side of `benchrun`: one (model, backend) job, in the order its numbers need.

Cold phase (the parent gives it an empty Inductor cache): load, cast to --dtype; eager's first call
(so CUDA's and cuBLAS's set-up is not counted as compile); the compiled first call, timed, its parts
read from torch's compile metrics, its peak memory kept as the cold peak; warm-up calls of both;
warm peaks; interleaved samples (:mod:`.timing`); with --profile-kernels the profiler's kernel
table; last the accuracy status against a float64 run (runtime.accuracy, kdiff's rule).

Warm phase (a fresh process, the cold run's caches): load, eager's first call, the compiled first
call: the compile a user pays on a second run.

Returns plain data; the parent builds the `bench` record (:mod:`.records`). An exception in either
side's first call is the job's ``fail_to_run`` status; one after that is a crash.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import msgspec

from pt2kit.runtime.common.errors import UsageError
from pt2kit.runtime.common.outcome import OWN
from pt2kit.runtime.common.text import exception_line
from pt2kit.runtime.shims.torchapi import reset_dynamo, tree_map
from pt2kit.schema import Model
from pt2kit_portable import copy_inputs

from . import timing, torchapi

PROFILE_ITERS = 5


def compiled(fn: Any, spec: str) -> Any:
    """``fn`` under torch.compile with the backend ``spec`` names (see plan.parse_backend)."""
    import torch

    from .plan import parse_backend

    kind, value = parse_backend(spec)
    if kind == "mode":
        return torch.compile(fn, backend="inductor", mode=None if value == "default" else value)
    if kind == "builtin":
        return torch.compile(fn, backend=value)
    from pt2kit.runtime.common.modelfile import backend_callable

    return torch.compile(fn, backend=backend_callable(spec, "--backend"))


def _cast(loaded: Any, dtype: str | None) -> None:
    if dtype is None:
        return
    import torch

    dt = getattr(torch, dtype)
    if isinstance(loaded.model, torch.nn.Module):
        loaded.model = loaded.model.to(dt)
    loaded.inputs = tree_map(lambda x: x.to(dt) if isinstance(x, torch.Tensor) and x.is_floating_point() else x,
                             loaded.inputs)


def stepper(loaded: Any, fn: Any, mode: str) -> Callable[[], Any]:
    """One iteration: a forward call (infer), or :func:`pt2kit.runtime.worker.training.train_step` (train:
    gradients cleared, forward, loss = the mean of each floating output, summed, backward)."""
    from pt2kit.runtime.worker.training import train_step

    if mode == "infer":
        return lambda: loaded.call(fn)
    params = [p for p in getattr(loaded.model, "parameters", list)() if p.requires_grad]
    return lambda: train_step(lambda: loaded.call(fn), params)


def _first_call(run: Callable[[], Any], device: str) -> tuple[float, tuple[int, int] | None]:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    seconds, _ = timing.timed_call(run, device)
    peaks = (int(torch.cuda.max_memory_allocated()), int(torch.cuda.max_memory_reserved())) \
        if device.startswith("cuda") else None
    return seconds, peaks


def _compile_time(total: float) -> dict[str, Any]:
    split = torchapi.split_compile(torchapi.compile_metrics())
    frame, backend, inductor = split["frame_s"], split["backend_s"], split["inductor_s"]
    return {"total_s": total,
            "dynamo_s": None if frame is None or backend is None else max(frame - backend, 0.0),
            "aot_s": None if backend is None else max(backend - (inductor or 0.0), 0.0),
            "inductor_s": inductor,
            "first_run_s": None if frame is None else max(total - frame, 0.0),
            "cache_hits": split["cache_hits"], "cache_misses": split["cache_misses"]}


def _recompiles() -> int:
    """Frames compiled again (compile id ``F/N`` with N > 0), as TORCH_LOGS=recompiles shows them."""
    n = 0
    for cid in torchapi.split_compile(torchapi.compile_metrics())["frames"]:
        m = re.search(r"(\d+)/(\d+)", cid)
        n += bool(m and int(m.group(2)) > 0)
    return n


def run(payload: dict[str, Any], chan: Any) -> dict[str, Any]:
    from .job import Job

    job = msgspec.convert(payload, Job)
    chan.stage("load")
    import torch

    from pt2kit.runtime.common.config import apply_config
    from pt2kit.runtime.common.modelfile import load_model, model_fields

    with apply_config(job.config):
        loaded = load_model(job.model, device=job.device, from_stream=job.from_stream)
        if job.emit_model and job.phase == "cold":
            chan.emit_new(Model, **model_fields(loaded, job.device, job.config))
        _cast(loaded, job.dtype)
        train = job.mode == "train"
        if train:  # the rule kdiff's and minify's train modes keep: something must require grad
            from pt2kit.runtime.worker.training import check_trainable

            check_trainable(loaded.model, loaded.inputs, loaded.label)
        if isinstance(loaded.model, torch.nn.Module):
            loaded.model.train(train)
        torch.set_grad_enabled(train)
        if job.profile_kernels and not job.device.startswith("cuda"):
            torchapi.profile_cpp_kernels()  # else Inductor's C++ kernels do not show in the profiler
        return _bench(job, loaded, chan)


def _bench(job: Any, loaded: Any, chan: Any) -> dict[str, Any]:
    import torch

    dev = job.device
    torch.manual_seed(job.seed)
    eager = stepper(loaded, loaded.model, job.mode)
    chan.stage("eager: first call")
    try:
        e_first, e_cold = _first_call(eager, dev)
    except UsageError:  # the model cannot be benchmarked this way (--mode train, no output needing grad)
        raise
    except Exception as e:
        return {"accuracy": "fail_to_run", "error": f"eager: {OWN}: {exception_line(e)}"}
    # eager's steady state before anything is compiled: what a user without torch.compile needs
    e_warm = timing.peak_memory(eager, 3, dev) if job.phase == "cold" else None
    is_compiled = job.backend != "eager"
    counts0, kernels0 = torchapi.dynamo_counts(), torchapi.generated_kernels()
    out: dict[str, Any] = {"compile": None}
    model_c, first_breaks = None, None
    if is_compiled:
        torchapi.clear_compile_metrics()
        model_c = compiled(loaded.model, job.backend)
        test = stepper(loaded, model_c, job.mode)
        chan.stage(f"{job.backend}: compile and first call")
        try:
            t_first, t_cold = _first_call(test, dev)
        except Exception as e:
            return {"accuracy": "fail_to_run", "error": f"{job.backend}: {exception_line(e)}"}
        # graph breaks as torch._dynamo.explain (and guardscan) count them: the graphs of the first call, less
        # one. Dynamo's graph_break counter also counts a break in a frame it then skipped or ran eagerly
        first_graphs = torchapi.dynamo_counts()["graphs"] - counts0["graphs"]
        first_breaks = max(first_graphs - 1, 0)
        out["compile"] = _compile_time(t_first)
        if job.phase == "warm":
            return out
    else:
        test, t_first, t_cold = eager, e_first, e_cold
    chan.stage(f"warm-up ({job.warmup} calls each)")
    est = [e_first, t_first]
    for _ in range(job.warmup):
        est = [timing.timed_call(eager, dev)[0], timing.timed_call(test, dev)[0]]
    t_warm = timing.peak_memory(test, 3, dev)
    fns = [eager, test]
    if job.timer == "cudagraph":
        chan.stage("capture CUDA graphs")
        fns = [timing.cuda_graph_replay(eager), timing.cuda_graph_replay(test)]
    n = timing.samples_for(max(est), job.repeat, job.budget_s)
    chan.stage(f"timing ({n} interleaved samples each, {job.timer})")
    e_s, t_s = timing.interleaved(fns, n, timer=job.timer, device=dev, block_hint=max(est))
    counts = torchapi.dynamo_counts()
    kernels = torchapi.generated_kernels()
    out.update({
        "eager": e_s, "test": t_s,
        "memory": _memory(t_cold, t_warm), "eager_memory": _memory(e_cold, e_warm),
        "graphs": counts["graphs"] - counts0["graphs"] if is_compiled else None,
        "breaks": first_breaks if is_compiled else None,
        "recompiles": _recompiles() if is_compiled else None,
        "kernels": kernels - kernels0 if is_compiled and kernels is not None and kernels0 is not None else None,
    })
    if dev.startswith("cuda") or job.profile_kernels:
        chan.stage("profile kernels" if job.profile_kernels else "count launches")
        rows = _profile(test, dev, PROFILE_ITERS if job.profile_kernels else 1)
        if dev.startswith("cuda"):
            out["launches"] = sum(r["calls"] for r in rows)
        if job.profile_kernels:
            out["kernel_rows"] = rows
            out["kernel_table"] = msgspec.to_builtins(chan.store.put(msgspec.json.encode(rows), "application/json",
                                                                     ".json"))
    if job.accuracy:
        chan.stage("accuracy (float64 reference)")
        out.update(_accuracy(job, loaded, model_c))
    return out


def _memory(cold: tuple[int, int] | None, warm: tuple[int, int] | None) -> dict[str, int] | None:
    if cold is None and warm is None:
        return None
    m: dict[str, int] = {}
    if cold is not None:
        m["cold_allocated"], m["cold_reserved"] = cold
    if warm is not None:
        m["warm_allocated"], m["warm_reserved"] = warm
    return m


def _profile(fn: Callable[[], Any], dev: str, iters: int) -> list[dict[str, Any]]:
    """The kernels of ``iters`` calls, per iteration, slowest first: device kernels on CUDA, the
    operators' own CPU time (Inductor's C++ kernels by name) on a CPU."""
    import warnings

    from torch.profiler import ProfilerActivity, profile

    cuda = dev.startswith("cuda")
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Profiler clears events at the end of each cycle": one cycle here
        with profile(activities=acts) as prof:
            for _ in range(iters):
                fn()
            timing.sync(dev)
        events = prof.key_averages()
    rows = []
    for e in events:
        if cuda:
            if not torchapi.is_device_kernel(e):
                continue
            us = torchapi.device_us(e)
        else:  # operators and Inductor's C++ kernels; not Dynamo's or AOTAutograd's Python wrappers
            if not (e.key.startswith("aten::") or "cpp_fused" in e.key or "kernel" in e.key):
                continue
            us = float(e.self_cpu_time_total)
        if us > 0 or cuda:
            rows.append({"name": e.key, "calls": e.count / iters, "us": us / iters})
    total = sum(r["us"] for r in rows) or 1.0
    for r in rows:
        r["share"] = r["us"] / total
    return sorted(rows, key=lambda r: -r["us"])


def _clone(leaves: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    # a compiled side's outputs may live in buffers the next call reuses (CUDA graphs): keep copies
    return [(k, v.detach().clone() if hasattr(v, "detach") else v) for k, v in leaves]


def _leaves(loaded: Any, fn: Any, model: Any, inputs: Any, mode: str, seed: int) -> list[tuple[str, Any]]:
    import torch

    from pt2kit.runtime.worker.outputs import flatten
    from pt2kit.runtime.worker.training import train_step

    torch.manual_seed(seed)
    if mode == "infer":
        return _clone(flatten(loaded.call(fn, inputs)))
    named = list(getattr(model, "named_parameters", list)())  # a function has none
    out = train_step(lambda: loaded.call(fn, inputs), [p for _, p in named])
    grads = [(f"grad.{n}", p.grad) for n, p in named if p.grad is not None]
    return _clone(flatten(out)) + _clone(grads)


def _accuracy(job: Any, loaded: Any, model_c: Any) -> dict[str, Any]:
    """pass / fail_accuracy against eager, with PyTorch's float64 rule, under PyTorch's accuracy-harness
    precision (``--precision harness``: TF32 off...; the timings before ran under the model's own): the
    timed compiled model in infer mode (Dynamo recompiles it where a TF32 flag changed); in train mode a
    fresh compile with Inductor's fallback_random, so dropout draws the same numbers on both sides.
    Under ``as-configured`` a failure with reduced-precision modes on is judged again under the
    harness's settings, and passes with a note naming the modes when it passes then."""
    from pt2kit.runtime.common.precision import HARNESS, differences, precision_state, reduced_modes, use_precision

    own = precision_state()
    if job.precision == "harness":
        use_precision(HARNESS)
    out = _judged(job, loaded, model_c)
    if out["accuracy"] != "fail_accuracy" or job.precision == "harness" or not differences(own):
        return out
    use_precision(HARNESS)
    again = _judged(job, loaded, None)
    if again["accuracy"] == "pass":
        modes = ", ".join(reduced_modes(own, job.device)) or ", ".join(differences(own))
        return {"accuracy": "pass", "accuracy_note": f"{modes}: {out['accuracy_note']}; passes under PyTorch's "
                "accuracy-harness settings (TF32 off, deterministic cuDNN, fallback_random)"}
    return out


def _judged(job: Any, loaded: Any, model_c: Any) -> dict[str, Any]:
    """The accuracy status under the settings in force now (``model_c`` None: compile afresh)."""
    import contextlib

    from pt2kit.runtime.worker.accuracy import float64_copy, float64_mode, judge_leaves

    mode, seed = job.mode, job.seed
    # each side on its own copy of the inputs, as kdiff's sides (pt2kit_portable.copy_inputs: inputs that
    # shared a storage share it): a model that writes into its input (x.neg_()) handed the compiled side what
    # eager left, and a right compile failed accuracy
    base = _leaves(loaded, loaded.model, loaded.model, copy_inputs(loaded.inputs), mode, seed)
    if job.backend == "eager":
        return {"accuracy": "pass"}
    patch = contextlib.nullcontext()
    if mode == "train" or model_c is None:
        reset_dynamo()
        patch = torchapi.fallback_random() if mode == "train" else patch
        model_c = compiled(loaded.model, job.backend)
    with patch:
        try:
            test = _leaves(loaded, model_c, loaded.model, copy_inputs(loaded.inputs), mode, seed)
        except Exception as e:
            return {"accuracy": "fail_to_run", "accuracy_note": f"{job.backend}: {exception_line(e)}"}
    fp64, note = None, None
    try:
        m64, i64 = float64_copy(loaded.model, loaded.inputs)
        with float64_mode():
            fp64 = _leaves(loaded, m64, m64 if mode == "train" else None, i64, mode, seed)
        del m64, i64
    except Exception as e:
        note = f"the float64 run fails ({exception_line(e)}): judged by assert_close alone"
    why = judge_leaves(test, base, fp64)
    if why:
        return {"accuracy": "fail_accuracy", "accuracy_note": why}
    return {"accuracy": "pass", "accuracy_note": note}
