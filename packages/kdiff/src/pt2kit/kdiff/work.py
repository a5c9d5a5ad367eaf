"""The child-process side of `kdiff`: run reference and test, compare every leaf, localise."""

from __future__ import annotations

from typing import Any

from pt2kit.schema import Diff, Divergence, Model, Stats, num


def _stats(t: Any) -> Stats:
    import torch

    x = t.detach().to(torch.float64)
    finite = x[torch.isfinite(x)]
    return Stats(numel=x.numel(), mean=num(float(finite.mean())) if finite.numel() else None,
                 min=num(float(finite.min())) if finite.numel() else None,
                 max=num(float(finite.max())) if finite.numel() else None,
                 nan=int(torch.isnan(x).sum()), inf=int(torch.isinf(x).sum()))


def _seeded(seed: int, fn: Any) -> Any:
    import torch

    torch.manual_seed(seed)
    return fn()


def run(payload: dict[str, Any], chan: Any) -> dict[str, Any]:
    chan.stage("load")
    import torch

    from pt2kit.runtime.config import apply_config
    from pt2kit.runtime.modelfile import load_model, model_fields
    from pt2kit.runtime.outputs import flatten

    from . import backends
    from .compare import compare_trees, grads_of, metrics_record

    with apply_config(payload["config"]):
        loaded = load_model(payload["model"], device=payload["device"])
        if payload.get("emit_model", True):
            chan.emit_new(Model, **model_fields(loaded, payload["device"], payload["config"]))
        ref = backends.resolve(payload["ref"], role="ref")
        test = backends.resolve(payload["test"], role="test")
        seed = payload["seed"]
        tol = {"atol": payload["atol"], "rtol": payload["rtol"], "equal_nan": payload["equal_nan"]}
        label = loaded.label
        results = []
        for side_name, backend in (("reference", ref), ("test", test)):
            fn, inputs = backends.prepare(loaded.model, loaded.inputs, backend)
            # torch.compile compiles on the first call: a compiled side's stage covers both
            verb = "compile and run" if backend.compile is not None else "run"
            chan.stage(f"{verb} {side_name} ({backend.name})")
            with torch.no_grad():
                out = _seeded(seed, lambda fn=fn, inputs=inputs: loaded.call(fn, inputs))
            results.append(flatten(out))
            torch._dynamo.reset()
        chan.stage("compare")
        diffs = compare_trees(results[0], results[1], ref=ref.name, test=test.name, store=chan.store, **tol)
        if payload["grad"]:
            chan.stage("gradients")
            g_ref = grads_of(loaded, ref, seed)
            g_test = grads_of(loaded, test, seed)
            diffs += compare_trees(g_ref, g_test, ref=ref.name, test=test.name, store=chan.store, **tol)
        failed = [d for d in diffs if not d["passed"]]
        for d in diffs:
            chan.emit_new(Diff, model=label, **d)
        located = None
        if failed and payload["localize"]:
            chan.stage("localize")
            from .localize import localize

            located = localize(loaded.model, lambda fn: _seeded(seed, lambda: loaded.call(fn)), ref=ref, test=test,
                               atol=payload["atol"], rtol=payload["rtol"], equal_nan=payload["equal_nan"])
            if located is not None:
                chan.emit_new(
                    Divergence, model=label, output=failed[0]["output"], node=located.node, op=located.op,
                    index=located.index, source=located.source, code=located.code, module=located.module,
                    metrics=metrics_record(located.comparison), ref_stats=_stats(located.ref),
                    test_stats=_stats(located.test), compiles=located.compiles,
                )
    return {"diffs": len(diffs), "failed": len(failed),
            "divergence": None if located is None else {"op": located.op, "source": located.source}}
