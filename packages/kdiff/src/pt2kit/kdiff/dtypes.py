"""The dtype two tensors are compared in, shared by both paths of :func:`.metrics.compare` (the torch
path in :mod:`.metrics`, the Triton kernel in :mod:`.triton_metrics`); a leaf that imports neither.

Guarantees: float64 stays float64 and complex is complex128; other floating dtypes (16-bit ones
upcast) are compared in float32, integers and booleans in float64. Not guaranteed: integers
past 2**53 are not compared exactly.
"""

from __future__ import annotations

import torch


def compute_dtype(ref: torch.Tensor, test: torch.Tensor) -> torch.dtype:
    dtype = torch.promote_types(ref.dtype, test.dtype)
    if dtype.is_complex:
        return torch.complex128
    if not dtype.is_floating_point:
        return torch.float64
    return dtype if dtype == torch.float64 else torch.float32
