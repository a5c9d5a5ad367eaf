"""Error heatmaps as PNG blobs: |test - ref| folded to 2-D, max-pooled to at most 512x512 cells so
a single bad element stays visible, the worst element marked. matplotlib Figure, never pyplot."""

from __future__ import annotations

import io
import math

import torch

MAX_CELLS = 512


def fold(err: torch.Tensor) -> torch.Tensor:
    if err.dim() == 0:
        return err.reshape(1, 1)
    if err.dim() == 1:
        n = err.numel()
        cols = max(1, math.ceil(math.sqrt(n)))
        padded = torch.zeros(cols * math.ceil(n / cols), dtype=err.dtype)
        padded[:n] = err
        return padded.reshape(-1, cols)
    return err.reshape(-1, err.shape[-1])


def heatmap_png(ref: torch.Tensor, test: torch.Tensor, title: str) -> bytes:
    from matplotlib.figure import Figure

    a = ref.detach().cpu().to(torch.float64)
    b = test.detach().cpu().to(torch.float64)
    err = (a - b).abs()
    err = torch.where(torch.isnan(err), torch.full_like(err, math.inf), err)
    grid = fold(err)
    finite_max = float(grid[torch.isfinite(grid)].max()) if torch.isfinite(grid).any() else 1.0
    grid = torch.where(torch.isinf(grid), torch.full_like(grid, finite_max * 1.5 or 1.0), grid)
    h, w = grid.shape
    if h > MAX_CELLS or w > MAX_CELLS:
        grid = torch.nn.functional.adaptive_max_pool2d(grid[None, None].float(), (min(h, MAX_CELLS), min(w, MAX_CELLS)))[0, 0]
    fig = Figure(figsize=(6, 4.5), dpi=100)
    ax = fig.subplots()
    im = ax.imshow(grid.numpy(), cmap="magma", aspect="auto", interpolation="nearest")
    fig.colorbar(im, ax=ax, label="|test - ref| (NaN/Inf shown above the max)")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(f"last dim ({w})" + (" max-pooled" if w > MAX_CELLS else ""))
    ax.set_ylabel(f"rows ({h})" + (" max-pooled" if h > MAX_CELLS else ""))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()
