"""What aotiprint says on stderr: one line per finding, one summary."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from pt2kit.schema import as_float


class Narrator:
    def __init__(self, say: Callable[[str], None], label: str) -> None:
        self.say = say
        self.label = label

    def notes(self, records: list[Any]) -> None:
        for r in records:
            if getattr(r, "note", None):
                self.say(f"{self.label}: kernel {r.name} (launch {r.launch}): {r.note}")

    def summary(self, records: list[Any], finding: Any, mode: str) -> None:
        launches = {r.launch for r in records if r.launch >= 0}
        kernels = {r.name for r in records if r.launch >= 0}
        uninit = sum(1 for r in records for a in r.args if a.uninitialised)
        tail = f"; {uninit} output buffers before launch marked uninitialised" if uninit else ""
        self.say(f"{self.label}: {len(launches)} launches of {len(kernels)} kernels recorded ({mode}){tail}")
        if finding is None:
            if mode != "names" and launches:
                noted = any(getattr(r, "note", None) for r in records)
                self.say(f"{self.label}: " + ("no NaN/Inf finding: the outputs are finite, and the kernels' NaN/Inf "
                                              "is the model's own (see above)" if noted else
                                              "no NaN or Inf in any recorded kernel output"))
            return
        what = {"nan": "NaN", "inf": "Inf", "nan+inf": "NaN and Inf"}[finding.finding]
        if finding.launch < 0:
            bad = [a.name for a in finding.args if a.stats is not None and (a.stats.nan or a.stats.inf)]
            self.say(f"{self.label}: {what} already in the model's inputs ({', '.join(bad)})")
            return
        args = []
        for r in records:
            if r.launch == finding.launch and r.when == "after" and r.args:
                for a in r.args:
                    if a.stats is not None and (a.stats.nan or a.stats.inf):
                        lo, hi = as_float(a.stats.min), as_float(a.stats.max)
                        rng = f" (finite values {lo:.4g}..{hi:.4g})" if lo is not None and hi is not None \
                            and math.isfinite(lo) and math.isfinite(hi) else ""
                        args.append(f"{a.name}: {a.stats.nan} NaN, {a.stats.inf} Inf of {a.stats.numel}{rng}")
                break
        nodes = f"; fused nodes {', '.join(finding.nodes)}" if finding.nodes else ""
        self.say(f"{self.label}: first {what}: kernel {finding.name} (launch {finding.launch})"
                 + (f": {'; '.join(args)}" if args else "") + nodes)
        for src, code in zip(finding.sources, finding.code or [""] * len(finding.sources), strict=False):
            self.say(f"    {src}" + (f"  {code}" if code else ""))
