"""What a compile reused of the caches the script's own compile filled, said in one line; and the folder
a tool's worker compiles a captured graph in: the script's.

A max-autotune (or reduce-overhead) script autotunes as it compiles and keeps what it benchmarked in
Inductor's cache folder. ``pt2kit capture`` records that folder (``Captured.cache_dir``); a tool's worker
compiles the graph in it (:func:`use_script_cache`) unless the tool's own environment names one
(``TORCHINDUCTOR_CACHE_DIR``: the user's choice wins, and the line says the script's was elsewhere), so a
choice the script benchmarked is read back, not benchmarked again.
Guarantees: :class:`CacheUse` counts what Inductor counted during the compiles inside it (FX graph cache
hits and misses, matmul selections read from the autotune cache and those benchmarked afresh) and their
seconds; its line names the folder, whose it is, and why an FX graph could not be reused (the judging
precision's settings are part of its key). Not guaranteed: that the script's choices are still there (a
folder someone emptied reads as "benchmarked afresh").
"""

from __future__ import annotations

import os
import time
from typing import Any

from ..shims.torchapi import MODE_SETTINGS, compile_counters, forget_cache_dirs, inductor_cache_dir

ENV = "TORCHINDUCTOR_CACHE_DIR"
INDUCTOR = "torch._inductor.config"
_SCRIPT: dict[str, Any] = {"folder": None, "given": False}  # what use_script_cache was told, for the line


def use_script_cache(folder: str | None, given: bool) -> None:
    """Compile in ``folder`` (the script's Inductor cache, from its capture) from now on in this process,
    where the tool's environment named none (``given`` False) and the folder is still there; remembered
    either way for :meth:`CacheUse.line`."""
    _SCRIPT.update(folder=folder, given=given)
    if folder and not given and os.path.isdir(folder):
        os.environ[ENV] = folder
        forget_cache_dirs()  # what Inductor memoised of the folder it read before (a warm worker's)


def script_env(folder: str | None, given: bool, environ: dict[str, str]) -> dict[str, str] | None:
    """The environment a tool's own workers compile a piped graph in: ``environ`` with the script's Inductor
    cache ``folder`` (:func:`use_script_cache`'s rule, for workers the tool starts itself); None: unchanged."""
    if not folder or given or not os.path.isdir(folder) or environ.get(ENV) == folder:
        return None
    return {**environ, ENV: folder}


def modes_in(config: dict[str, dict[str, str]]) -> list[str]:
    """:data:`..shims.torchapi.MODE_SETTINGS` on in a resolved config ({module: {key: literal}}), read without torch."""
    inductor = config.get(INDUCTOR, {})
    return [k for k in MODE_SETTINGS if inductor.get(k) == "True"]


def folder_said(here: str, script: str | None, given: bool) -> str:
    """``here``, the folder a compile cached in, and whose it is against the script's (:func:`use_script_cache`)."""
    here = os.path.abspath(here)
    if script is None:
        return f"in Inductor's cache {here}"
    if here == os.path.abspath(script):
        return f"in the script's Inductor cache {here}"
    why = f"{ENV} names it" if given else "it is gone"
    return f"in Inductor's cache {here}, not the script's {script} ({why})"


