"""pt2kit.fxcheck.backend() used as torch.compile(model, backend=...)."""

from __future__ import annotations

import pytest
import torch

import pt2kit.fxcheck as fxcheck
from pt2kit.fxcheck.checker import ConstraintViolation


def test_backend_checks_records_and_runs_the_graph():
    torch._dynamo.reset()
    be = fxcheck.backend("float32-only")
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()).double()
    x = torch.randn(3, 4, dtype=torch.float64)
    with torch.no_grad():
        out = torch.compile(model, backend=be)(x)
    assert torch.equal(out, model(x))  # the graph really ran
    assert [v.op for v in be.findings] == ["aten.addmm.default", "aten.relu.default"]
    assert [v.module for v in be.findings] == ["0", "1"]
    assert {v.phase for v in be.findings} == {"forward"}
    assert [type(r).__name__ for r in be.records][:2] == ["Graph", "Graph"]


def test_training_compile_checks_the_backward_graph_too():
    torch._dynamo.reset()
    be = fxcheck.backend(None, deny=["aten.threshold_backward"])
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    torch.compile(model, backend=be)(torch.randn(3, 4)).sum().backward()
    assert [(v.op, v.phase, v.module) for v in be.findings] == [("aten.threshold_backward.default", "backward", "1")]


def test_strict_backend_raises_after_recording_every_finding():
    torch._dynamo.reset()
    be = fxcheck.backend(None, strict=True, align=16)
    with pytest.raises(Exception) as e:
        torch.compile(lambda x: x * 2 + 1, backend=be)(torch.randn(10, 3))
    causes = [e.value, e.value.__cause__, getattr(e.value, "inner_exception", None)]
    assert any(isinstance(c, ConstraintViolation) for c in causes), causes
    assert len(be.findings) == 3  # the input, the mul and the add: all recorded before raising


def test_symbolic_dimension_is_a_finding_that_says_it_cannot_be_verified():
    torch._dynamo.reset()
    be = fxcheck.backend(None, align=16)
    torch.compile(lambda x: x.sin(), backend=be, dynamic=True)(torch.randn(10, 32))
    msgs = [v.message for v in be.findings]
    assert any("dim 0 is symbolic (s" in m and "cannot be verified; its example size 10 is not a multiple" in m
               for m in msgs), msgs
    assert any("dim 1 is symbolic" in m and "its example size 32 is a multiple" in m for m in msgs), msgs
    assert not any("of size" in m for m in msgs)  # nothing was specialised to a concrete size


def test_overrides_validate():
    from pt2kit.runtime.common.errors import UsageError

    with pytest.raises(UsageError, match="unknown dtype"):
        fxcheck.backend(None, dtypes=["float99"])
