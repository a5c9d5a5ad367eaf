"""minify's worker side: one warm process answers many requests (torch imported once).

``original``: load the model, take its forward aten graph(s) as :mod:`.ir` data (``--mode train``:
its forward and backward graphs, :mod:`.train`), then run it eagerly and with the backend and say how
it fails (:mod:`.infer`, :mod:`.train`; this may kill the process: the parent then knows the failure
is a crash). ``query``: run one candidate through :mod:`..judge.harness` (what its repro will run).
``localize``: for an accuracy failure, the first node whose compiled value fails the verdict.
"""

from __future__ import annotations

import contextlib
import math
from typing import TYPE_CHECKING, Any

import msgspec

from pt2kit.runtime.common.backends import check_registered
from pt2kit.runtime.common.config import (
    apply_config,
    is_hook,
    kept_settings,
    literal,
    resolve,
    worker_settings,
)
from pt2kit.runtime.common.errors import UsageError
from pt2kit.runtime.common.modelfile import backend_callable, load_model, model_fields
from pt2kit.runtime.common.precision import HARNESS, precision_state, use_precision
from pt2kit.runtime.common.tensors import first_jagged
from pt2kit.runtime.worker.accuracy import differs, float64_reference_refused
from pt2kit.runtime.worker.aotgraphs import forward_graphs
from pt2kit_portable import under_autocast

from .. import ir
from ..job import Job
from ..judge import harness, loading, plan, verdicts
from ..records import typed_config
from . import filecode, infer
from .infer import backend_of
from .toir import inside, to_ir

if TYPE_CHECKING:
    from ..records import Want


def _resolved_config(config: dict[str, str]) -> dict[str, dict[str, str]]:
    """{module: {key: the typed value's literal text}}: the parent, every query and the repro get the
    value this worker ran the original under, types included (a tuple stays a tuple)."""
    out: dict[str, dict[str, str]] = {}
    for module, key, value in resolve(config):
        if is_hook(module, key) and callable(value):  # a pass handed over as FILE.py:NAME: named, loaded where used
            if getattr(value, "__code__", None) is None:
                raise UsageError(f"--config {key}: minify carries a pass that is a function of a file into its "
                                 f"candidates and repro, not a {type(value).__name__} object")
            value = (loading.CODE, value.__code__.co_filename, value.__name__)
        out.setdefault(module.__name__, {})[key] = literal(value)
    return out


def original(payload: dict[str, Any], send: Any) -> dict[str, Any]:
    """The original run: the model's graphs (sent at once, so a crash later still leaves them), then how
    it fails. This warm worker's settings are left as they were before the model file ran: the candidates
    it judges next run under their own config only."""
    with kept_settings():
        job = msgspec.convert(payload, Job)
        # the backend file's own settings are the user's, as importing it sets them in the script: the run
        # compiles under them (--config's win), the search may drop them, the repro's CONFIG carries them
        job = msgspec.structs.replace(job, config={**_backend_settings(job.backend, send), **job.config})
        loaded, config = _load(job, send)
        precision = _precision(job.precision)  # after the settings: the harness's fallback_random is not the file's
        send({"t": "stage", "stage": "capture"})
        from pt2kit.runtime.worker.written import Start

        start = Start(loaded.model, loaded.inputs)
        graphs, forward = _searched_graphs(loaded, job)
        start.restore()  # the capture ran the model: a write into its inputs is undone, so the judging starts clean
        del start  # its copy of every tensor is not held through the judging, which takes its own
        send({"t": "graphs", "graphs": msgspec.to_builtins(graphs), "config": config, "precision": precision,
              "autocast": loaded.autocast})
        if job.profile is not None:  # fxcheck's rules on the graphs the backend gets: nothing to run
            return {"kind": "violation", "want": _first_violation(forward, job.profile)}
        if job.failure == "violation":  # judged on the graphs alone: nothing to run
            return {"kind": "violation"}
        send({"t": "stage", "stage": "reproduce"})
        if job.mode == "train":
            from . import train

            return train.judge(loaded, job, backend_of(job.backend), send)
        return infer.judge(loaded, job, send)


