"""Plots as inline SVG, byte-for-byte reproducible: matplotlib's Figure (never pyplot), a fixed
hash salt, no date, text kept as text. matplotlib is imported here only, when a page needs a plot.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import Any

PALETTE = ["#3b6ea8", "#d9822b", "#3f9a5a", "#b8433a", "#7a5ca8", "#8c6d46", "#c25d9c", "#6b6b6b"]


def _svg(fig: Any) -> str:
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": "pt2kit", "svg.fonttype": "none"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _plain(label: object) -> str:
    """A label drawn as written: matplotlib reads ``$...$`` as mathtext (and raises on bad TeX);
    an escaped dollar is a dollar. Labels come from records, so every one goes through here."""
    return str(label).replace("$", "\\$")


def _figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100)
    return fig, fig.subplots()


def bars(labels: Sequence[str], values: Sequence[float], *, title: str, xlabel: str = "") -> str:
    fig, ax = _figure(6.5, 0.35 * len(labels) + 1.0)
    ys = list(range(len(labels)))
    ax.barh(ys, values, color=[PALETTE[i % len(PALETTE)] for i in ys])
    ax.set_yticks(ys, labels=[_plain(x) for x in labels])
    ax.invert_yaxis()
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    for y, v in zip(ys, values, strict=True):
        ax.text(v, y, f" {v:g}", va="center", fontsize=8)
    ax.spines[["top", "right"]].set_visible(False)
    return _svg(fig)


def grouped_bars(groups: Sequence[str], series: dict[str, Sequence[float | None]], *, title: str, ylabel: str) -> str:
    fig, ax = _figure(7.0, 3.2)
    n = max(len(series), 1)
    width = 0.8 / n
    for i, (name, values) in enumerate(series.items()):
        xs = [g + (i - (n - 1) / 2) * width for g in range(len(groups))]
        ax.bar(xs, [v if v is not None else 0 for v in values], width, label=_plain(name), color=PALETTE[i % len(PALETTE)])
    ax.set_xticks(range(len(groups)), labels=[_plain(g) for g in groups], fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    return _svg(fig)


def kernel_ranges(launches: Sequence[str], peaks: Sequence[float | None], bad: Sequence[bool], *, title: str) -> str:
    """Largest |value| each kernel launch wrote (log scale); launches with NaN/Inf in red."""
    fig, ax = _figure(7.0, 3.0)
    xs = list(range(len(launches)))
    finite = [p if p is not None and math.isfinite(p) and p > 0 else None for p in peaks]
    ax.plot([x for x, p in zip(xs, finite, strict=True) if p is not None], [p for p in finite if p is not None],
            marker="o", ms=3, lw=1, color=PALETTE[0], label="max |value| after launch")
    top = max([p for p in finite if p is not None] or [1.0])
    bad_x = [x for x, b in zip(xs, bad, strict=True) if b]
    if bad_x:
        ax.scatter(bad_x, [top] * len(bad_x), marker="x", color=PALETTE[3], zorder=3, label="NaN/Inf")
    ax.set_yscale("log")
    step = max(1, len(xs) // 20)
    ax.set_xticks(xs[::step], labels=[_plain(launches[i]) for i in xs[::step]], rotation=60, ha="right", fontsize=7)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    return _svg(fig)
