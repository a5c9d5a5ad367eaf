"""The private torch API that pt2kit.runtime's own modules use, each use behind one small function.

Private API moves between torch releases without notice; here is the one place to mend when it does,
and tests/test_torchapi.py runs every function on the installed torch. A wrapper more than one package
needs (reset_dynamo, tree_map, is_op_overload) lives here once and the tools call it (those the
portable layer needs too live in ``pt2kit_portable`` and are re-exported here); a tool's own
``torchapi.py`` keeps only the wrappers that tool alone uses. The code a repro embeds (minify's
harness, this package's precision.py) is torch-only by contract and exempt.

Guarantees: importing this module does not import torch (each function imports what it needs when
called); every function works on torch 2.11 and 2.13. Not guaranteed: any other torch version (a
function may raise ImportError or AttributeError there: the test file says which one broke); the
names below are pt2kit's internals, not a library API for users.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

# torch API pt2kit_portable wraps (minify's repros and capture's boot carry it): one copy, used from there
from pt2kit_portable import (
    CONFIG_MODULES,
    backward_compiler,
    config_defaults,
    dispatch_mode,
    hop_name,
    is_hop,
    is_mutable,
    is_op_overload,
    left_out_of_repros,
    run_backward,
    tree_map,
)

__all__ = ["CONFIG_MODULES", "aot_autograd", "backward_compiler", "boxed", "config_defaults", "config_module",
           "cuda_asked_by_nvml", "dispatch_mode", "forget_vec_isa", "generate_code", "generating", "hop_name", "inductor_cache_keys",
           "is_hop", "is_mutable", "is_op_overload", "left_out_of_repros", "min_cut_partition", "pytree_key_children", "replay_vec_isa_answers",
           "reset_dynamo", "run_backward", "tree_map", "vec_isa_answers"]


def config_module(path: str) -> Any:
    """One of CONFIG_MODULES's torch config modules, imported."""
    return importlib.import_module(path)


def reset_dynamo() -> None:
    """Forget every graph Dynamo compiled (``torch._dynamo.reset``): the next call compiles afresh."""
    import torch._dynamo

    torch._dynamo.reset()


# Inductor settings its per-process vector-ISA caches are computed under
VEC_ISA_SETTINGS = frozenset({"cpp.vec_isa_ok", "cpp.simdlen"})


def forget_vec_isa() -> None:
    """Make Inductor pick its CPU vector ISA again, under the settings in force now. It decides once a
    process which ISAs are usable (``cpu_vec_isa.valid_vec_isa_list``, a functools.cache computed under
    ``cpp.vec_isa_ok`` at its first call) and, for the AVX-512 ones, whether each is (a functools.cache
    on ``__bool__``). Decided under other settings, the kernels of a graph are written vectorised while
    the compile line leaves out the vector header, or the reverse: a graph found in the shared on-disk
    cache then fails to build ("'at::vec' has not been declared"), and a vectorised kernel is stored
    under a key that says ``vec_isa_ok=False``. Nothing to do before Inductor's module is imported."""
    mod = sys.modules.get("torch._inductor.cpu_vec_isa")
    if mod is None:
        return
    mod.valid_vec_isa_list.cache_clear()
    for cls in vars(mod).values():
        if isinstance(cls, type):
            for fn in (cls.__dict__.get("__bool__"), cls.__dict__.get("_VecISA__bool__impl")):
                if hasattr(fn, "cache_clear"):
                    fn.cache_clear()


@contextlib.contextmanager
def cuda_asked_by_nvml() -> Iterator[None]:
    """(2.28) While inside, ``torch.cuda.is_available()`` counts devices through NVML, torch's own switch
    for it (``PYTORCH_NVML_BASED_CUDA_CHECK=1``, read at each call), instead of asking the CUDA driver,
    which marks every later fork of the process unable to use CUDA. Inductor's modules and its CPU probes
    ask it (a C++ build's options import ``torch.utils.cpp_extension``, which looks for CUDA_HOME), so a
    process that forks workers on a CUDA build does its imports and probes in here. The
    variable is as it was afterwards; where NVML cannot count, torch asks the driver as before (and the
    fork is bad: callers check)."""
    import os

    before = os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK")
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PYTORCH_NVML_BASED_CUDA_CHECK", None)
        else:
            os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = before


