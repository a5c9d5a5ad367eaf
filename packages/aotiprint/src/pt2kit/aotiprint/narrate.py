"""What aotiprint says on stderr, read from the typed `kernel` records the parent writes: a line per
launch whose NaN/Inf is information only, one summary, and the finding with the user's lines."""

from __future__ import annotations

import math
from typing import Any

from pt2kit.runtime.common.errors import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE
from pt2kit.runtime.parent.narrate import Narrator as Base
from pt2kit.schema import Kernel, as_float

from .work import Result


class Narrator(Base):
    def __init__(self, say: Any, label: str, job: Any = None) -> None:
        super().__init__(say, label, job)
        self.kernels: list[Kernel] = []

    def on_kernel(self, r: Kernel) -> None:
        self.kernels.append(r)
        if r.note:
            self.say(f"{self.label}: kernel {r.name} (launch {r.launch}): {r.note}")

    def finish(self, value: Result | None, notes: dict[str, Any]) -> int:
        """The summary; ``value`` (the worker's :class:`.work.Result`, converted once by :mod:`.drive`) is
        None when the worker crashed (the parent records the crash)."""
        if notes.get("hops"):
            self.say(f"{self.label}: {notes['hops']}")
        finding = next((r for r in self.kernels if r.finding), None)
        if value is not None and value.nothing_compiled and finding is None:  # no kernel of Inductor's ran
            self.say(f"{self.label}: {value.nothing_compiled}; no kernel to print")
            return EXIT_FINDINGS
        self._summary(finding)
        wanted = self.job.kernels or []
        unmatched = [k for k in wanted if not any(r.name == k for r in self.kernels)]
        if unmatched and value is not None:
            self.say(f"warning: --kernels: no kernel named {', '.join(unmatched)} ran (names as the printer shows "
                     "them; run without --kernels to see them)")
            if len(unmatched) == len(wanted):
                return EXIT_USAGE
        return EXIT_FINDINGS if finding is not None else EXIT_OK

    def _summary(self, finding: Kernel | None) -> None:
        records, detail = self.kernels, self.job.detail
        launches = {r.launch for r in records if r.launch >= 0}
        kernels = {r.name for r in records if r.launch >= 0}
        uninit = sum(1 for r in records for a in r.args if a.uninitialised)
        tail = f"; {uninit} output buffers before launch marked uninitialised" if uninit else ""
        self.say(f"{self.label}: {len(launches)} launches of {len(kernels)} kernels recorded ({detail}){tail}")
        if finding is None:
            if detail != "names" and launches:
                noted = any(r.note for r in records)
                self.say(f"{self.label}: " + ("no NaN/Inf finding: the outputs are finite, and the kernels' NaN/Inf "
                                              "is the model's own (see above)" if noted else
                                              "no NaN or Inf in any recorded kernel output"))
            return
        what = {"nan": "NaN", "inf": "Inf", "nan+inf": "NaN and Inf"}[finding.finding or ""]
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
