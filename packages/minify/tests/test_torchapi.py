"""One test per private torch API wrapper (minify/torchapi.py): when torch moves one, this file says which."""

from __future__ import annotations

import os
import subprocess
import sys

from pt2kit.minify import torchapi


def _in_fresh_python(code: str) -> str:
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_preload_imports_dynamo_and_on_a_cpu_build_inductors_compiler():
    out = _in_fresh_python("import sys\nfrom pt2kit.minify import torchapi\ntorchapi.preload(True)\n"
                           "print(all(m in sys.modules for m in ('torch._dynamo', 'torch._inductor.compile_fx')))")
    assert out == "True\n"


def test_set_compile_threads_sets_the_environment_and_a_loaded_inductor_config(monkeypatch):
    import torch._inductor.config as c

    monkeypatch.setattr(c, "compile_threads", c.compile_threads)
    monkeypatch.setenv("TORCHINDUCTOR_COMPILE_THREADS", os.environ.get("TORCHINDUCTOR_COMPILE_THREADS", "0"))
    torchapi.set_compile_threads(3)
    assert c.compile_threads == 3 and os.environ["TORCHINDUCTOR_COMPILE_THREADS"] == "3"


def test_in_bad_fork_is_false_in_a_process_that_never_asked_cuda_before_forking():
    out = _in_fresh_python("import torch\nfrom pt2kit.minify import torchapi\nprint(torchapi.in_bad_fork())")
    assert out == "False\n"


def test_warm_inductor_answers_the_machine_probes_in_this_process():
    # if torch renames a probe, the answers stay unmemoised here and every forked child pays them again
    code = ("import torch\nfrom pt2kit.minify import torchapi\nfrom torch._inductor import codecache, cpu_vec_isa\n"
            "torchapi.warm_inductor()\n"
            "print(cpu_vec_isa.valid_vec_isa_list.cache_info().currsize, "
            "codecache.CacheBase.get_system.cache_info().currsize)")
    assert _in_fresh_python(code) == "1 1\n"