def warm_inductor() -> threading.Thread | None:
    """(2.27) Inductor's once-a-process probes, answered in a worker started ahead of its job so that the
    job does not pay them: what keys its caches (:func:`inductor_cache_keys`), then the CPU's vector ISAs
    (:func:`vec_isa_answers`). Each is a fact about this machine and installation, memoised in the
    process; a fresh ``python repro.py`` computes the same answers itself.

    (2.29) The ISA probes go on in a thread of their own once this returns (returned, to join), so a job
    that needs no Inductor does not wait on them: 1-2 s on a 2-core machine, 20 s and more on a GPU
    machine's cold cache. A job that compiles meanwhile meets them where it asks: each ISA's answer is
    memoised as it comes, and a build both ask for is built once (Inductor's file lock). The modules they
    need are imported before the thread starts (two threads importing torch's modules at once can see one
    half initialised); on a CUDA build that import asks the CUDA driver, which is fine in a process that
    does not fork. None on a torch without these names (the job pays the probes). Not for a process
    that forks afterwards: minify's fork server runs :func:`vec_isa_answers` in a fork of its own and
    memoises the answers with :func:`replay_vec_isa_answers`."""
    inductor_cache_keys()
    try:
        for name in ("torch._inductor.cpu_vec_isa", "torch._inductor.cpp_builder", "torch.utils.cpp_extension"):
            importlib.import_module(name)
        claimed = _claimed_vec_isas()
    except Exception:  # another torch: the job pays the probes itself
        return None
    # not vec_isa_answers: it records through a patched class and sets torch's NVML switch, which a job
    # running beside must not see
    probing = threading.Thread(target=_probe, args=(claimed,), name="pt2kit-inductor-probes", daemon=True)
    probing.start()
    return probing


def inductor_cache_keys(fork_safe: bool = False) -> None:
    """(2.29) What keys Inductor's caches, computed and memoised in this process now: the hash of torch's
    and triton's sources (0.6 s on a 2-core machine) and the system's description. ``fork_safe``: on a
    CUDA or ROCm build, not the description (it initialises CUDA, after which no fork may use it; each
    child computes it, 0.7 s). Nothing on a torch without them (the job computes them)."""
    try:
        import torch
        from torch._inductor import codecache

        codecache.torch_key()
        if not (fork_safe and (torch.version.cuda is not None or torch.version.hip is not None)):
            codecache.CacheBase.get_system()
    except Exception:  # another torch, or a probe that fails here and fails in the job too, where it is reported
        pass


def forget_cache_dirs() -> None:
    """(2.41) Forget what this process memoised of Inductor's cache folder (``CacheBase.get_local_cache_path``),
    so that the next compile reads ``TORCHINDUCTOR_CACHE_DIR`` afresh (a fork whose environment names another
    folder); nothing on a torch without it. Cheap: it imports nothing that is not imported already."""
    codecache = sys.modules.get("torch._inductor.codecache")
    memo = getattr(getattr(codecache, "CacheBase", None), "get_local_cache_path", None)
    if hasattr(memo, "cache_clear"):
        memo.cache_clear()


def _vec_isa_key(isa: Any, code: str) -> str:
    import hashlib

    return f"{type(isa).__name__} {isa.build_arch_flags()} {hashlib.sha256(code.encode()).hexdigest()[:16]}"


def _claimed_vec_isas() -> list[Any]:
    from torch._inductor import cpu_vec_isa

    flags = cpu_vec_isa.x86_isa_checker() if hasattr(cpu_vec_isa, "x86_isa_checker") else []
    return [isa for isa in getattr(cpu_vec_isa, "supported_vec_isa_list", [])
            if flags and all(f in flags for f in str(isa).split())]


def vec_isa_answers() -> dict[str, bool]:
    """(2.29) Inductor's probes of the CPU's vector ISAs, run here and memoised in this process: for each
    ISA the CPU's flags claim, a test compile dlopened in a child Python (1-1.4 s each on a 2-core machine,
    5-17 s on a 16-core GPU machine with a cold cache), each in a thread of its own (each mostly waits on
    its child), all joined before this returns. Returns every build check's answer, keyed by the ISA, its
    flags and the code built, for :func:`replay_vec_isa_answers` in another process; {} on a torch without
    these names. Runs under :func:`cuda_asked_by_nvml` (a C++ build's options look for CUDA)."""
    try:
        from torch._inductor import cpu_vec_isa

        real = cpu_vec_isa.VecISA.check_build
        claimed = _claimed_vec_isas()
    except Exception:  # another torch: the job pays the probes itself
        return {}
    answers: dict[str, bool] = {}

    def recorded(isa: Any, code: str) -> bool:
        ok = real(isa, code)
        answers[_vec_isa_key(isa, code)] = bool(ok)
        return ok

    cpu_vec_isa.VecISA.check_build = recorded
    try:
        with cuda_asked_by_nvml():
            _probe(claimed)
    finally:
        cpu_vec_isa.VecISA.check_build = real
    return answers


def _probe(claimed: list[Any]) -> None:
    """Each claimed ISA probed in a thread of its own (each mostly waits on its child), all joined, then
    the list assembled from the memoised answers (bool(isa) memoises on the instance the list asks)."""
    try:
        from torch._inductor import cpu_vec_isa

        threads = [threading.Thread(target=bool, args=(isa,), daemon=True) for isa in claimed]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        cpu_vec_isa.valid_vec_isa_list()
    except Exception:  # a probe that fails here fails in the job too, where it is reported
        pass


