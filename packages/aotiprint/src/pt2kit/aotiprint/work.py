"""The child side of aotiprint: export, compile, load and run, each a stage a crash is reported in.

AOTI: the printer writes to the C stdout, which is pointed at ``job.log`` (unbuffered, so a
segfault loses nothing) for the run only; the parent parses that file, even after a crash.
JIT: the probes of :mod:`.jitwrap` emit `kernel` records from here as the kernels run.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from collections.abc import Iterator
from typing import Any

import msgspec

from pt2kit.runtime.worker.main import Channel

from .job import Job


class Result(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`run` returns to the parent (a dict across the process boundary; :mod:`.drive` converts
    it back once): which NaN/Inf the outputs and the eager run hold, and the AOTI run's package and saves."""

    outputs_nonfinite: list[str] | None = None  # non-finite kinds in the compiled outputs
    eager_nonfinite: list[str] | None = None  # ...in the eager run (None with no model: a package)
    launches: int = 0  # --jit: launches recorded
    package: str | None = None  # AOTI: the package run
    saved: dict[str, Any] = {}  # --detail save: each saved file's argument, by path
    nothing_compiled: str | None = None  # --jit: Dynamo handed Inductor no graph, and why


def _split(inputs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return ((), dict(inputs)) if isinstance(inputs, dict) else (tuple(inputs), {})


@contextlib.contextmanager
def _c_stdout_to(path: str) -> Iterator[None]:
    """C/C++ stdout (printf, std::cout) into ``path``, unbuffered, for the block."""
    sys.stdout.flush()
    libc = ctypes.CDLL(None)
    try:
        c_stdout = ctypes.c_void_p.in_dll(libc, "stdout")
        libc.fflush(c_stdout)
        libc.setvbuf(c_stdout, None, 2, 0)  # _IONBF: every line reaches the file before the next kernel
    except (ValueError, AttributeError):
        c_stdout = None
    saved = os.dup(1)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.close(fd)
    try:
        yield
    finally:
        if c_stdout is not None:
            libc.fflush(c_stdout)
        os.dup2(saved, 1)
        os.close(saved)


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        torch.cuda.synchronize()


def _as_module(model: Any) -> Any:
    import torch

    if isinstance(model, torch.nn.Module):
        return model

    class Wrapped(torch.nn.Module):
        def forward(self, *args: Any, **kwargs: Any) -> Any:
            return model(*args, **kwargs)

    return Wrapped()


_NODES = "inductor_provenance_tracking_node_mappings"
_STACKS = "inductor_provenance_tracking_kernel_stack_traces"


def _provenance_events(store: dict[str, Any]) -> Any:
    def on_event(meta: dict[str, Any], payload: str | None) -> None:
        art = meta.get("artifact") or {}
        if art.get("name", "").startswith("inductor_provenance_tracking") and payload:
            store[art["name"]] = payload
    return on_event


def _provenance(chan: Channel, arts: dict[str, Any]) -> None:
    from .provenance import resolve

    prov = resolve(arts.get(_NODES), arts.get(_STACKS))
    if prov:
        chan.note("provenance", prov)


def _kernel_arg(chan: Channel, mode: str, name: str, value: Any, uninitialised: bool, when: str,
                launch: int, kernel: str) -> Any:
    import torch

    from pt2kit.runtime.common.tensors import save_tensor
    from pt2kit.schema import KernelArg, Stats
    from pt2kit.schema.records import num

    from .stats import tensor_stats

    if isinstance(value, (int, float, bool)) and not isinstance(value, torch.Tensor):
        v = float(value)
        return KernelArg(name=name, numel=1, dtype=type(value).__name__,
                         stats=Stats(numel=1, mean=num(v), min=num(v), max=num(v)))
    if not isinstance(value, torch.Tensor):
        return None
    arg = KernelArg(name=name, numel=value.numel(), dtype=str(value.dtype).removeprefix("torch."),
                    shape=list(value.shape), stride=list(value.stride()) if value.layout == torch.strided else None,
                    device=str(value.device), uninitialised=uninitialised)
    if uninitialised:
        return arg
    s = tensor_stats(value)
    arg.stats = Stats(numel=s["numel"], mean=num(s["mean"]), min=num(s["min"]), max=num(s["max"]),
                      nan=s["nan"], inf=s["inf"], of="magnitude" if value.is_complex() else None)
    if mode == "save":
        arg.blob = save_tensor(chan.store, value)
    return arg


def _jit(job: Job, chan: Channel, lm: Any) -> dict[str, Any]:
    import torch

    from pt2kit.runtime.common.config import apply_config
    from pt2kit.runtime.common.outcome import Compiled
    from pt2kit.runtime.shims.torchapi import generating, reset_dynamo
    from pt2kit.runtime.worker.torchtrace import capture_trace
    from pt2kit.schema import Kernel

    from . import probe, torchapi
    from .jitwrap import instrument
    from .provenance import for_launch, resolve

    mode, device = job.detail, job.device
    launches: list[str] = []

    arts: dict[str, Any] = {}
    prov: dict[str, Any] = {}
    nth: dict[str, int] = {}

    def emit(kernel: str, launch: int, when: str, args: list[Any], site: int, finding: str | None) -> None:
        # the graph compiles before its first kernel runs: its provenance is in by now
        if arts and prov.get("_from") != id(arts.get(_NODES)):
            prov.clear()
            prov.update(resolve(arts.get(_NODES), arts.get(_STACKS)))
            prov["_from"] = id(arts.get(_NODES))
            nth.clear()
        if when == "before":
            nth[kernel] = nth.get(kernel, -1) + 1
        p = for_launch(prov, kernel, max(nth.get(kernel, 0), 0)) or {}
        chan.emit_new(Kernel, model=job.label, name=kernel, launch=launch, when=when, args=args,
                      finding=finding, nodes=p.get("nodes", []), sources=p.get("sources", []), code=p.get("code", []))

    def on_launch(kernel: str) -> None:
        launches.append(kernel)
        if job.ima:
            chan.note("last_kernel", kernel)

    rec = probe.Recorder(mode, job.kernels,
                         lambda *a: _kernel_arg(chan, mode, *a), emit, on_launch)
    if job.ima and device.startswith("cuda"):
        rec.sync = lambda: _sync(device)

    def rewrite(src: str, is_cpp: bool) -> str:
        return src if is_cpp else instrument(src)[0]

    args, kwargs = _split(lm.inputs)
    cfg = torchapi.provenance_config()
    chan.stage("compile and run")
    with apply_config(job.config), generating(), torchapi.inductor_config(cfg), \
            torchapi.rewrite_wrapper(rewrite), capture_trace(_provenance_events(arts)), torch.no_grad():
        reset_dynamo()
        compiled = torch.compile(lm.model, backend="inductor")
        probe.RECORDER = rec
        try:
            with Compiled() as watched:
                out = compiled(*args, **kwargs)
            _sync(device)
        finally:
            probe.RECORDER = None
    return {"launches": len(launches), "nothing_compiled": watched.nothing, **_nonfinite(chan, lm, out, args, kwargs)}


def _nonfinite(chan: Channel, lm: Any | None, out: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Non-finite kinds in the compiled outputs and in the eager run (None where there is no model)."""
    from .nonfinite import eager_kinds, output_kinds

    result: dict[str, Any] = {"outputs_nonfinite": output_kinds(out), "eager_nonfinite": None}
    if lm is not None:
        chan.stage("eager run (which NaN/Inf the model makes itself)")
        blind: list[str] = []
        result["eager_nonfinite"] = eager_kinds(lm.model, args, kwargs, blind)
        if blind:
            chan.note("hops", "the eager NaN/Inf watch ran " + ", ".join(blind)
                      + " whole: what it makes inside is judged by its outputs alone")
    return result


def _aoti(job: Job, chan: Channel, lm: Any | None, inputs_value: Any = None) -> dict[str, Any]:
    import torch

    from pt2kit.runtime.common.config import apply_config
    from pt2kit.runtime.shims.torchapi import generating
    from pt2kit.runtime.worker.torchtrace import capture_trace

    from . import torchapi
    from .wrapper import number_save_sites

    mode, device = job.detail, job.device
    package = job.package
    if package is None:
        assert lm is not None
        args, kwargs = _split(lm.inputs)
        chan.stage("export")
        with torch.no_grad():
            ep = torch.export.export(_as_module(lm.model), args, kwargs)
        chan.stage("compile")
        package = os.path.join(job.workdir, "model.pt2")  # the parent keeps it at --save-package
        cfg = {**torchapi.provenance_config(), **torchapi.printer_config(mode, job.kernels)}
        arts: dict[str, Any] = {}

        def rewrite(src: str, is_cpp: bool) -> str:
            return number_save_sites(src) if is_cpp and mode == "save" else src

        with apply_config(job.config), generating(), capture_trace(_provenance_events(arts)), \
                torchapi.rewrite_wrapper(rewrite):
            package = torchapi.compile_package(ep, package, cfg)
        chan.note("package", package)
        _provenance(chan, arts)
    else:
        args, kwargs = _split(inputs_value if inputs_value is not None else lm.inputs)
    if mode == "save":
        os.chdir(job.workdir)  # the stock printer saves under ./tmp/
    chan.stage("load")
    runner = torchapi.load_package(package, device)
    chan.stage("run")
    with _c_stdout_to(job.log), torch.no_grad():
        out = runner(*args, **kwargs)
        _sync(device)
    saved: dict[str, Any] = {}
    if mode == "save":
        saved = _collect_saved(job, chan)
    return {"package": package, "saved": saved, **_nonfinite(chan, lm, out, args, kwargs)}


def _collect_saved(job: Job, chan: Channel) -> dict[str, Any]:
    """Each file the printer saved, into the store with its stats (read back with weights_only)."""
    import msgspec
    import torch

    from .printer import parse_file

    out: dict[str, Any] = {}
    for path in parse_file(job.log).saved:
        try:
            t = torch.load(path, weights_only=True, map_location="cpu" if job.device == "cpu" else None)
        except Exception as e:  # a file the printer half wrote: say so, keep the rest
            out[path] = {"error": f"{type(e).__name__}: {e}"}
            continue
        arg = _kernel_arg(chan, "save", "", t, False, "", 0, "")
        out[path] = msgspec.to_builtins(arg) if arg is not None else {}
        with contextlib.suppress(OSError):
            os.unlink(path)
    return out


def run(payload: dict[str, Any], chan: Channel) -> dict[str, Any]:
    import warnings

    import torch

    warnings.filterwarnings("ignore", category=FutureWarning)  # torch.export's deprecations: not the user's
    warnings.filterwarnings("ignore", message="dynamo_pgo force disabled")

    from pt2kit.runtime.common.errors import UsageError
    from pt2kit.runtime.common.modelfile import load_model
    from pt2kit.runtime.common.tensors import first_jagged
    from pt2kit.schema import Model

    job = msgspec.convert(payload, Job)
    lm = None
    inputs_value = None
    chan.stage("load model")
    if job.package:
        if job.inputs:
            inputs_value = _inputs_from(job.inputs, job.device)
    else:
        lm = load_model(job.model, job.device)
        if job.emit_model:
            from pt2kit.runtime.common.modelfile import model_fields

            chan.emit_new(Model, **model_fields(lm, job.device, job.config))
    if not job.jit:
        nested = first_jagged(inputs_value if lm is None else lm.inputs)
        if nested is not None:
            raise UsageError(f"{nested} is a torch.nested jagged tensor: torch.export, and so AOTInductor, "
                             "takes none")
    try:
        return _jit(job, chan, lm) if job.jit else _aoti(job, chan, lm, inputs_value)
    except Exception as e:  # the model's own failure (its eager run, without grad as ours, fails too)
        if lm is None:
            raise
        from pt2kit.runtime.common.outcome import model_or_compiler

        def eager() -> Any:
            with torch.no_grad():
                return lm.call(lm.model, lm.inputs)

        raise model_or_compiler(lm.label, "eager run", e, eager) from None


def _inputs_from(spec: str, device: str) -> Any:
    """``FILE.py`` (its ``example_inputs``) or ``FILE.py:NAME`` (a value, or a function returning one)."""
    import torch

    from pt2kit.runtime.common.errors import ModelFileError
    from pt2kit.runtime.common.modelfile import exec_file, parse_spec

    path, name = parse_spec(spec)
    if not path.is_file():
        raise ModelFileError(f"{path}: no such inputs file")
    mod = exec_file(path)
    key = name or "example_inputs"
    if not hasattr(mod, key):
        raise ModelFileError(f"{path}: defines no `{key}` (--inputs FILE.py[:NAME] names the example inputs)")
    value = getattr(mod, key)
    if callable(value) and not isinstance(value, torch.Tensor):
        value = value()
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], torch.nn.Module):
        value = value[1]  # a (model, inputs) builder, as FILE.py:NAME is for models
    if isinstance(value, torch.Tensor):
        value = (value,)
    if not isinstance(value, (tuple, list, dict)):
        raise ModelFileError(f"{spec}: the inputs must be a tuple of args or a dict of kwargs, not {type(value).__name__}")

    def move(x: Any) -> Any:
        return x.to(device) if isinstance(x, torch.Tensor) else x

    return {k: move(v) for k, v in value.items()} if isinstance(value, dict) else tuple(move(v) for v in value)
