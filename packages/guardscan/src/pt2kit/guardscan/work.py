"""The child-process side of `guardscan MODEL.py`: compile, call with each variant, report."""

from __future__ import annotations

from typing import Any

from pt2kit.schema import Model


def run(payload: dict[str, Any], chan: Any) -> Any:
    import msgspec

    from .job import Job

    job = msgspec.convert(payload, Job)
    chan.stage("load")
    from pt2kit.runtime.common.backends import check_registered
    from pt2kit.runtime.common.config import apply_config
    from pt2kit.runtime.common.modelfile import load_model, model_fields
    from pt2kit.runtime.common.outcome import model_or_compiler

    from . import torchapi
    from .findings import analyze
    from .live import Scan, scan
    from .records import emit_findings
    from .variants import default_variants, parse_vary

    check_registered(job.backend)  # a name torch does not know is the user's typo (exit 2), not a crash
    variants = ([*default_variants()] if job.default_vary else []) + [parse_vary(v) for v in job.vary]
    import torch

    torch.manual_seed(0)  # model files that draw random inputs give the same findings run after run
    with apply_config(job.config):
        loaded = load_model(job.model, device=job.device, from_stream=job.from_stream, label=job.label)
        if job.emit_model:
            chan.emit_new(Model, **model_fields(loaded, job.device, job.config))
        torchapi.quiet_dynamo()
        result = Scan()
        try:
            with loaded.ambient():  # the model file's autocast, which Dynamo guards on: called under it as in the script
                scan(loaded.model, loaded.inputs, variants, backend=job.backend, dynamic=job.dynamic,
                     recompile_limit=job.recompile_limit, result=result,
                     before_call=lambda label: chan.stage(label if label.startswith("eager") else f"compile and run ({label})"))
        except Exception as e:  # the model's own failure (its eager run fails too) is not the compiler's
            raise model_or_compiler(loaded.label, "eager run", e, lambda: loaded.call(loaded.model, loaded.inputs)) \
                from None
        finally:
            # a crash in a later call keeps what the earlier calls showed
            findings = analyze(result.trace, torch_dir=torchapi.torch_dir(), model_file=True)
            counts = emit_findings(findings, chan.emit_new, chan.store, model=loaded.label, calls=result.calls)
    return counts  # records.Counts, for the parent's narrator
