"""Metric semantics, on the torch path and on the Triton kernel (run on CPU under TRITON_INTERPRET=1)."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys

import pytest
import torch

from pt2kit.kdiff.metrics import compare
from pt2kit.runtime.worker.accuracy import default_tolerances

PATHS = [False, True]


def cmp(a, b, use_triton, **kw):
    if use_triton and not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("the Triton path runs in test_triton_kernel_under_interpreter (a subprocess with TRITON_INTERPRET=1)")
    kw.setdefault("atol", 1e-5)
    kw.setdefault("rtol", 1.3e-6)
    if use_triton and torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":  # the GPU machine
        a, b = a.cuda(), b.cuda()
    return compare(a, b, use_triton=use_triton, **kw)


@pytest.mark.parametrize("use_triton", PATHS)
def test_one_corrupted_element_is_found_with_index_and_both_values(use_triton):
    a = torch.arange(60, dtype=torch.float32).reshape(3, 4, 5) / 7
    b = a.clone()
    b[2, 1, 3] = 42.0
    r = cmp(a, b, use_triton)
    assert r.mismatches == 1 and not r.passed
    assert r.worst_index == [2, 1, 3]
    assert r.worst_ref == pytest.approx(float(a[2, 1, 3])) and r.worst_test == 42.0
    assert r.max_abs == pytest.approx(42.0 - float(a[2, 1, 3]), rel=1e-6)
    assert r.rmse == pytest.approx(math.sqrt(r.max_abs ** 2 / 60), rel=1e-5)


@pytest.mark.parametrize("use_triton", PATHS)
def test_relative_tolerance_uses_the_reference(use_triton):
    a = torch.full((1000,), 1000.0)
    b = a * (1 + 1e-6)
    assert cmp(a, b, use_triton).passed  # 1e-3 <= 1e-5 + 1.3e-6 * 1000
    assert not cmp(a, a * (1 + 1e-5), use_triton).passed


@pytest.mark.parametrize("use_triton", PATHS)
def test_when_all_pass_the_worst_is_the_largest_difference_with_both_values(use_triton):
    a = torch.linspace(-1, 1, 3000, dtype=torch.float64).float()
    b = a.clone()
    b[2047] += 4e-6  # inside atol; the largest difference
    r = cmp(a, b, use_triton)
    assert r.passed and r.worst_index == [2047]
    assert (r.worst_ref, r.worst_test) == (float(a[2047]), float(b[2047]))


@pytest.mark.parametrize("use_triton", PATHS)
def test_empty_tensors_pass_with_no_worst_element(use_triton):
    a = torch.empty(0, 3)
    r = cmp(a, a.clone(), use_triton)
    assert r.passed and r.numel == 0 and r.worst_index is None and r.worst_ref is None and r.max_abs == 0.0


@pytest.mark.parametrize("use_triton", PATHS)
def test_nan_both_sides_passes_only_with_equal_nan(use_triton):
    a = torch.tensor([1.0, float("nan"), 3.0])
    r = cmp(a, a.clone(), use_triton)
    assert r.mismatches == 1 and r.worst_index == [1] and r.nan_ref == 1 and r.nan_test == 1
    assert cmp(a, a.clone(), use_triton, equal_nan=True).passed


@pytest.mark.parametrize("use_triton", PATHS)
def test_float64_is_never_downcast(use_triton):
    a = torch.ones(8, dtype=torch.float64)
    b = a.clone()
    b[5] += 1e-9
    r = cmp(a, b, use_triton, atol=0.0, rtol=0.0)
    assert r.mismatches == 1 and r.worst_index == [5]
    assert r.max_abs == pytest.approx(1e-9, rel=1e-6)


@pytest.mark.parametrize("use_triton", PATHS)
def test_infinities_and_relative_error(use_triton):
    a = torch.tensor([float("inf"), 0.0, 2.0, -float("inf")])
    b = torch.tensor([float("inf"), 1e-3, 2.0, float("inf")])
    r = cmp(a, b, use_triton)
    assert r.mismatches == 2 and r.inf_ref == 2 and r.inf_test == 2
    assert r.max_rel == math.inf  # 1e-3 against a reference of 0
    assert r.worst_index == [3]  # inf vs -inf: NaN difference, the worst mismatch


@pytest.mark.parametrize("use_triton", PATHS)
def test_sums_leave_nan_out_and_keep_inf(use_triton):
    a = torch.tensor([1.0, float("nan"), 3.0, 0.0, 5.0])
    b = torch.tensor([1.5, float("nan"), 3.0, 0.0, 4.0])
    r = cmp(a, b, use_triton, equal_nan=True)
    assert r.nan_ref == 1 and r.nan_test == 1 and r.inf_ref == 0
    assert r.mean_abs == pytest.approx(1.5 / 5) and r.rmse == pytest.approx(math.sqrt(1.25 / 5))
    assert r.max_abs == 1.0 and r.worst_index == [4]
    r = cmp(torch.tensor([0.0, 1.0]), torch.tensor([float("inf"), 1.0]), use_triton)
    assert r.max_abs == math.inf and r.mean_abs == math.inf and r.inf_test == 1


@pytest.mark.parametrize("use_triton", PATHS)
def test_large_tensor_crosses_chunks_and_blocks(use_triton, monkeypatch):
    import pt2kit.kdiff.metrics as m

    monkeypatch.setattr(m, "CHUNK", 1000)
    a = torch.randn(10_007)
    b = a.clone()
    b[9_999] += 0.5
    b[17] += 0.25
    r = cmp(a, b, use_triton)
    assert r.mismatches == 2 and r.worst_index == [9_999]
    assert r.mean_abs == pytest.approx(0.75 / 10_007, rel=1e-4)


def test_default_tolerances_take_the_looser_dtype():
    assert default_tolerances(torch.float32) == (1e-5, 1.3e-6)
    assert default_tolerances(torch.float64, torch.float32) == (1e-5, 1.3e-6)
    assert default_tolerances(torch.bfloat16) == (1e-5, 1.6e-2)
    assert default_tolerances(torch.int64) == (0.0, 0.0)


def test_triton_kernel_under_interpreter():
    """Every parametrized case above, again, with the Triton kernel interpreted on the CPU."""
    pytest.importorskip("triton")
    if torch.cuda.is_available():
        pytest.skip("on a GPU machine the tests above run the compiled kernel itself")
    env = dict(os.environ, TRITON_INTERPRET="1")
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k",
                        "True and not interpreter"], env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert re.search(r"^9 passed", p.stdout, re.M), p.stdout[-500:]
