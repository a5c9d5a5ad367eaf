"""Near-ties in data-dependent selections (sort, top-k, argmax, max/min over a dim, NMS) of an eager run.

A selection turns rounding noise into a different choice: two router logits 1e-7 apart pick
different experts, two detection scores pick different boxes. The outputs then differ by far more
than any tolerance, and no compiler is at fault. :class:`TieRecorder` watches an eager run and
notes, for every selection on a floating tensor, the smallest gap between values whose order
decides the result, relative to the tensor's scale. A gap under :func:`tie_eps` can flip under the
rounding differences a compiled program has; kdiff then says so instead of reporting a numeric bug.

Margins: top-k, the gaps among the k+1 largest (what is chosen and in which order); sort and argsort,
the smallest gap between neighbours; argmax/argmin and max/min over a dim, the gap between the first
and the second; NMS, the smallest gap between neighbouring scores.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from typing import Any

import torch

from pt2kit.runtime.worker.hops import HopAwareMode

from .torchapi import overload_name

_SELECT = {"topk", "sort", "argsort", "argmax", "argmin", "kthvalue", "median", "nms", "max", "min", "msort"}
_DIM_ONLY = {"max", "min", "median"}  # max(x) is a value, not a selection; max(x, dim) picks an index


@dataclass
class TieSite:
    op: str
    margin: float
    eps: float  # the margin under which rounding can flip this choice (tie_eps of its input)
    source: str | None
    code: str | None

    @property
    def near(self) -> bool:
        return self.margin < self.eps


def tie_eps(dtype: torch.dtype, device: torch.device | str) -> float:
    """Relative gap under which rounding can reorder: float16/bfloat16 and CUDA (TF32 GEMMs and
    convolutions) 1e-3; float32 elsewhere 1e-4; float64 1e-10."""
    if dtype in (torch.float16, torch.bfloat16) or torch.device(device).type == "cuda":
        return 1e-3
    return 1e-10 if dtype == torch.float64 else 1e-4


def _where() -> tuple[str | None, str | None]:
    for f in reversed(traceback.extract_stack()[:-3]):
        fn = f.filename.replace("\\", "/")
        # nor FX's generated code (a branch as torch.cond compiles it), nor the mode's re-entry around it
        # (HopAwareMode's, in pt2kit_portable)
        if "/torch/" in fn or fn.endswith(("/ties.py", "/runtime/worker/hops.py", "/pt2kit_portable.py")) or "/torchvision/" in fn \
                or fn.startswith("<eval_with_key>"):
            continue
        return f"{f.filename}:{f.lineno}", (f.line or "").strip() or None
    return None, None


def _gaps_along(x: torch.Tensor, dim: int, first: int | None, descending: bool) -> float:
    """Smallest gap between neighbours among the ``first`` extreme values along ``dim`` (all when None)."""
    if x.dim() == 0 or x.shape[dim] < 2:
        return float("inf")
    v = torch.sort(x.detach().to(torch.float64), dim=dim, descending=descending).values
    if first is not None:
        v = v.narrow(dim, 0, min(first, v.shape[dim]))
    if v.shape[dim] < 2:
        return float("inf")
    d = (v.narrow(dim, 0, v.shape[dim] - 1) - v.narrow(dim, 1, v.shape[dim] - 1)).abs()
    d = d[torch.isfinite(d)]
    return float(d.min()) if d.numel() else float("inf")


def _margin(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> float | None:
    x = args[0] if args else None
    if name == "nms":
        x = args[1] if len(args) > 1 else kwargs.get("scores")
    if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.numel() < 2:
        return None
    finite = x.detach()[torch.isfinite(x.detach())]
    scale = float(finite.abs().max()) if finite.numel() else 0.0
    if scale == 0.0:
        return None
    def arg(i: int, key: str, default: Any) -> Any:
        return args[i] if len(args) > i else kwargs.get(key, default)

    if name == "topk":
        gap = _gaps_along(x, arg(2, "dim", -1), int(arg(1, "k", 1)) + 1, bool(arg(3, "largest", True)))
    elif name in ("argmax", "argmin", "max", "min"):
        dim = arg(1, "dim", None)
        src, dim = (x.reshape(-1), 0) if dim is None else (x, dim)
        gap = _gaps_along(src, dim, 2, name in ("argmax", "max"))
    elif name in ("median", "kthvalue"):
        gap = _gaps_along(x, arg(2 if name == "kthvalue" else 1, "dim", -1), None, False)
    elif name == "nms":
        gap = _gaps_along(x.reshape(-1), 0, None, True)
    else:  # sort, argsort, msort
        gap = _gaps_along(x, 0 if name == "msort" else arg(1, "dim", -1), None, False)
    return gap / scale


class TieRecorder(HopAwareMode):
    """Active around an eager run: ``sites`` lists every selection with its relative margin, inside
    higher-order ops' subgraphs too (``blind`` names those whose insides it could not see)."""

    def __init__(self) -> None:
        super().__init__()
        self.sites: list[TieSite] = []

    def watch(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        packet = getattr(func, "overloadpacket", None)
        name = getattr(packet, "__name__", "")
        picks = name in _SELECT and not (name in _DIM_ONLY and overload_name(func) not in ("dim", "dim_max", "dim_min"))
        if picks:
            try:
                margin = _margin(name, tuple(args), kwargs)
            except Exception:  # a margin we cannot compute is no tie
                margin = None
            if margin is not None:
                x = args[1] if name == "nms" else args[0]
                ns = str(func).split(".")[0] if "." in str(func) else "aten"
                self.sites.append(TieSite(f"{ns}.{name}.{overload_name(func)}", margin, tie_eps(x.dtype, x.device),
                                          *_where()))
        return func(*args, **kwargs)

    def nearest(self) -> TieSite | None:
        """The selection closest to a tie among those under their eps, or None."""
        near = [s for s in self.sites if s.near]
        return min(near, key=lambda s: s.margin / s.eps) if near else None
