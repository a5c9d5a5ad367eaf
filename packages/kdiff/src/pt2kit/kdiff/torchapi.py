"""Every private (or moving) torch API kdiff uses, each behind one small function (tests/test_torchapi.py).

Checked on torch 2.13 (CPU, CI) and 2.11 (the GPU machine). Guarantees: each function does what its
docstring says on those two versions, and kdiff calls private torch API nowhere else. Not guaranteed:
any other torch version; where one renames or drops an API, the function raises (AttributeError,
ImportError), except :func:`original_module`, which falls back to what it was given.
"""

from __future__ import annotations

from typing import Any


def original_module(fn: Any) -> Any:
    """The module a ``torch.compile`` wrapper (OptimizedModule) wraps; ``fn`` itself for anything else."""
    return getattr(fn, "_orig_mod", fn)


def overload_name(func: Any) -> str:
    """An aten OpOverload's overload: ``"dim"`` for ``aten.max.dim``, ``"default"`` for ``aten.topk.default``."""
    return func._overloadname


def aoti_load(exported: Any, path: str) -> Any:
    """``exported`` (a torch.export ExportedProgram) compiled into an AOT Inductor package at ``path``
    (``torch._inductor.aoti_compile_and_package``) and loaded (``aoti_load_package``): a callable that runs
    it and keeps working once ``path`` is gone (the loader unpacks it)."""
    import torch._inductor

    return torch._inductor.aoti_load_package(torch._inductor.aoti_compile_and_package(exported, package_path=path))


def compile_counters() -> dict[str, int]:
    """What Inductor and AOTAutograd count as they compile (``torch._dynamo.utils.counters``), this process
    so far: ``fxgraph_cache_hit``/``_miss``/``_bypass``, ``autograd_cache_hit``/``_miss``,
    ``select_algorithm_autotune`` (one per choice benchmarked afresh: an autotune cache hit skips it) and
    ``mm_selections`` (matmul-family lowerings, each a selection under max-autotune: ``aten_mm_info``)."""
    from torch._dynamo.utils import counters

    out = {k: int(v) for k, v in counters["inductor"].items()
           if k.startswith("fxgraph_cache_") or k == "select_algorithm_autotune"}
    out.update({k: int(v) for k, v in counters["aot_autograd"].items() if k.startswith("autograd_cache_")})
    out["mm_selections"] = sum(int(v) for v in counters["aten_mm_info"].values())
    return out


def inductor_cache_dir() -> str:
    """The folder Inductor caches in for this process (``TORCHINDUCTOR_CACHE_DIR``, else its default under
    the temporary folder): its FX graphs, kernels and the autotune results of max-autotune."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    return cache_dir()


MODE_SETTINGS = ("max_autotune", "max_autotune_gemm", "coordinate_descent_tuning", "triton.cudagraphs")


def mode_settings() -> list[str]:
    """Which of the Inductor settings ``mode="max-autotune"`` and ``"reduce-overhead"`` stand for are on now
    (:data:`MODE_SETTINGS`, ``torch._inductor.list_mode_options``): the ones whose compile costs a cache saves."""
    from torch._inductor import config

    return [k for k in MODE_SETTINGS if config.get_config_copy().get(k)]
