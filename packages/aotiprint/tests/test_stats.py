"""One-pass tensor statistics: the torch path, and the Triton kernel under the interpreter."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys

import pytest
import torch

from pt2kit.aotiprint.stats import tensor_stats
from pt2kit.aotiprint.torch_stats import finite_stats_torch


def _expect(t: torch.Tensor) -> dict:
    f = t.double().reshape(-1)
    ok = f[torch.isfinite(f)]
    some = ok.numel() > 0
    return {"numel": t.numel(), "mean": ok.mean().item() if some else None, "min": ok.min().item() if some else None,
            "max": ok.max().item() if some else None,
            "nan": int(torch.isnan(f).sum()), "inf": int(torch.isinf(f).sum())}


def _close(got: dict, want: dict) -> None:
    assert (got["numel"], got["nan"], got["inf"]) == (want["numel"], want["nan"], want["inf"])
    for k in ("mean", "min", "max"):
        if want[k] is None:
            assert got[k] is None, (k, got[k])
        else:
            assert math.isclose(got[k], want[k], rel_tol=1e-5, abs_tol=1e-6), (k, got[k], want[k])


def test_torch_path_counts_nan_inf_and_keeps_them_out_of_mean_min_max():
    t = torch.randn(1000)
    t[3], t[10], t[11] = float("nan"), float("inf"), -float("inf")
    _close(finite_stats_torch(t, chunk=128), _expect(t))
    assert tensor_stats(torch.tensor([1, 5, 3]))["max"] == 5
    assert tensor_stats(torch.full((4,), float("nan")))["mean"] is None


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("plant", ["none", "nan+inf", "all nan", "float32 overflow"])
def test_triton_kernel_matches_torch(dtype, plant, monkeypatch):
    """The compiled kernel on a GPU machine, or the same kernel under Triton's interpreter."""
    cuda = torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1"
    if not cuda and os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("no GPU: test_triton_kernel_under_the_interpreter runs this (TRITON_INTERPRET=1 in a subprocess)")
    pytest.importorskip("triton")
    from pt2kit.aotiprint import triton_stats

    monkeypatch.setattr(triton_stats, "BLOCK", 64)
    monkeypatch.setattr(triton_stats, "PROGRAMS_PER_SM", 1)  # few programs on a GPU too: full steps, then a tail
    programs = torch.cuda.get_device_properties(0).multi_processor_count if cuda else 8
    t = (torch.randn(64 * programs * 3 + 17) * 3 + 1).to(dtype)
    if plant == "nan+inf":
        t[5], t[700], t[-1] = float("nan"), float("-inf"), float("inf")  # the last one in the masked tail step
    elif plant == "all nan":
        t[:] = float("nan")
    elif plant == "float32 overflow":  # finite, but the per-lane float32 sums are not: float64 takes over
        t[:] = 3e38
        t[3] = float("nan")
    _close(triton_stats.stats(t.cuda() if cuda else t), _expect(t))


def test_triton_kernel_under_the_interpreter():
    """The test above with the kernel interpreted on the CPU; a process of its own, since Triton
    reads TRITON_INTERPRET when it first decorates a kernel."""
    pytest.importorskip("triton")
    if torch.cuda.is_available():
        pytest.skip("on a GPU machine the test above runs the compiled kernel itself")
    env = dict(os.environ, TRITON_INTERPRET="1")
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k",
                        "test_triton_kernel_matches_torch"], env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert re.search(r"^8 passed", p.stdout, re.M), p.stdout[-500:]


def test_a_complex_tensors_stats_are_of_its_magnitude_and_the_record_says_so():
    from pt2kit.aotiprint.work import _kernel_arg

    z = torch.tensor([3 + 4j, -6 - 8j], dtype=torch.complex64)
    arg = _kernel_arg(None, "stats", "buf0", z, False, "after", 0, "k")
    assert (arg.stats.of, arg.stats.min, arg.stats.max, arg.stats.mean) == ("magnitude", 5.0, 10.0, 7.5)
    real = _kernel_arg(None, "stats", "buf1", torch.tensor([-1.0, 1.0]), False, "after", 0, "k")
    assert real.stats.of is None and real.stats.min == -1.0
