"""minify's worker side: one warm process answers many requests (torch imported once).

``capture``: load the model, capture its forward aten graph(s) as :mod:`.ir` data, then run it
eagerly and with the backend and say how it fails (this may kill the process: the parent then knows
the failure is a crash). ``query``: run one candidate through :mod:`.harness` (what its repro will
run). ``localize``: for an accuracy failure, the first node whose compiled value fails the verdict.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import msgspec

from pt2kit.runtime.hops import hop_name

from . import harness, ir
from .job import Job

# names a candidate's module itself uses: a graph value of that name (a user's variable, in a Dynamo
# graph) is renamed, so it cannot hide them
RESERVED = frozenset({"torch", "math", "operator", "self", "Repro"})


def _name(node: Any) -> str:
    return f"{node.name}_" if node.name in RESERVED else node.name


def _fmt(a: Any) -> str:
    import torch

    if isinstance(a, torch.fx.Node):
        return _name(a)
    if isinstance(a, list):
        return "[" + ", ".join(_fmt(x) for x in a) + "]"
    if isinstance(a, tuple):
        return "(" + ", ".join(_fmt(x) for x in a) + ("," if len(a) == 1 else "") + ")"
    if isinstance(a, dict) and all(isinstance(k, str) for k in a):
        return "{" + ", ".join(f"{k!r}: {_fmt(v)}" for k, v in a.items()) + "}"
    if isinstance(a, torch.dtype | torch.layout | torch.memory_format):
        return str(a)
    if isinstance(a, torch.device):
        return f"torch.device({str(a)!r})"
    if isinstance(a, float) and not math.isfinite(a):
        return f"float({str(a)!r})"
    if isinstance(a, bool | int | float | str | slice) or a is None or a is Ellipsis:
        return repr(a)
    raise ValueError(f"an argument a standalone repro cannot write: {type(a).__name__}")


def _dotted(t: Any) -> str | None:
    """The name a repro calls ``t`` by (a torch function of a Dynamo graph: ``torch.relu``,
    ``torch.nn.functional.layer_norm``), when that name leads back to ``t`` itself; else None."""
    import importlib

    name, module = getattr(t, "__name__", None), getattr(t, "__module__", None)
    if not isinstance(name, str):
        return None
    tries = [f"torch.{name}", f"torch.nn.functional.{name}"]
    if isinstance(module, str) and module.split(".")[0] in ("torch", "math", "_operator", "operator"):
        module = {"_operator": "operator"}.get(module, module)
        tries += [f"{module}.{name}", f"{module}.{getattr(t, '__qualname__', name)}"]
    for dotted in tries:
        head, *rest = dotted.split(".")
        try:
            obj: Any = importlib.import_module(head)
            for part in rest:
                obj = getattr(obj, part)
        except (ImportError, AttributeError):
            continue
        if obj is t:
            return dotted
    return None


def _subgraph_def(name: str, gm: Any) -> list[str]:
    """A higher-order op's subgraph as a nested function a repro defines before the op's call (its
    own subgraphs nested inside it); ValueError where some node has no source form."""
    import torch

    params = [_name(n) for n in gm.graph.nodes if n.op == "placeholder"]
    lines = [f"def {name}({', '.join(params)}):"]
    for n in gm.graph.nodes:
        if n.op == "get_attr":
            sub = getattr(gm, str(n.target), None)
            if not isinstance(sub, torch.fx.GraphModule):
                raise ValueError(f"a subgraph attribute a standalone repro cannot write: {n.target}")
            lines += ["    " + ln for ln in _subgraph_def(_name(n), sub)]
        elif n.op == "output":
            lines.append(f"    return {_fmt(n.args[0])}")
        elif n.op != "placeholder":
            lines.append(f"    {_name(n)} = {_expr(n)[0]}")
    return lines


def _expr(n: Any) -> tuple[str, str]:
    """(the expression, the op's name) of a call node: an aten op, a torch function or a tensor
    method (a Dynamo graph), an operator."""
    import operator

    import torch

    t = n.target
    args = [_fmt(a) for a in n.args] + [f"{k}={_fmt(v)}" for k, v in n.kwargs.items()]
    if n.op == "call_method":
        if not n.args or not isinstance(t, str) or not t.isidentifier():
            raise ValueError(f"a method call a standalone repro cannot write: {t}")
        return f"{_fmt(n.args[0])}.{t}({', '.join(args[1:])})", f"Tensor.{t}"
    if n.op != "call_function":
        raise ValueError(f"a node a standalone repro cannot write: {n.op}")
    if t is operator.getitem:
        return f"{_fmt(n.args[0])}[{_fmt(n.args[1])}]", "operator.getitem"
    if isinstance(t, torch._ops.OpOverload | torch._ops.OpOverloadPacket):
        return f"torch.ops.{t}({', '.join(args)})", str(t)
    hop = hop_name(t)
    if hop is not None and getattr(torch.ops.higher_order, hop, None) is t:
        return f"torch.ops.higher_order.{hop}({', '.join(args)})", f"higher_order.{hop}"
    dotted = _dotted(t)
    if dotted is None:
        raise ValueError(f"a call a standalone repro cannot write: {t}")
    return f"{dotted}({', '.join(args)})", dotted


# a tensor this small keeps its real values, for a failure seeded values do not show (ties, exact
# zeros, a mask's pattern); a repro embeds them as literals, so a larger one is only ever seeded
EXACT_MAX = 1024


def _values(real: Any, shape: list[int]) -> list[Any] | None:
    import torch

    if not isinstance(real, torch.Tensor) or real.is_complex() or real.numel() > EXACT_MAX \
            or list(real.shape) != shape or real.layout != torch.strided:
        return None
    flat = real.detach().cpu().reshape(-1).tolist()
    return [v if not isinstance(v, float) or math.isfinite(v) else str(v) for v in flat]


def _spec(val: Any, real: Any, device: str) -> ir.Spec | None:
    import torch

    if isinstance(val, torch.Tensor):
        lo = hi = None
        if isinstance(real, torch.Tensor) and not real.is_complex() and real.dtype != torch.bool and real.numel():
            # the range the real values took: an index stays in bounds, a value a log reads stays positive
            finite = real[torch.isfinite(real)] if real.is_floating_point() else real
            if finite.numel():
                lo, hi = float(finite.min()), float(finite.max())
        shape = [int(d) for d in val.shape]
        stride = [int(s) for s in val.stride()]
        return ir.Spec("tensor", shape, stride, str(val.dtype).removeprefix("torch."), device, lo, hi,
                       values=_values(real, shape))
    if isinstance(real, bool | int | float) and (not isinstance(real, float) or math.isfinite(real)):
        return ir.Spec("scalar", value=real)
    return None


def to_ir(gm: Any, args: list[Any], index: int, device: str, level: str = "aten",
          subgraph: str | None = None) -> ir.Graph:
    """The graph as :mod:`.ir` data, each value's spec taken from one run of it on ``args`` (its
    first call's real arguments). ``level``: "aten" (AOTAutograd's forward graph) or "dynamo" (the
    graph Dynamo hands a backend: torch functions and tensor methods)."""
    import torch

    from pt2kit.runtime.fxmeta import node_place

    values: dict[str, Any] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n: Any) -> Any:
            out = super().run_node(n)
            values[n.name] = out
            return out

    with torch.no_grad():
        Recorder(gm).run(*args)
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    outputs = {a.name for a in out_node.all_input_nodes}
    nodes, dynamic = [], False
    for n in gm.graph.nodes:
        val = n.meta.get("val", n.meta.get("example_value"))
        if isinstance(val, torch.SymInt) or (isinstance(val, torch.Tensor)
                                            and any(isinstance(d, torch.SymInt) for d in val.shape)):
            dynamic = True
        spec = _spec(val if val is not None else values.get(n.name), values.get(n.name), device)
        sub = getattr(gm, str(n.target), None) if n.op == "get_attr" else None
        if isinstance(sub, torch.fx.GraphModule):  # a higher-order op's subgraph: a nested function
            try:
                body = _subgraph_def(_name(n), sub)
            except ValueError:
                body = []
            nodes.append(ir.Node(name=_name(n), expr=ir.UNWRITABLE if not body else ir.DEFINED, op="subgraph",
                                 body=body))
        elif n.op in ("placeholder", "get_attr"):  # a constant attribute is fed in like an input
            nodes.append(ir.Node(name=_name(n), op="input", spec=spec))
        elif n.op != "output":
            try:
                expr, op = _expr(n)
            except ValueError:
                expr, op = ir.UNWRITABLE, str(n.target)
            place, code, _ = node_place(n)
            nodes.append(ir.Node(name=_name(n), expr=expr, deps=[_name(d) for d in n.all_input_nodes],
                                 op=op, spec=spec, place=place, code=code, output=n.name in outputs))
    return ir.Graph(index=index, nodes=nodes, dynamic=dynamic, level=level, subgraph=subgraph)


def _inside(gm: Any, args: list[Any], index: int, device: str) -> list[ir.Graph]:
    """The subgraphs of ``gm``'s higher-order ops that ran (a cond's taken branch, a loop body on its
    first iteration's values), each as a graph of its own: a bug inside one is cut to a repro without
    the op around it where it shows so (else the search goes on to the whole graph, the op kept whole)."""
    from pt2kit.kdiff.descend import entered
    from pt2kit.runtime.hops import hop_name, is_hop, materialise

    out = []
    for n in gm.graph.nodes:
        if n.op == "call_function" and is_hop(n.target):
            with contextlib.suppress(Exception):  # a subgraph that will not run on its own is not searched
                for attr, sub, sub_args in entered(gm, args, n):
                    out.append(to_ir(materialise(sub), sub_args, index, device,
                                     subgraph=f"{hop_name(n.target)} → {attr}"))
    return out


def _resolved_config(config: dict[str, str]) -> dict[str, dict[str, str]]:
    """{module: {key: the typed value's literal text}}: the parent, every query and the repro get the
    value this worker ran the original under, types included (a tuple stays a tuple)."""
    from pt2kit.runtime.config import literal, resolve

    out: dict[str, dict[str, str]] = {}
    for module, key, value in resolve(config):
        out.setdefault(module.__name__, {})[key] = literal(value)
    return out


def _typed(config: dict[str, dict[str, str]]) -> dict[str, dict[str, Any]]:
    from pt2kit.runtime.config import from_literal

    return {m: {k: from_literal(v) for k, v in s.items()} for m, s in config.items()}


def capture(payload: dict[str, Any], send: Any) -> dict[str, Any]:
    """:func:`_capture`, leaving this warm worker's settings as they were before the model file ran:
    the candidates it judges next run under their own config only."""
    from pt2kit.runtime.config import kept_settings

    with kept_settings():
        return _capture(payload, send)


def _capture(payload: dict[str, Any], send: Any) -> dict[str, Any]:
    """Graphs first (sent at once, so a crash later still leaves them), then the original failure."""
    import torch

    from pt2kit.kdiff.localize import capture_forward
    from pt2kit.runtime.config import apply_config, worker_settings
    from pt2kit.runtime.errors import UsageError
    from pt2kit.runtime.modelfile import load_model
    from pt2kit.runtime.outputs import flatten
    from pt2kit.runtime.tensors import first_jagged, unjag  # a jagged output: its values and offsets

    job = msgspec.convert(payload, Job)
    send({"t": "stage", "stage": "load"})
    loaded = load_model(job.model, device=job.device, from_stream=job.from_stream)
    with apply_config(job.config):  # what the run compiles under: the file's own settings, the
        settings = worker_settings()  # environment's and --config's; the search starts from them all
        if job.emit_model:
            from pt2kit.runtime.modelfile import model_fields

            send({"t": "model", "fields": msgspec.to_builtins(model_fields(loaded, job.device, job.config))})
    nested = first_jagged(loaded.inputs)
    if nested is not None:  # AOTAutograd's capture of a jagged input fails: no graph to cut, said so
        raise UsageError(f"{nested} is a torch.nested jagged tensor: minify cannot capture the aten graph of a "
                         "model that takes one yet (kdiff, benchrun and fxcheck can run it)")
    config = _resolved_config({**settings, **job.config})  # a --config key torch's repro writer skips stays
    precision = _precision(job.precision)  # after the settings: the harness's fallback_random is not the file's
    send({"t": "stage", "stage": "capture"})
    dynamo: list[Any] = []
    with apply_config(job.config):
        try:
            captured = capture_forward(loaded.model, lambda fn: loaded.call(fn), dynamo=dynamo)
        except Exception:  # AOTAutograd cannot trace it: the failure is before the aten graph
            captured = []
    graphs = _graphs(captured, dynamo, job)
    send({"t": "graphs", "graphs": msgspec.to_builtins(graphs), "config": config, "precision": precision})
    if job.profile is not None:  # fxcheck's rules on the graphs the backend gets: nothing to run
        return {"kind": "violation", "want": _first_violation(captured, job.profile)}
    if job.failure == "violation":  # judged on the graphs alone: nothing to run
        return {"kind": "violation"}
    send({"t": "stage", "stage": "reproduce"})
    torch.manual_seed(job.seed)
    with torch.no_grad():
        eager = unjag(flatten(loaded.call(loaded.model)))
    harness.sync()  # an eager kernel's device-side error is eager's: raised here, not in the compiled run
    backend = _backend(job.backend)
    try:
        torch._dynamo.reset()
        with apply_config(job.config), torch.no_grad():
            torch.manual_seed(job.seed)
            if backend == "aoti":
                test = unjag(flatten(_aoti_call(loaded)))
            else:
                test = unjag(flatten(loaded.call(torch.compile(loaded.model, backend=backend))))
            harness.sync()  # a kernel's device-side error is the compiled side's: raised in this try
    except Exception as e:
        return {"kind": "compile-error", "signature": harness.exception_signature(e), "detail": str(e)[:2000]}
    got = harness.nonfinite([t for _, t in test])
    if got and (job.failure in ("auto", "nan")) and not harness.nonfinite([t for _, t in eager]):
        return {"kind": "nan", "signature": got}
    if job.failure == "nan" and got:
        return {"kind": "nan", "signature": f"{got} (eager too)"}
    pairs = list(zip(test, eager, strict=False))
    if job.ref == "eager" and not any(harness.differs(t, r, None) for (_, t), (_, r) in pairs):
        return {"kind": None, "detail": "passes assert_close"}  # no float64 run needed to say so
    fp64 = _float64_outputs(loaded, job.seed)
    for (name, t), (_, r) in pairs:
        why = harness.differs(t, r, fp64.get(name), job.ref, job.rule)
        if why:
            return {"kind": "accuracy", "signature": "accuracy", "detail": f"{name}: {why}",
                    "verdicts": _verdicts(t, r, fp64.get(name))}
    return {"kind": None, "detail": next((f"{n}: {_verdicts(t, r, fp64.get(n))}" for (n, t), (_, r) in pairs
                                          if harness.differs(t, r, None)), "passes")}


def _verdicts(test: Any, eager: Any, fp64: Any) -> str:
    """Both of kdiff's rules on one output, with their numbers: how much fails assert_close, and where
    the compiled and eager runs stand against float64."""
    import torch

    if not (isinstance(test, torch.Tensor) and isinstance(eager, torch.Tensor) and eager.is_floating_point()
            and test.shape == eager.shape):
        return "differs"
    atol, rtol = harness._TOL.get(eager.dtype, (1e-5, 1.3e-6))
    bad = int((~torch.isclose(test.to(eager.device), eager, rtol=rtol, atol=atol, equal_nan=True)).sum())
    said = f"fails assert_close, {100 * bad / max(eager.numel(), 1):.3g}% of elements" if bad else "passes assert_close"
    if not isinstance(fp64, torch.Tensor) or fp64.shape != test.shape:
        return said + " (no float64 run)"
    within = not harness.differs(test, eager, fp64)
    rmse = f"compiled RMSE {harness._rmse(fp64, test):.3g} vs eager {harness._rmse(fp64, eager):.3g}"
    return f"{said}, {'but is within' if within and bad else 'and is within' if within else 'and fails'} " \
           f"the float64 rule: {rmse}"


def _precision(mode: str) -> dict[str, Any]:
    """The settings the original run, every query and the repro judge under: PyTorch's accuracy
    harness's (over any the model file set), or those the model file left (as-configured)."""
    from pt2kit.runtime.precision import HARNESS, precision_state, use_precision

    if mode != "harness":
        return precision_state()
    use_precision(HARNESS)
    return dict(HARNESS)


def _float64_outputs(loaded: Any, seed: int) -> dict[str, Any]:
    """The model's outputs from a float64 copy of it (empty where that run fails): the accuracy
    verdict's reference for how far rounding alone goes."""
    import torch

    from pt2kit.runtime.accuracy import float64_copy, float64_mode
    from pt2kit.runtime.outputs import flatten
    from pt2kit.runtime.tensors import unjag

    with contextlib.suppress(Exception):
        m64, in64 = float64_copy(loaded.model, loaded.inputs)
        with torch.no_grad(), float64_mode():
            torch.manual_seed(seed)
            return dict(unjag(flatten(loaded.call(m64, in64))))
    return {}


def _graphs(aten: list[Any], dynamo: list[Any], job: Job) -> list[ir.Graph]:
    """The graphs to search, in order. A backend of the user's file is handed Dynamo's graphs: those.
    Inductor and aot_eager: the forward aten graphs (what Inductor gets), then Dynamo's, for a failure
    the aten graphs do not show (AOTAutograd's own, or one that needs the torch-level ops). A
    violation is an aten op's: aten graphs only."""
    aten_only = job.profile is not None or job.failure == "violation" or job.backend == "aoti"
    users = job.backend not in ("inductor", "aot_eager", "aoti")
    aten_ir = [] if users else [to_ir(gm, args, i, job.device) for i, (gm, args) in enumerate(aten)]
    if aten_only:
        return aten_ir
    # a higher-order op's subgraph first: where the failure lies inside, the repro is that alone
    aten_ir = [g for i, (gm, args) in enumerate(aten) if not users for g in _inside(gm, args, i, job.device)] + aten_ir
    dynamo_ir = []
    for i, (gm, args) in enumerate(dynamo):
        with contextlib.suppress(Exception):  # a graph that will not run on its own arguments is not searched
            dynamo_ir.append(to_ir(gm, args, i, job.device, level="dynamo"))
    return aten_ir + dynamo_ir


def _first_violation(captured: list[Any], profile: Any) -> dict[str, Any] | None:
    """The first finding of fxcheck's checks, on the forward graphs, that minify can keep."""
    from pt2kit.fxcheck.checks import run_checks
    from pt2kit.fxcheck.graphview import build
    from pt2kit.schema import SCHEMA_MAJOR, Violation

    from .records import wanted

    for i, (gm, _) in enumerate(captured):
        for f in run_checks(build(gm, "forward", i), profile):
            t = f.tensor
            rec = Violation(v=SCHEMA_MAJOR, run="-", constraint=f.constraint, message=f.message, phase="forward", graph=i,
                            node=f.node.name, op=f.op or f.node.op, dtype=t.dtype if t else None)
            want = wanted(rec)
            if want is not None:
                return want
    return None


def _aoti_call(loaded: Any) -> Any:
    import torch

    args = loaded.inputs if isinstance(loaded.inputs, tuple) else ()
    kwargs = loaded.inputs if isinstance(loaded.inputs, dict) else {}
    return harness.aoti_run(torch.export.export(loaded.model, args, kwargs), args, kwargs)


def _backend(spec: str) -> Any:
    if spec in ("inductor", "aot_eager", "eager", "aoti"):
        return spec
    from pt2kit.runtime.modelfile import exec_file, parse_spec

    path, name = parse_spec(spec)
    return getattr(exec_file(path.resolve()), name or "backend")


def _module(source: str) -> Any:
    import operator

    import torch

    ns: dict[str, Any] = {"torch": torch, "operator": operator, "math": math}  # what a candidate may name
    exec(compile(source, "<candidate>", "exec"), ns)  # our own generated source, never a stream's
    return ns["Repro"]


def query(payload: dict[str, Any], send: Any) -> dict[str, Any]:
    """One candidate: does it still fail, with which signature."""
    cls = _module(payload["source"])
    failure = payload["failure"]
    inputs = harness.make_inputs([tuple(s) for s in payload["inputs"]], payload.get("seed", 0))
    if failure["kind"] == "violation":
        found = harness.violations(cls(), inputs, failure)
        return {"fails": bool(found), "signature": "violation" if found else "clean", "detail": ""}
    fails, sig, detail = harness.outcome(cls(), inputs, _backend(payload["backend"]), _typed(payload["config"]), failure,
                                         payload.get("dynamic", False))
    return {"fails": fails, "signature": sig, "detail": detail[:2000]}


def localize(payload: dict[str, Any], send: Any) -> dict[str, Any]:
    """The first node, in graph order, whose compiled value fails the accuracy verdict (one compile of
    the candidate with every tensor node an output)."""
    cls = _module(payload["source"])
    harness.settle(payload["failure"])
    inputs = harness.make_inputs([tuple(s) for s in payload["inputs"]], payload.get("seed", 0))
    names = payload["names"]
    eager = harness.run_eager(cls(), harness.fresh(inputs))
    fp64 = harness.run_eager(cls(), harness.fresh(inputs), float64=True)
    with harness.apply_config(_typed(payload["config"])):
        test = harness.compile_and_run(cls(), harness.fresh(inputs), _backend(payload["backend"]),
                                       payload.get("dynamic", False))
    for name, t, r, f in zip(names, test, eager, fp64, strict=False):
        if harness.differs(t, r, f, payload["failure"].get("ref", "eager"), payload["failure"].get("rule", "fp64")):
            return {"node": name}
    return {"node": None}


HANDLERS = {"capture": capture, "query": query, "localize": localize}