def replay_vec_isa_answers(answers: dict[str, bool]) -> None:
    """(2.29) Memoise :func:`vec_isa_answers`'s answers, computed in another process on this machine, as if
    this process had probed: no compile, no child, no thread. A check it has no answer for is run."""
    try:
        from torch._inductor import cpu_vec_isa

        real = cpu_vec_isa.VecISA.check_build
        claimed = _claimed_vec_isas()
    except Exception:
        return

    def replayed(isa: Any, code: str) -> bool:
        key = _vec_isa_key(isa, code)
        return answers[key] if key in answers else real(isa, code)

    cpu_vec_isa.VecISA.check_build = replayed
    try:
        for isa in claimed:
            bool(isa)
        cpu_vec_isa.valid_vec_isa_list()
    except Exception:
        pass
    finally:
        cpu_vec_isa.VecISA.check_build = real


def dynamo_counts() -> tuple[int, list[str]]:
    """(graphs Dynamo has compiled in this process, the reasons it gave for code it would not trace, each
    in Dynamo's own words, oldest first): ``torch._dynamo.utils.counters``, which ``reset_dynamo`` keeps."""
    from torch._dynamo.utils import counters

    reasons = [*counters["unimplemented"], *counters["graph_break"]]
    return int(counters["stats"]["unique_graphs"]), [str(r) for r in reasons]


def pytree_key_children(obj: Any) -> list[tuple[str, Any]] | None:
    """The children of an object of a class registered with torch's pytree, each with the key path
    pytree names it by (``[0]``, ``['logits']``, ``.hidden``), or None for a class not registered
    (``SUPPORTED_NODES``, ``keystr``). Only consults torch when its pytree is already imported: never
    imports torch itself, and any failure means "not registered"."""
    pytree = sys.modules.get("torch.utils._pytree")
    if pytree is None:
        return None
    try:
        node = pytree.SUPPORTED_NODES.get(type(obj))
        if node is None or node.flatten_with_keys_fn is None:
            return None
        pairs, _ = node.flatten_with_keys_fn(obj)
        return [(pytree.keystr((k,)), v) for k, v in pairs]
    except Exception:
        return None


def aot_autograd(**compilers: Any) -> Any:
    """A torch.compile backend that traces Dynamo's graph through AOTAutograd into aten graphs and hands
    them to ``fw_compiler`` / ``bw_compiler``."""
    from torch._dynamo.backends.common import aot_autograd as make

    return make(**compilers)


def min_cut_partition() -> Any:
    """The partitioner Inductor splits a joint graph with (``min_cut_rematerialization_partition``): the
    backward graph it gives is the one Inductor compiles, saved values and recomputation alike."""
    from functorch.compile import min_cut_rematerialization_partition

    return min_cut_rematerialization_partition


def boxed(fn: Callable[..., Any]) -> Any:
    """``fn`` in AOTAutograd's boxed calling convention (``make_boxed_func``: one list of arguments)."""
    from functorch.compile import make_boxed_func

    return make_boxed_func(fn)


def generate_code(gm: Any) -> None:
    """Make FX generate a graph module's Python code now, not lazily at its first call."""
    from torch.fx._lazy_graph_module import _LazyGraphModule

    _LazyGraphModule.force_recompile(gm)


# what hands back an earlier compile's output without generating it: Inductor's FX graph cache, AOTAutograd's, and
# Dynamo's profile of dynamic shapes (a profile an earlier run left changes which dims are dynamic)
_GENERATING = {"torch._inductor.config": "fx_graph_cache", "torch._functorch.config": "enable_autograd_cache",
               "torch._dynamo.config": "automatic_dynamic_local_pgo"}


@contextlib.contextmanager
def generating() -> Iterator[None]:
    """Inductor generates the code of each compile inside the block (a tool that reads or rewrites that code):
    the caches of :data:`_GENERATING` off. Not ``force_disable_caches``: that also moves each compile to a fresh
    folder, where the vec-ISA probes and every kernel are built again (about 6 s of g++ a compile on 2 cores); a
    built kernel is found by its source and compile command, so loading it changes no generated code."""
    with contextlib.ExitStack() as stack:
        for module, key in _GENERATING.items():
            config = importlib.import_module(module)
            if hasattr(config, key):
                stack.enter_context(config.patch({key: False}))
        yield