def _load(job: Job, send: Any) -> tuple[Any, dict[str, dict[str, str]]]:
    """The model loaded (its `model` record sent when the command line named it), and the config the
    original run compiles under, typed: the file's own settings, the environment's and --config's (the
    search starts from them all; a --config key torch's repro writer skips stays)."""
    if ":" not in (job.backend or ""):  # a name torch does not register here would fail as a "compile error"
        check_registered(job.backend or "inductor")
    send({"t": "stage", "stage": "load"})
    seen = filecode.before()
    loaded = load_model(job.model, device=job.device, from_stream=job.from_stream, label=job.label)
    refused = float64_reference_refused(loaded.label, job.ref, loaded.autocast)
    if refused:  # --ref eager64 of a model called under autocast: said, never judged otherwise
        raise UsageError(refused)
    # the passes and decompositions its top level installed: every candidate and the repro compile with them
    code = filecode.installed(seen, loaded.label, job.config)
    with apply_config(job.config):
        settings = worker_settings()
        if job.emit_model:
            fields = {**model_fields(loaded, job.device, job.config), **({"train": True} if job.mode == "train" else {})}
            send({"t": "model", "fields": msgspec.to_builtins(fields)})
    nested = first_jagged(loaded.inputs)  # a jagged input: AOTAutograd's dense graph of its values and
    if nested is not None and job.backend == "aoti":  # offsets is cut, or Dynamo's, the repro rebuilding it
        raise UsageError(f"{nested} is a torch.nested jagged tensor: torch.export, and so --backend aoti, takes none "
                         "(--backend inductor minifies the dense graph Inductor compiles from it)")
    config = _resolved_config({**settings, **job.config})
    for module, entries in code.items():
        config.setdefault(module, {}).update(entries)
    return loaded, config


def _backend_settings(spec: str | None, send: Any) -> dict[str, str]:
    """The settings a backend file (``FILE.py:NAME``, ``module:attr``) sets at its top level, said once."""
    if ":" not in (spec or ""):
        return {}
    own: dict[str, str] = {}
    backend_callable(spec, "--backend", settings=own)
    if own:
        words = ", ".join(f"{k}={v}" for k, v in sorted(own.items()))
        send({"t": "stage", "stage": f"{spec.rpartition(':')[0]} sets {words} at its top level: the run compiles "
                                     "under it, as importing it does (a --config of the same key wins)"})
    return own


def _searched_graphs(loaded: Any, job: Job) -> tuple[list[ir.Graph], list[Any]]:
    """(the graphs to search, the forward aten graphs with their arguments: fxcheck's profile reads them);
    ``--mode train``: a training step's forward and backward graphs (:func:`.train.graphs`)."""
    if job.mode == "train":  # the rule kdiff's and benchrun's train modes keep: something must require grad
        from pt2kit.runtime.worker.training import check_trainable

        from . import train

        check_trainable(loaded.model, loaded.inputs, loaded.label)
        return train.graphs(loaded, job, backend_of(job.backend))
    dynamo: list[Any] = []
    with apply_config(job.config):
        try:
            # a write into an input stays in the graph, as Inductor gets it: the op ordered against it is cut too
            forward = forward_graphs(loaded.model, lambda fn: loaded.call(fn), dynamo=dynamo, keep_input_mutations=True)
        except Exception:  # AOTAutograd cannot trace it: the failure is before the aten graph
            forward = []
    return _graphs(forward, dynamo, job), forward


def _precision(mode: str) -> dict[str, Any]:
    """The settings the original run, every query and the repro judge under: PyTorch's accuracy
    harness's (over any the model file set), or those the model file left (as-configured)."""
    if mode != "harness":
        return precision_state()
    use_precision(HARNESS)
    return dict(HARNESS)


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
    aten_ir = [g for i, (gm, args) in enumerate(aten) if not users for g in inside(gm, args, i, job.device)] + aten_ir
    dynamo_ir = []
    for i, (gm, args) in enumerate(dynamo):
        with contextlib.suppress(Exception):  # a graph that will not run on its own arguments is not searched
            dynamo_ir.append(to_ir(gm, args, i, job.device, level="dynamo"))
    return aten_ir + dynamo_ir


