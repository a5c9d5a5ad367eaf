"""Every private (or moving) torch API minify uses, each behind one small function (tests/test_torchapi.py).

Checked on torch 2.13 (CPU, CI) and 2.11 (the GPU machine); where a name is missing on another torch,
each says what it falls back to. Imports torch only inside each function: the parent stays torch-free.
Exempt by contract: harness.py and answer.py, the code a repro.py embeds (torch alone, no pt2kit).
"""

from __future__ import annotations

import os
import sys

# What a compile needs of torch beyond ``import torch``, imported once by the zygote before it forks.
# Inductor's import asks CUDA for its devices where torch is built with CUDA, and a process that has
# asked can no longer fork a child that uses CUDA (torch "poisons" the fork): on CPU builds only.
PRELOAD = ("torch._dynamo",)
PRELOAD_CPU_BUILD = ("torch._inductor.compile_fx",)


def preload(cpu_build: bool) -> None:
    """Import Dynamo (and, on a CPU build, Inductor's compiler), so a forked child does not."""
    import importlib

    for name in PRELOAD + (PRELOAD_CPU_BUILD if cpu_build else ()):
        importlib.import_module(name)


def set_compile_threads(n: int) -> None:
    """How many compilers Inductor runs at once in this process: read from the environment where
    Inductor's config is not imported yet (a CUDA build's fork server leaves it out), set on the
    config where it is."""
    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = str(n)
    config = sys.modules.get("torch._inductor.config")
    if config is not None:
        config.compile_threads = n  # type: ignore[attr-defined]


def in_bad_fork() -> bool:
    """Whether torch marked this (forked) process unable to use CUDA: ``torch.cuda._is_in_bad_fork``;
    False on a torch without it."""
    import torch

    return bool(getattr(torch.cuda, "_is_in_bad_fork", lambda: False)())


def warm_inductor() -> None:
    """Inductor's once-a-process probes, answered before forking so that no child pays them again:
    the CPU's vector ISAs (a test compile per ISA its flags claim, each dlopened in a child Python:
    1-1.4 s in turn on a 2-core machine) and the hashes of torch's and triton's sources that key its
    caches (0.6 s). Each is a fact about this machine and installation, memoised in the process; a
    fresh ``python repro.py`` computes the same answers itself. Each ISA is probed in a thread of its
    own (each mostly waits on its child: 0.6 s at once), beside the hashing; all are joined before
    this returns. On a torch without these names it does nothing (its children pay the probes)."""
    import threading

    try:
        from torch._inductor import codecache, cpu_vec_isa

        probes = (codecache.torch_key, codecache.CacheBase.get_system)
        flags = cpu_vec_isa.x86_isa_checker() if hasattr(cpu_vec_isa, "x86_isa_checker") else []
        # bool(isa) memoises its probe on the instance valid_vec_isa_list then asks again
        claimed = [isa for isa in getattr(cpu_vec_isa, "supported_vec_isa_list", [])
                   if flags and all(f in flags for f in str(isa).split())]
        threads = [threading.Thread(target=bool, args=(isa,), daemon=True) for isa in claimed]
    except Exception:  # another torch: its children pay the probes themselves
        return
    for t in threads:
        t.start()
    try:
        for answer in probes:
            answer()
        for t in threads:
            t.join()
        cpu_vec_isa.valid_vec_isa_list()  # every ISA's answer is memoised by now: this assembles the list
    except Exception:  # a probe that fails here fails in the child too, where it is reported
        pass
