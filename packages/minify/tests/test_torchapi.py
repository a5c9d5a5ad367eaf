"""One test per private torch API wrapper (minify/worker/torchapi.py): when torch moves one, this file says which."""

from __future__ import annotations

import os
import subprocess
import sys

from pt2kit.minify.worker import torchapi


def _in_fresh_python(code: str) -> str:
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_preload_imports_dynamo_and_inductors_compiler():
    out = _in_fresh_python("import sys\nfrom pt2kit.minify.worker import torchapi\ntorchapi.preload()\n"
                           "print(all(m in sys.modules for m in ('torch._dynamo', 'torch._inductor.compile_fx')))")
    assert out == "True\n"


def test_set_compile_threads_sets_the_environment_and_a_loaded_inductor_config(monkeypatch):
    import torch._inductor.config as c

    monkeypatch.setattr(c, "compile_threads", c.compile_threads)
    monkeypatch.setenv("TORCHINDUCTOR_COMPILE_THREADS", os.environ.get("TORCHINDUCTOR_COMPILE_THREADS", "0"))
    torchapi.set_compile_threads(3)
    assert c.compile_threads == 3 and os.environ["TORCHINDUCTOR_COMPILE_THREADS"] == "3"


def test_in_bad_fork_is_false_in_a_process_that_never_asked_cuda_before_forking():
    out = _in_fresh_python("import torch\nfrom pt2kit.minify.worker import torchapi\nprint(torchapi.in_bad_fork())")
    assert out == "False\n"


def test_bisect_plan_is_torchs_own_list_of_inductors_subsystems_in_its_order():
    names = [s["name"] for s in torchapi.bisect_plan("inductor")]
    assert names.index("post_grad_passes") < names.index("inductor_fallback_random") < names.index("lowerings")
    (flip,) = [s for s in torchapi.bisect_plan("inductor") if s["name"] == "inductor_fallback_random"]
    assert flip["config"] == {"torch._inductor.config": {"fallback_random": True}}
    assert [s["name"] for s in torchapi.bisect_plan("aot_eager_decomp_partition")] == [
        "aot_eager_decomp_partition_cse", "decomposition"]
    assert torchapi.bisect_plan("eager") == [] and torchapi.bisect_plan("no such backend") == []


def test_bisect_switch_turns_torchs_own_hooks_off_from_an_application_on_and_puts_everything_back():
    # the relu bug planted in Inductor's C++ codegen: with relu's lowering (application 0) off it falls back
    import torch
    from torch._inductor import compiler_bisector as cb
    from torch._inductor import config

    x = torch.randn(8)

    def run() -> bool:
        torch._dynamo.reset()
        with config.patch({"cpp.inject_relu_bug_TESTING_ONLY": "accuracy", "force_disable_caches": True}):
            return torch.allclose(torch.compile(lambda t: torch.relu(t) + 1)(x), torch.relu(x) + 1)

    with torchapi.bisect_switch("inductor", "lowerings", -1) as seen:
        assert run()
    assert [s for s in seen if s[0] == "lowerings"] == [("lowerings", 0, False, "relu: aten.relu.default"),
                                                        ("lowerings", 1, False, "add: aten.add.Tensor")]
    with torchapi.bisect_switch("inductor", "lowerings", 0) as seen:
        assert not run()
    assert [s[2] for s in seen if s[0] == "lowerings"] == [True, False]  # 0 on, 1 off
    with torchapi.bisect_switch("inductor", None, 0) as census:  # nothing off, every application counted
        assert not run()
    assert {"lowerings", "post_grad_passes"} <= {s[0] for s in census} and all(s[2] for s in census)
    assert not cb.CompilerBisector.bisection_enabled and "TORCH_BISECT_BACKEND" not in os.environ
    assert cb.CompilerBisector.get_backend() is None  # its cached environment was read afresh


def test_inplace_variant_is_the_functional_aten_overloads_in_place_twin_with_its_arguments():
    import torch

    aten = torch.ops.aten
    assert torchapi.inplace_variant(aten.index_put.default) is aten.index_put_.default
    assert torchapi.inplace_variant(aten.add.Tensor) is aten.add_.Tensor
    # no twin, an op that already writes, an op that is not an aten overload
    assert [torchapi.inplace_variant(o) for o in (aten.bmm.default, aten.copy_.default, aten.add_.Tensor, torch.add)] \
        == [None] * 4
