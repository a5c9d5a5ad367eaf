"""One-pass tensor statistics: the torch path, and the Triton kernel under the interpreter."""

from __future__ import annotations

import math
import os

import pytest
import torch

from pt2kit.aotiprint.stats import finite_stats_torch, tensor_stats


def _expect(t: torch.Tensor) -> dict:
    f = t.double().reshape(-1)
    ok = torch.isfinite(f)
    return {"numel": t.numel(), "mean": f[ok].mean().item(), "min": f[ok].min().item(), "max": f[ok].max().item(),
            "nan": int(torch.isnan(f).sum()), "inf": int(torch.isinf(f).sum())}


def _close(got: dict, want: dict) -> None:
    assert (got["numel"], got["nan"], got["inf"]) == (want["numel"], want["nan"], want["inf"])
    for k in ("mean", "min", "max"):
        assert math.isclose(got[k], want[k], rel_tol=1e-5, abs_tol=1e-6), (k, got[k], want[k])


def test_torch_path_counts_nan_inf_and_keeps_them_out_of_mean_min_max():
    t = torch.randn(1000)
    t[3], t[10], t[11] = float("nan"), float("inf"), -float("inf")
    _close(finite_stats_torch(t, chunk=128), _expect(t))
    assert tensor_stats(torch.tensor([1, 5, 3]))["max"] == 5
    assert tensor_stats(torch.full((4,), float("nan")))["mean"] is None


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("plant", [False, True])
def test_triton_kernel_matches_torch_under_the_interpreter(dtype, plant, monkeypatch):
    if os.environ.get("TRITON_INTERPRET") != "1":
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    pytest.importorskip("triton")
    from pt2kit.aotiprint import triton_stats

    monkeypatch.setattr(triton_stats, "BLOCK", 64)
    t = (torch.randn(64 * 8 * 3 + 17) * 3 + 1).to(dtype)  # full steps for every program, then a tail
    if plant:
        t[5], t[700] = float("nan"), float("-inf")
    _close(triton_stats.stats(t), _expect(t))