def _first_violation(captured: list[Any], profile: Any) -> Want | None:
    """The first finding of fxcheck's checks, on the forward graphs, that minify can keep."""
    from pt2kit.fxcheck import graph_view, run_checks
    from pt2kit.schema import SCHEMA_MAJOR, Violation

    from ..records import wanted

    for i, (gm, _) in enumerate(captured):
        for f in run_checks(graph_view(gm, "forward", i), profile):
            t = f.tensor
            rec = Violation(v=SCHEMA_MAJOR, run="-", constraint=f.constraint, message=f.message, phase="forward", graph=i,
                            node=f.node.name, op=f.op or f.node.op, dtype=t.dtype if t else None)
            want = wanted(rec)
            if want is not None:
                return want
    return None


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
        found = verdicts.violations(cls(), inputs, failure)
        return {"fails": bool(found), "signature": "violation" if found else "clean", "detail": ""}
    fails, sig, detail = verdicts.outcome(cls(), inputs, backend_of(payload["backend"]), typed_config(payload["config"]), failure,
                                         payload.get("dynamic", False), train=payload.get("train", False),
                                         grad=payload.get("grad"), said=lambda r: send({"t": "eager", "raised": r}))
    return {"fails": fails, "signature": sig, "detail": detail[:2000]}


def localize(payload: dict[str, Any], send: Any) -> dict[str, Any]:
    """The first node, in graph order, whose compiled value fails the accuracy verdict (one compile of
    the candidate with every tensor node an output), each run under the torch.autocast the script called
    the graph under (the failure's ``autocast``), as every query's."""
    with under_autocast(payload["failure"].get("autocast")):
        return _localized(payload)


def _localized(payload: dict[str, Any]) -> dict[str, Any]:
    cls = _module(payload["source"])
    verdicts.settle(payload["failure"])
    inputs = harness.make_inputs([tuple(s) for s in payload["inputs"]], payload.get("seed", 0))
    names = payload["names"]
    eager = harness.run_eager(cls(), harness.fresh(inputs), harness.eager_outputs)
    fp64 = harness.run_float64(cls(), harness.fresh(inputs), harness.eager_outputs)
    backend = backend_of(payload["backend"])
    with loading.apply_code_config(typed_config(payload["config"])):
        run = getattr(harness, plan.compiled_side(backend, backward=plan.is_backward(payload["failure"]))[1])
        test = run(cls(), harness.fresh(inputs), backend, payload.get("dynamic", False))
    ref, rule = payload["failure"].get("ref", "eager"), payload["failure"].get("rule", "fp64")
    at = {name: i for i, name in enumerate(names)}
    bad = [(name, t) for name, t, r, f in zip(names, test, eager, fp64, strict=False) if differs(t, r, f, ref, rule)]
    failing = [name for name, _ in bad if name in set(payload.get("outputs") or ())]
    if not bad or not failing:
        return {"node": bad[0][0] if bad else None}

    def fails(name: str, value: Any) -> bool:
        return bool(differs(value, eager[at[name]], fp64[at[name]], ref, rule))

    return {"node": _reaching(cls(), harness.fresh(inputs), names, bad, failing, fails) or bad[0][0]}


def _reaching(module: Any, inputs: list[Any], names: list[str], bad: list[tuple[str, Any]], failing: list[str],
              fails: Any) -> str | None:
    """Of the diverging nodes ``bad``, the first whose value alone makes a failing output of the graph
    fail (:mod:`pt2kit.runtime.worker.reach`): a divergence masked away on every path is not the one to keep.
    The candidate is traced to FX; its all-outputs return names each node (in ``names`` order)."""
    import torch

    from pt2kit.runtime.worker.reach import first_reaching

    try:
        gm = torch.fx.symbolic_trace(module)
    except Exception:  # a candidate FX cannot trace: the first divergence stands
        return None
    returned = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    fx = {name: n.name for name, n in zip(names, returned, strict=False) if isinstance(n, torch.fx.Node)}
    ours = {v: k for k, v in fx.items()}
    got = first_reaching(gm, inputs, [(fx[n], t) for n, t in bad if n in fx], [fx[f] for f in failing if f in fx],
                         lambda o, v: fails(ours[o], v))
    return ours.get(got) if got is not None else None


HANDLERS = {"original": original, "query": query, "localize": localize}
