"""Each private or moving torch API guardscan uses, on the installed torch."""

from __future__ import annotations

import logging

import torch

from pt2kit.guardscan import torchapi
from pt2kit.guardscan.variants import Variant, apply, input_names
from pt2kit.runtime.worker import torchtrace


def test_capture_trace_sees_a_compile_and_removes_its_handler():
    got: list[dict] = []
    torchapi.reset()
    with torchapi.capture_trace(lambda meta, payload: got.append(meta)):
        torch.compile(lambda x: x.sin() + 1, backend="eager")(torch.randn(3))
    kinds = {k for m in got for k in m}
    assert {"dynamo_start", "dynamo_output_graph", "dynamo_cpp_guards_str", "compilation_metrics"} <= kinds
    # torch may hold handlers of its own there (a lazy TORCH_TRACE one): only ours must be gone
    assert not any(isinstance(h, torchtrace._TraceHandler) for h in logging.getLogger(torchtrace.TRACE_LOGGER).handlers)


def test_recompile_limit_patch():
    import torch._dynamo.config as cfg

    key = torchapi.recompile_limit_key()
    before = getattr(cfg, key)
    with torchapi.dynamo_patch(3):
        assert getattr(cfg, key) == 3
    assert getattr(cfg, key) == before


def test_variant_apply_keeps_values_and_names_the_change():
    def forward(ids, mask):
        return ids

    ids = torch.tensor([[3, 1], [2, 0]])
    new, changes = apply(Variant(spec="0=3", sizes={0: 3}), forward, (ids, torch.ones(2, 2)))
    assert input_names(forward, (ids,)) == ["ids"]
    assert changes == ["ids: dim 0 2 -> 3", "mask: dim 0 2 -> 3"]
    assert new[0].tolist() == [[3, 1], [2, 0], [3, 1]] and new[0].dtype == torch.int64
    new, changes = apply(Variant(spec="dtype", dtype="float16"), forward, (ids, torch.ones(2, 2)))
    assert changes == ["mask: dtype float32 -> float16"] and new[0].dtype == torch.int64
