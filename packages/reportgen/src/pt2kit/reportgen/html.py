"""The HTML page: one self-contained file, every string from records escaped by jinja2's
autoescape, data embedded through ``|tojson`` (which escapes ``<``, ``>``, ``&`` and quotes), a CSP
that allows no script and no network, plots inline as SVG.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from pt2kit.schema import as_float

from . import __version__, plots
from .blobs import Blobs
from .collection import (
    Collection,
    by_constraint,
    captured_line,
    captured_models,
    counts,
    environment,
    fmt,
    group_violations,
    kernel_nonfinite,
)
from .failures import PROCESS, failures

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'none'; base-uri 'none'; form-action 'none'"


def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["num"] = fmt
    env.filters["href"] = safe_href
    env.filters["shown"] = shown
    return env


def shown(value: Any) -> str:
    """A ``file:line`` as the user would type it: relative to the folder the page is made in, where it is
    inside it (``examples/train.py:32``); as it is otherwise."""
    text, here = str(value or ""), os.getcwd().rstrip(os.sep) + os.sep
    return text[len(here):] if text.startswith(here) else text


def safe_href(value: Any) -> str:
    """An href the page may carry: a relative path, a ``file:`` URI or an in-page anchor.

    Every link the page makes is built by :mod:`.blobs` from a store path; this is the last guard,
    so no ``javascript:``, ``data:`` or remote URL can reach an ``<a>`` whatever a record holds.
    """
    text = str(value or "")
    if any(ord(ch) < 0x20 or ch in "\\\x7f" for ch in text):
        return "#"
    if text.startswith("#") or text.startswith("file:///"):
        return text
    head = text.split("/", 1)[0]
    return "#" if ":" in head or text.startswith("//") else text


def _kernel_rows(c: Collection) -> tuple[list[dict[str, Any]], str | None]:
    rows, labels, peaks, bad = [], [], [], []
    for k in c.of("kernel"):
        nonfinite = kernel_nonfinite(k)
        rows.append({"k": k, "nonfinite": nonfinite})
        if k.when == "after":
            vals = [abs(as_float(x) or 0.0) for a in k.args if a.stats and not a.uninitialised
                    for x in (a.stats.min, a.stats.max) if x is not None]
            labels.append(f"{k.launch}:{k.name}")
            peaks.append(max(vals) if vals else None)
            bad.append(nonfinite)
    svg = plots.kernel_ranges(labels, peaks, bad, title="Largest |value| written per kernel launch") if labels else None
    return rows, svg


def _bench_chart(c: Collection) -> str | None:
    benches = [b for b in c.of("bench") if b.latency is not None]
    if not benches:
        return None
    models = list(dict.fromkeys(b.model or "(model)" for b in benches))
    backends = list(dict.fromkeys(b.backend for b in benches))
    series: dict[str, list[float | None]] = {be: [None] * len(models) for be in backends}
    for b in benches:
        series[b.backend][models.index(b.model or "(model)")] = b.latency.median * 1000
    return plots.grouped_bars(models, series, title="Median latency per call", ylabel="ms")


def context(c: Collection, blobs: Blobs, title: str) -> dict[str, Any]:
    n = counts(c)
    def blob(rec: Any, ref: Any) -> Any:
        return blobs.view(ref, c.store_for(rec)) if ref is not None else None

    kernel_rows, kernel_svg = _kernel_rows(c)
    constraint_counts = by_constraint(c)
    guards_by_frame: dict[str, list[Any]] = {}
    for g in c.of("guard"):
        guards_by_frame.setdefault(g.frame, []).append(g)
    # each compile's whole guard tree stays in the store, linked: inlined, thousands of guards made pages of MBs
    guard_trees = {f: blob(gs[0], gs[0].full) for f, gs in guards_by_frame.items() if gs[0].full is not None}
    return {
        "guard_trees": guard_trees,
        "title": title,
        "version": __version__,
        "csp": Markup(CSP),  # our constant: its quotes must stay quotes
        "n": n,
        "env": environment(c),
        "runs": list(c.runs.values()),
        "summary_json": {"counts": n, "constraints": constraint_counts, "unknown": dict(c.unknown)},
        "captured": [{"m": m, "line": captured_line(m), "code": blob(m, m.captured.code)} for m in captured_models(c)],
        "violations": group_violations(c),
        "constraint_svg": Markup(plots.bars(list(constraint_counts), list(constraint_counts.values()),
                                            title="Findings by constraint")) if constraint_counts else None,
        "graphs": [{"g": g, "code": blob(g, g.code), "kernels": list(zip(g.kernels, [blob(g, b) for b in g.blobs], strict=False))}
                   for g in c.of("graph")],
        "diffs": [{"d": d, "heatmap": blob(d, d.heatmap)} for d in c.of("diff")],
        "divergences": c.of("divergence"),
        "breaks": c.of("graph_break"),
        "guards_by_frame": guards_by_frame,
        "recompiles": c.of("recompile"),
        "variants": c.of("variant"),
        "advice": c.of("advice"),
        "kernels": kernel_rows,
        "kernel_svg": Markup(kernel_svg) if kernel_svg else None,
        "benches": c.of("bench"),
        "bench_svg": Markup(svg) if (svg := _bench_chart(c)) else None,
        "repros": [{"r": r, "file": blob(r, r.path)} for r in c.of("repro")],
        "fails": failures(c, blob),
        "crashes": c.of("crash"),
        "unnamed": PROCESS,  # a crash's heading where it names no graph: the process's own end
        "errors": c.of("error"),
        "unknown": sorted(Counter(c.unknown).items()),
    }


def render_html(c: Collection, blobs: Blobs, title: str = "pt2kit report") -> str:
    return _env().get_template("report.html.j2").render(**context(c, blobs, title))
