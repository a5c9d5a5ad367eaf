"""How far a tested tensor is from its reference, with ``torch.testing.assert_close`` semantics.

An element matches when ``test == ref`` (equal infinities included) or both are finite and
``|test - ref| <= atol + rtol * |ref|``; with ``equal_nan`` two NaNs match. Default tolerances are assert_close's for the
less precise of the two dtypes. Nothing is downcast: both sides are compared in the promoted dtype
(float64 stays float64). The worst element is the mismatch furthest past its tolerance (a NaN
mismatch first), or, when all match, the largest absolute error.

One pass over memory: a Triton kernel on CUDA (:mod:`.triton_metrics`), and elsewhere a torch path
over chunks of ``CHUNK`` elements, so extra memory stays bounded whatever the tensor's size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from .dtypes import compute_dtype

CHUNK = 1 << 22

@dataclass
class Comparison:
    numel: int
    max_abs: float
    mean_abs: float
    max_rel: float
    rmse: float
    mismatches: int
    nan_ref: int
    nan_test: int
    inf_ref: int
    inf_test: int
    worst_flat: int | None
    worst_index: list[int] | None
    worst_ref: float | None
    worst_test: float | None

    @property
    def passed(self) -> bool:
        return self.mismatches == 0

    @property
    def mismatch_share(self) -> float:
        return self.mismatches / self.numel if self.numel else 0.0


def unravel(flat: int, shape: tuple[int, ...]) -> list[int]:
    out = []
    for size in reversed(shape):
        out.append(flat % size if size else 0)
        flat //= size if size else 1
    return list(reversed(out))


def compare(ref: torch.Tensor, test: torch.Tensor, *, atol: float, rtol: float, equal_nan: bool = False,
            use_triton: bool | None = None) -> Comparison:
    """Compare two tensors of the same shape (the caller reports shape mismatches)."""
    if ref.shape != test.shape:
        raise ValueError(f"shapes differ: {list(ref.shape)} vs {list(test.shape)}")
    if ref.is_complex() or test.is_complex():
        ref, test = torch.view_as_real(ref.to(torch.complex128)), torch.view_as_real(test.to(torch.complex128))
    if test.device != ref.device:
        test = test.to(ref.device)
    if use_triton is None:
        use_triton = ref.is_cuda
    if use_triton:
        from .triton_metrics import partials

        sums = partials(ref.reshape(-1), test.reshape(-1), atol=atol, rtol=rtol, equal_nan=equal_nan)
    else:
        sums = _torch_partials(ref.reshape(-1), test.reshape(-1), atol, rtol, equal_nan)
    return _finish(ref, test, sums)


def _torch_partials(a: torch.Tensor, b: torch.Tensor, atol: float, rtol: float, equal_nan: bool) -> dict[str, Any]:
    dtype = compute_dtype(a, b)
    n = a.numel()
    acc = {"max_abs": 0.0, "sum_abs": 0.0, "sum_sq": 0.0, "max_rel": 0.0, "mism": 0, "nan_a": 0, "nan_b": 0,
           "inf_a": 0, "inf_b": 0, "excess": -math.inf, "excess_at": None, "maxd_at": None}
    for start in range(0, n, CHUNK):
        x = a[start:start + CHUNK].to(dtype)
        y = b[start:start + CHUNK].to(dtype)
        nan_x, nan_y = torch.isnan(x), torch.isnan(y)
        diff = (x - y).abs()
        tol = atol + rtol * x.abs()
        # isclose: equal values (infinities too) match; otherwise both finite and within tolerance
        close = (x == y) | (torch.isfinite(x) & torch.isfinite(y) & (diff <= tol))
        if equal_nan:
            close |= nan_x & nan_y
        mism = ~close
        d = torch.where(torch.isnan(diff), torch.zeros_like(diff), diff)
        ax = x.abs()
        inf = torch.full_like(d, math.inf)
        rel = torch.where(ax > 0, d / ax, torch.where(d > 0, inf, torch.zeros_like(d)))
        rel = torch.nan_to_num(rel, nan=0.0, posinf=math.inf)  # inf/inf: no relative error to speak of
        past = diff - tol  # NaN for NaN or infinite differences: those are the worst mismatches
        excess = torch.where(mism, torch.where(torch.isfinite(past), past, inf), -inf)
        stats = torch.stack([d.max(), d.sum(dtype=torch.float64).to(d.dtype), (d * d).sum(dtype=torch.float64).to(d.dtype),
                             rel.max()]).tolist()
        counts = torch.stack([mism.sum(), nan_x.sum(), nan_y.sum(), torch.isinf(x).sum(), torch.isinf(y).sum()]).tolist()
        i_ex, i_d = int(excess.argmax()), int(d.argmax())
        ex = float(excess[i_ex])
        if stats[0] > acc["max_abs"] or acc["maxd_at"] is None:
            acc["maxd_at"] = start + i_d
        acc["max_abs"] = max(acc["max_abs"], stats[0])
        acc["sum_abs"] += stats[1]
        acc["sum_sq"] += stats[2]
        acc["max_rel"] = max(acc["max_rel"], stats[3])
        for key, value in zip(("mism", "nan_a", "nan_b", "inf_a", "inf_b"), counts, strict=True):
            acc[key] += int(value)
        if ex > acc["excess"]:
            acc["excess"], acc["excess_at"] = ex, start + i_ex
    return acc


def _finish(ref: torch.Tensor, test: torch.Tensor, s: dict[str, Any]) -> Comparison:
    n = ref.numel()
    worst = s["excess_at"] if s["mism"] else s["maxd_at"]
    wr = wt = None
    if worst is not None and n and "worst_values" in s:
        wr, wt = s["worst_values"]
    elif worst is not None and n:  # one device-to-host copy for both values
        wr, wt = torch.stack([ref.reshape(-1)[worst].to(torch.float64), test.reshape(-1)[worst].to(torch.float64)]).tolist()
    return Comparison(
        numel=n,
        max_abs=float(s["max_abs"]),
        mean_abs=float(s["sum_abs"]) / n if n else 0.0,
        max_rel=float(s["max_rel"]),
        rmse=math.sqrt(float(s["sum_sq"]) / n) if n else 0.0,
        mismatches=int(s["mism"]),
        nan_ref=int(s["nan_a"]),
        nan_test=int(s["nan_b"]),
        inf_ref=int(s["inf_a"]),
        inf_test=int(s["inf_b"]),
        worst_flat=worst,
        worst_index=unravel(worst, tuple(ref.shape)) if worst is not None and n else None,
        worst_ref=wr,
        worst_test=wt,
    )
