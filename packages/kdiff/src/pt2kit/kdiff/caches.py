"""What the compile under test reused of the caches the script's own compile filled, said in one line.

A max-autotune (or reduce-overhead) script autotunes as it compiles; the graph under test is compiled as
the script compiled it (its mode's settings), in the same Inductor cache folder (the environment's, as
the script's run had it), so a choice the script benchmarked is read back, not benchmarked again.
Guarantees: the line counts what Inductor counted during the test side's compile: FX graph cache hits and
misses, matmul selections read from the autotune cache and those benchmarked afresh; it names the folder
and why an FX graph could not be reused (the judging precision's settings are part of its key).
"""

from __future__ import annotations

from typing import Any

from .torchapi import compile_counters, inductor_cache_dir


class CacheUse:
    """Counts what a compile inside it reused (:meth:`line`); ``settings``: the Inductor settings every side
    runs under that the script's compile did not have (part of the FX graph cache's key)."""

    def __init__(self, settings: dict[str, str]) -> None:
        self.settings = settings
        self.before: dict[str, int] = {}
        self.after: dict[str, int] = {}

    def __enter__(self) -> CacheUse:
        self.before = compile_counters()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.after = compile_counters()

    def delta(self, key: str) -> int:
        return self.after.get(key, 0) - self.before.get(key, 0)

    def line(self, modes: list[str]) -> str | None:
        """One line, or None where none of a mode's settings (``modes``: :func:`.torchapi.mode_settings`) is on."""
        if not modes:
            return None
        autotuning = "max_autotune" in modes or "max_autotune_gemm" in modes
        hits, misses = self.delta("fxgraph_cache_hit"), self.delta("fxgraph_cache_miss")
        fresh, picks = self.delta("select_algorithm_autotune"), self.delta("mm_selections")
        parts = [f"FX graph cache {hits} hit, {misses} miss"]
        if misses and self.settings:
            parts[-1] += " (" + ", ".join(f"{k}={v}" for k, v in sorted(self.settings.items())) + " is in its key)"
        if autotuning and hits and not picks:
            parts.append("max-autotune: nothing autotuned, the compiled graph was read back whole")
        elif autotuning:
            reused = max(picks - fresh, 0)
            parts.append(f"max-autotune: {reused} matmul selection{'s' * (reused != 1)} read from the autotune cache, "
                         f"{fresh} benchmarked afresh" + (" (the script never met these shapes, or its cache is "
                                                          "elsewhere)" if fresh else ""))
        return (f"compiled under {', '.join(modes)} as the script was, in Inductor's cache {inductor_cache_dir()}: "
                + "; ".join(parts))