def compile_counters() -> dict[str, int]:
    """(2.45) What Inductor and AOTAutograd count as they compile (``torch._dynamo.utils.counters``), this
    process so far: ``fxgraph_cache_hit``/``_miss``/``_bypass``, ``autograd_cache_hit``/``_miss``,
    ``select_algorithm_autotune`` (one per choice benchmarked afresh: an autotune cache hit skips it) and
    ``mm_selections`` (matmul-family lowerings, each a selection under max-autotune: ``aten_mm_info``) and
    (2.47.2) ``cudagraph_wrapped`` (:func:`cudagraph_wrapped`)."""
    from torch._dynamo.utils import counters

    out = {k: int(v) for k, v in counters["inductor"].items()
           if k.startswith("fxgraph_cache_") or k == "select_algorithm_autotune"}
    out.update({k: int(v) for k, v in counters["aot_autograd"].items() if k.startswith("autograd_cache_")})
    out["mm_selections"] = sum(int(v) for v in counters["aten_mm_info"].values())
    out["cudagraph_wrapped"] = cudagraph_wrapped()
    return out


_TREES = "torch._inductor.cudagraph_trees"
_DROPPED = [0]  # graphs the trees held when a reset emptied them (counting_cudagraphs_across_resets)


def cudagraph_wrapped() -> int:
    """(2.47.2) How many compiled graphs Inductor's CUDA graph trees hold now (``triton.cudagraphs``, which
    ``mode="reduce-overhead"`` and ``"max-autotune"`` turn on, wraps a graph at its first call): counted from
    the trees, not from Inductor's skip counter, which misses skips off CUDA. (2.49) Plus those the trees held
    when a reset emptied them inside :func:`counting_cudagraphs_across_resets`."""
    return _DROPPED[0] + _cudagraphs_held()


def _cudagraphs_held() -> int:
    import torch

    trees = sys.modules.get(_TREES)  # never imported: nothing was wrapped
    if trees is None or not torch._C._is_key_in_tls("tree_manager_containers"):
        return 0
    containers = trees.get_obj(trees.local, "tree_manager_containers")
    return sum(len(c.tree_manager.ids_to_funcs) for c in list(containers.values()) if c.tree_manager is not None)


@contextlib.contextmanager
def counting_cudagraphs_across_resets() -> Iterator[None]:
    """(2.49) Inside, every emptying of the CUDA graph trees (``torch._dynamo.reset`` calls
    ``cudagraph_trees.reset_cudagraph_trees``, looked up at each call) first adds what they held to
    :func:`cudagraph_wrapped`: minify's candidates reset Dynamo after each run, so a count read at the end
    of a request saw none of them (an H200 read "0 of 26 wrapped"). Without CUDA, where the module is not
    imported yet, nothing is changed."""
    import torch

    if _TREES not in sys.modules and not torch.cuda.is_available():
        yield  # no CUDA: the trees wrap nothing (and importing them costs seconds)
        return
    trees = importlib.import_module(_TREES)
    original = trees.reset_cudagraph_trees

    def reset_counted() -> None:
        _DROPPED[0] += _cudagraphs_held()
        original()

    trees.reset_cudagraph_trees = reset_counted
    try:
        yield
    finally:
        trees.reset_cudagraph_trees = original


def inductor_cache_dir() -> str:
    """(2.45) The folder Inductor caches in for this process (``TORCHINDUCTOR_CACHE_DIR``, else its default
    under the temporary folder): its FX graphs, kernels and the autotune results of max-autotune."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    return cache_dir()


MODE_SETTINGS = ("max_autotune", "max_autotune_gemm", "coordinate_descent_tuning", "triton.cudagraphs")


def mode_settings() -> list[str]:
    """(2.45) Which of the Inductor settings ``mode="max-autotune"`` and ``"reduce-overhead"`` stand for are
    on now (:data:`MODE_SETTINGS`, ``torch._inductor.list_mode_options``): those whose compile a cache saves."""
    from torch._inductor import config

    return [k for k in MODE_SETTINGS if config.get_config_copy().get(k)]


def fx_key_globals() -> dict[str, Any]:
    """(2.47) The global torch settings Inductor's FX graph cache puts in a graph's key besides its config
    (``torch._inductor.codecache.FxGraphHashDetails``: deterministic algorithms, CUDA matmul precision), by
    name: a setting another run changed is why it could not read that run's compiled graph back. A setting
    this torch lacks is left out."""
    import torch

    reads = {"torch.use_deterministic_algorithms": torch.are_deterministic_algorithms_enabled,
             "deterministic warn_only": torch.is_deterministic_algorithms_warn_only_enabled,
             "torch.utils.deterministic.fill_uninitialized_memory":
                 lambda: torch.utils.deterministic.fill_uninitialized_memory,
             "torch.backends.cuda.matmul.fp32_precision": lambda: torch.backends.cuda.matmul.fp32_precision,
             "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction":
                 lambda: torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
             "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction":
                 lambda: torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction}
    out = {}
    for name, read in reads.items():
        with contextlib.suppress(AttributeError, RuntimeError):
            out[name] = read()
    return out

