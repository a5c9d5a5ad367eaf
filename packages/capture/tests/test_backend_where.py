"""What the boot records of the backend a script compiled with (boot/pt2kit_capture_backend.py), on the
torch.compile wrappers this torch builds: a registered name travels by name; a function or an aot_autograd
object is code, recorded as FILE.py:QUALNAME (what --backend takes), never as a name a tool would run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from torch._dynamo.backends.common import aot_autograd

import pt2kit.capture

BOOT = Path(pt2kit.capture.__file__).parent / "boot"
HERE = str(Path(__file__).resolve())


def my_backend(gm, example_inputs):
    return gm.forward


def fw(gm, example_inputs):
    return gm.forward


trainer = aot_autograd(fw_compiler=fw)


@pytest.fixture(scope="module")
def where():
    sys.path.insert(0, str(BOOT))
    try:
        import pt2kit_capture_backend
    finally:
        sys.path.remove(str(BOOT))
    return pt2kit_capture_backend


def handed(backend):
    """What torch.compile hands wrap_backend_debug for ``backend``: its wrapper and compiler name."""
    wrapper = torch._TorchCompileWrapper(backend, None, None, None)
    return wrapper, wrapper.compiler_name


def test_a_name_torch_registers_travels_by_name(where):
    assert where.describe(*handed("relu_compile_error_TESTING_ONLY"), "x") == (
        "relu_compile_error_TESTING_ONLY", None, False)
    assert where.describe(*handed("aot_eager"), "x") == ("aot_eager", None, False)
    inductor = torch._TorchCompileInductorWrapper("max-autotune-no-cudagraphs", None, None)
    assert where.describe(inductor, "inductor", "x") == ("inductor", None, False)
    # torch's registered function handed over itself, not by its name: still that name
    from torch._dynamo.backends.debugging import relu_compile_error_TESTING_ONLY as fn
    assert where.describe(*handed(fn), "x") == ("relu_compile_error_TESTING_ONLY", None, False)


def test_an_aot_autograd_object_the_script_imported_is_recorded_where_it_was_made(where, monkeypatch):
    """`from my_backends import backend` in a training script: the record named the script
    (`train.py:backend`, "defined in the script"), whose loading runs the training loop again."""
    import types

    script = types.ModuleType("__main__")
    script.__file__, script.backend = "/work/train.py", trainer
    monkeypatch.setitem(sys.modules, "__main__", script)
    assert where.describe(*handed(trainer), "x") == ("trainer", f"{HERE}:trainer", False)
    made_here = aot_autograd(fw_compiler=fw)  # bound in the script alone: the script's
    script.mine = made_here
    assert where.describe(*handed(made_here), "x") == ("mine", "/work/train.py:mine", True)


def test_a_function_or_an_aot_autograd_object_is_code_where_it_lives(where):
    assert where.describe(*handed(my_backend), "x") == ("my_backend", f"{HERE}:my_backend", False)
    # aot_autograd's object calls itself compiler_fn: found by the module-level name bound to it
    assert where.describe(*handed(trainer), "x") == ("trainer", f"{HERE}:trainer", False)
    unbound = aot_autograd(fw_compiler=fw)
    assert where.describe(*handed(unbound), "x") == ("aot_autograd", f"{HERE}:<AotAutograd object>", False)

    def inner(gm, example_inputs):
        return gm.forward

    code = where.describe(*handed(inner), "x")[1]
    assert code == f"{HERE}:test_a_function_or_an_aot_autograd_object_is_code_where_it_lives.<locals>.inner"
    # a function named like a registered backend is still the script's own: never run as torch's inductor
    inductor = type(my_backend)(my_backend.__code__, globals(), "inductor")
    assert where.describe(*handed(inductor), "x")[1] == f"{HERE}:my_backend"


def wrong_silu(x):
    return x * torch.sigmoid(2 * x)


def corrupt(graph):
    return None


def test_code_the_script_installs_into_the_compiler_is_recorded_where_it_lives(where):
    # issue 47: a hook setting holding the script's function, and a decomposition it put into Inductor's
    # table, were no part of the record (torch's repro writer skips hooks): now each is FILE.py:QUALNAME
    import torch._inductor.config as inductor
    import torch._inductor.decomposition as decomp

    assert where.code_settings() == {}  # torch's own table (partials of torch's functions) is not code of the script's
    silu = torch.ops.aten.silu.default
    before = decomp.decompositions.get(silu)
    decomp.decompositions[silu] = wrong_silu
    try:
        with inductor.patch(post_grad_custom_post_pass=corrupt):
            assert where.code_settings() == {"inductor.post_grad_custom_post_pass": f"{HERE}:corrupt",
                                             "decomposition:aten.silu.default": f"{HERE}:wrong_silu"}
    finally:
        if before is None:
            decomp.decompositions.pop(silu)
        else:
            decomp.decompositions[silu] = before