class CacheUse:
    """Counts what the compiles inside it reused, and times them (:meth:`line`); ``settings``: the Inductor
    settings every side runs under that the script's compile did not have (part of the FX graph cache's key).
    Several blocks add up (:meth:`add` takes another process's :meth:`counts`)."""

    def __init__(self, settings: dict[str, str], script: str | None = None, given: bool = False) -> None:
        self.settings = settings
        self.grew: dict[str, int] = {}
        self.seconds = 0.0
        self.folder: str | None = None  # where the compiles cached
        self.script, self.given = script, given  # the script's folder, and whether the tool's environment named one
        self.before: dict[str, int] = {}
        self.start = 0.0

    def __enter__(self) -> CacheUse:
        self.before, self.start = compile_counters(), time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        after = compile_counters()
        self.folder, self.script, self.given = inductor_cache_dir(), _SCRIPT["folder"], _SCRIPT["given"]
        self.add({"grew": {k: after.get(k, 0) - self.before.get(k, 0) for k in after},
                  "seconds": time.perf_counter() - self.start})

    def add(self, counts: dict[str, Any]) -> None:
        """Another block's :meth:`counts` (another process's) added to this one's."""
        for k, v in counts.get("grew", {}).items():
            self.grew[k] = self.grew.get(k, 0) + int(v)
        self.seconds += float(counts.get("seconds", 0.0))
        self.folder = counts.get("folder") or self.folder

    def counts(self) -> dict[str, Any]:
        """What :meth:`add` takes, as plain data: a worker hands it to its parent."""
        return {"grew": dict(self.grew), "seconds": self.seconds, "folder": self.folder}

    def compiled_without_cudagraphs(self) -> None:
        """(2.51) Every graph compiled inside was compiled with ``triton.cudagraphs`` off (a minify candidate
        whose config dropped the script's mode): :meth:`line` counts them apart from the ones CUDA graphs skipped."""
        self.grew["cudagraph_off"] = sum(self.delta(f"fxgraph_cache_{k}") for k in ("hit", "miss", "bypass"))

    def delta(self, key: str) -> int:
        return self.grew.get(key, 0)

    def line(self, modes: list[str], what: str = "compiled", workers: bool = False) -> str | None:
        """One line, or None where none of a mode's settings (``modes``: :func:`..shims.torchapi.mode_settings`) is on;
        ``what``: the compiles counted ("compiled", "38 candidates compiled"); ``workers``: the seconds are
        several processes' added up."""
        if not modes or self.folder is None:
            return None
        autotuning = "max_autotune" in modes or "max_autotune_gemm" in modes
        hits, misses = self.delta("fxgraph_cache_hit"), self.delta("fxgraph_cache_miss")
        fresh, picks = self.delta("select_algorithm_autotune"), self.delta("mm_selections")
        parts = [f"FX graph cache {hits} hit, {misses} miss"]
        if misses and self.settings:  # why the script's compiled graph was not read back
            keyed = [f"{k}={v}" for k, v in sorted(self.settings.items())]
            harness = any(not k.startswith("inductor.") for k in self.settings)  # the harness's torch settings
            kept = "the script's" if self.script else "the configured ones"
            parts[-1] += (f" ({', '.join(keyed)} {'is' if len(keyed) == 1 else 'are'} in its key"
                          + (f"; --precision as-configured keeps {kept}" if harness else "") + ")")
        if autotuning and not picks:  # the graphs with a matmul were FX graph cache hits, or there were none
            parts.append("max-autotune: nothing autotuned, " + ("the compiled graph was read back whole" if hits and
                                                                not misses else "no matmul was compiled afresh"))
        elif autotuning:
            reused = max(picks - fresh, 0)
            parts.append(f"max-autotune: {reused} matmul selection{'s' * (reused != 1)} read from the autotune cache, "
                         f"{fresh} benchmarked afresh" + (" (shapes the script never autotuned, or a cache folder "
                                                          "without its results)" if fresh else ""))
        if "triton.cudagraphs" in modes:
            parts.extend(self._cudagraphs(hits + misses + self.delta("fxgraph_cache_bypass")))
        where = folder_said(self.folder, self.script, self.given)
        took = f"{self.seconds:.1f} s" + (" (the workers' added up)" if workers else "")
        # the modes are the script's only where a capture recorded it; a model file named alone has its own
        whose = "as the script was" if self.script else "as configured"
        return f"{what} under {', '.join(modes)} {whose}, {where}, in {took}: " + "; ".join(parts)

    def _cudagraphs(self, graphs: int) -> list[str]:
        """reduce-overhead's part: how many of the ``graphs`` compiled Inductor wrapped in CUDA graphs (a graph
        it skips, on the CPU or one it will not record, is run as compiled, and so judged without them)."""
        off = min(max(self.delta("cudagraph_off"), 0), graphs)  # a candidate's, compiled without the setting
        graphs -= off
        if not graphs and not off:
            return []
        wrapped = min(max(self.delta("cudagraph_wrapped"), 0), graphs)
        return [f"CUDA graphs: {wrapped} of {graphs} graph{'s' * (graphs != 1)} wrapped"
                + (f", {graphs - wrapped} skipped (a CPU graph, or one Inductor will not record: TORCH_LOGS=cudagraphs "
                   "says why)" if graphs > wrapped else "")
                + (f", {off} compiled without triton.cudagraphs (a candidate whose config dropped it)" if off else "")]
