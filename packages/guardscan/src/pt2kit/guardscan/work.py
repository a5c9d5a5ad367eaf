"""The child-process side of `guardscan MODEL.py`: compile, call with each variant, report."""

from __future__ import annotations

from typing import Any

from pt2kit.schema import Model


def run(payload: dict[str, Any], chan: Any) -> dict[str, Any]:
    chan.stage("load")
    from pt2kit.runtime.config import apply_config
    from pt2kit.runtime.modelfile import load_model, model_fields

    from . import torchapi
    from .analyze import analyze
    from .emit import emit_findings
    from .scan import Scan, scan
    from .variants import default_variants, parse_vary

    variants = ([*default_variants()] if payload["default_vary"] else []) + [parse_vary(v) for v in payload["vary"]]
    import torch

    torch.manual_seed(0)  # model files that draw random inputs give the same findings run after run
    with apply_config(payload["config"]):
        loaded = load_model(payload["model"], device=payload["device"], from_stream=payload.get("from_stream", False))
        if payload.get("emit_model", True):
            chan.emit_new(Model, **model_fields(loaded, payload["device"], payload["config"]))
        torchapi.quiet_dynamo()
        result = Scan()
        try:
            scan(loaded.model, loaded.inputs, variants, backend=payload["backend"], dynamic=payload["dynamic"],
                 recompile_limit=payload["recompile_limit"], result=result,
                 before_call=lambda label: chan.stage(label if label.startswith("eager") else f"compile and run ({label})"))
        finally:
            # a crash in a later call keeps what the earlier calls showed
            findings = analyze(result.trace, torch_dir=torchapi.torch_dir())
            counts = emit_findings(findings, chan.emit_new, chan.store, model=loaded.label, calls=result.calls)
    return {**counts, "limit_hits": len(findings.limit_hits)}
