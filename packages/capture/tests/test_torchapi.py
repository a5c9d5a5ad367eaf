"""Each private torch API the boot uses (boot/pt2kit_capture_torchapi.py), run on this torch."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

import pt2kit.capture

BOOT = Path(pt2kit.capture.__file__).parent / "boot"


@pytest.fixture(scope="module")
def api():
    sys.path.insert(0, str(BOOT))
    try:
        import pt2kit_capture_torchapi
    finally:
        sys.path.remove(str(BOOT))
    return pt2kit_capture_torchapi


def test_compile_wrappers_and_names(api):
    assert [c.__name__ for c in api.compile_wrapper_classes(torch)] == ["_TorchCompileInductorWrapper",
                                                                          "_TorchCompileWrapper"]
    assert api.qualified_name(torch.relu) == "torch.relu"
    block = api.import_block({"torch": torch, "inf": float("inf")})
    assert block.splitlines() == ["from math import inf", "import torch"]
    t = torch.zeros(2)
    before = api.version(t)
    t.add_(1)
    assert api.version(t) == before + 1
    assert not api.is_fake(t)


def test_settings_name_what_differs_from_the_defaults(api):
    import torch._inductor.config as inductor

    with inductor.patch({"cpp.inject_relu_bug_TESTING_ONLY": "accuracy", "max_autotune": True}):
        got = api.settings()
    assert got["inductor.cpp.inject_relu_bug_TESTING_ONLY"] == "accuracy"
    assert got["inductor.max_autotune"] == "True"
    assert "inductor.cpp.inject_relu_bug_TESTING_ONLY" not in api.settings()


def test_a_fullgraph_compile_is_named_by_the_settings_that_let_its_fake_mode_trace_data_dependent_ops(api):
    seen = []

    def backend(gm, example):
        seen.append(api.settings())
        return gm.forward

    for fullgraph in (True, False):
        torch._dynamo.reset()
        torch.compile(lambda x: x + 1, backend=backend, fullgraph=fullgraph)(torch.ones(2))
    torch._dynamo.reset()
    one_graph = {"dynamo.capture_scalar_outputs": "True", "dynamo.capture_dynamic_output_shape_ops": "True"}
    assert [{k: v for k, v in s.items() if k in one_graph} for s in seen] == [one_graph, {}]
    assert not set(api.settings()) & set(one_graph)  # no compile under way: none


def test_what_dynamo_says_while_it_compiles(api):
    seen = []

    def backend(gm, example_inputs):
        ph = [n for n in gm.graph.nodes if n.op == "placeholder"]
        seen.append((api.compile_id(gm), api.frame_code(gm), [api.source_name(n) for n in ph]))
        return gm.forward

    def user_fn(x, scale):
        return x * scale

    torch._dynamo.reset()
    torch.compile(user_fn, backend=backend)(torch.ones(2), torch.ones(2))
    (cid, (name, file, line), sources) = seen[0]
    assert (cid, name, file, line) == ("0/0", "user_fn", __file__, user_fn.__code__.co_firstlineno)
    assert sources == ["L['x']", "L['scale']"]
    # a module compiled whole: Dynamo traces its wrap_inline `inner`, then nn.Sequential's forward (torch's);
    # the user's module inside names the graph, and with none, the script's line that called it
    torch.compile(torch.nn.Sequential(torch.nn.Linear(2, 2), Scale()), backend=backend)(torch.ones(2))
    torch.compile(torch.nn.Sequential(torch.nn.Linear(2, 2)), backend=backend)(torch.ones(2))
    call = sys._getframe().f_lineno - 1
    assert [s[1] for s in seen[1:]] == [("forward", __file__, Scale.forward.__code__.co_firstlineno),
                                        ("test_what_dynamo_says_while_it_compiles", __file__, call)]


class Scale(torch.nn.Module):
    def forward(self, x):
        return x * 2


def test_a_symint_is_read_without_a_guard(api):
    from torch._dynamo.source import ConstantSource
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    env = ShapeEnv()
    s = env.create_unbacked_symint()
    backed = env.create_symintnode(env.create_symbol(7, source=ConstantSource("n")), hint=7)
    assert (api.int_hint(5), api.int_hint(backed), api.int_hint(s)) == (5, 7, None)
    assert not env.guards  # int(backed) would have guarded that it is 7: the script recompiling under capture
    int(backed)
    assert env.guards


def test_ddp_optimizer_is_the_graph_splitter_of_compile_ddp(api):
    import importlib

    cls = api.ddp_optimizer(importlib.import_module(api.DDP_MODULE))
    assert cls.__name__ == "DDPOptimizer" and callable(cls.compile_fn)
    assert api.ddp_optimizer(torch) is None


def test_aoti_entries_are_torch_inductors_compile_and_load_of_a_package(api):
    import importlib

    module = importlib.import_module(api.AOTI_MODULE)
    assert api.aoti_entry(module).__name__ == "aoti_compile_and_package"
    assert api.aoti_loader(module).__name__ == "aoti_load_package"
    assert api.aoti_loader(torch.nn) is None


def test_an_exported_graph_takes_a_loaded_packages_call_as_its_inputs(api):
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(2))

        def forward(self, x, *, y, z):
            return x * self.w + y - z

    ep = torch.export.export(M(), (torch.zeros(2),), {"y": torch.zeros(2), "z": torch.zeros(2)})
    full = [torch.full((2,), v) for v in (3.0, 4.0, 5.0)]
    _, flat, names = api.exported_graph(ep, ((full[0],), {"z": full[2], "y": full[1]}))  # kwargs as the caller gave
    assert [float(t[0]) for t in flat] == [1.0, 3.0, 4.0, 5.0] and names == {"p_w": "w"}
    _, flat, _ = api.exported_graph(ep)  # the export's own example inputs
    assert [float(t[0]) for t in flat] == [1.0, 0.0, 0.0, 0.0]


def test_the_boot_collects_settings_as_pt2kit_does_inf_included_where_pt2kit_is_not_installed(tmp_path):
    """The boot's PYTHONPATH as the parent builds it (the boot, then scratch/lib with pt2kit_portable copied
    there), pt2kit itself made unimportable: a setting the script made inf is collected as 1e999, the text
    pt2kit.runtime.common.config applies back (the boot's own repr/literal_eval collector dropped it), and the
    whole collection is pt2kit's own."""
    import json
    import math
    import os
    import subprocess

    from pt2kit.capture.drive import boot_path
    from pt2kit.runtime.common.config import worker_settings

    code = ("import sys, json, math\nsys.modules['pt2kit'] = None\nimport torch, pt2kit_portable\n"
            "import pt2kit_capture_torchapi as api\n"
            "torch._dynamo.config.repro_tolerance = math.inf\n"
            "torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = 'accuracy'\n"
            "print(json.dumps([pt2kit_portable.__file__, api.settings()]))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(boot_path(tmp_path))}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    where, got = json.loads(p.stdout)
    assert Path(where).parent == tmp_path / "lib"
    assert got["dynamo.repro_tolerance"] == "1e999"
    with torch._dynamo.config.patch(repro_tolerance=math.inf), \
            torch._inductor.config.patch({"cpp.inject_relu_bug_TESTING_ONLY": "accuracy"}):
        assert got == worker_settings()


def test_mode_options_are_the_settings_torch_compile_applies_for_a_mode(api):
    # what makes a script's torch.compile(mode=...) travel to kdiff and minify (record's mode_options)
    assert api.mode_options("max-autotune-no-cudagraphs", None) == {"max_autotune": True,
                                                                    "coordinate_descent_tuning": True}
    assert api.mode_options("reduce-overhead", None) == {"triton.cudagraphs": True}
    assert api.mode_options(None, None) == {} and api.mode_options("default", None) == {}


def test_the_inductor_cache_dir_is_the_folder_the_environment_names_else_torchs_default(api, monkeypatch, tmp_path):
    # what a tool compiling a captured graph again reads the script's autotuning back from (captured.cache_dir)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "c"))
    assert api.inductor_cache_dir() == str(tmp_path / "c")
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    assert api.inductor_cache_dir() == os.path.abspath(default_cache_dir())


def test_op_imports_name_the_module_that_registers_each_op_and_never_the_users(api):
    import torch._inductor.inductor_prims  # what Dynamo's tracing of addcmul_ loads
    import torch.ao.quantization.fx._decomposed

    @torch.library.custom_op("pt2kit_torchapi::twice", mutates_args=())
    def twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    g = torch.fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(torch.ops.prims.fma.default, (x, x, x))
    b = g.call_function(torch.ops.prims.add.default, (a, x))
    q = g.call_function(torch.ops.quantized_decomposed.quantize_per_tensor.default, (b, 0.1, 0, -128, 127, torch.int8))
    c = g.call_function(torch.ops.aten.relu.default, (x,))
    g.output((q, g.call_function(torch.ops.pt2kit_torchapi.twice.default, (c,))))
    imports, notes = api.op_imports(torch.fx.GraphModule(torch.nn.Module(), g))
    assert imports == ["import torch._inductor.inductor_prims", "import torch._prims",
                       "import torch.ao.quantization.fx._decomposed"]
    line = twice._init_fn.__code__.co_firstlineno
    assert notes == [f"op pt2kit_torchapi::twice is registered by {__file__}:{line}, which this file does not "
                     "import: it runs only where that registration is done first"]


def test_output_meta_is_each_output_leafs_dtype_and_shape(api):
    gm = torch.fx.symbolic_trace(lambda x: (x.float(), None))
    out = next(n for n in gm.graph.nodes if n.op == "output")
    assert api.output_meta(gm) is None  # no example values: unknown, never a guess
    from torch.fx.passes.shape_prop import ShapeProp

    ShapeProp(gm).propagate(torch.ones(2, 3, dtype=torch.int64))
    for n in gm.graph.nodes:
        n.meta["example_value"] = getattr(n.meta.get("tensor_meta"), "dtype", None) and torch.empty(
            n.meta["tensor_meta"].shape, dtype=n.meta["tensor_meta"].dtype)
    assert out.op == "output" and api.output_meta(gm) == [{"dtype": "torch.float32", "shape": [2, 3]}, None]


def test_a_jagged_tensors_parts_and_the_flex_attention_op(api):
    rows = [torch.arange(6.0).reshape(2, 3), torch.ones(1, 3)]
    values, offsets, lengths, idx = api.jagged_parts(torch.nested.nested_tensor(rows, layout=torch.jagged))
    assert torch.equal(values, torch.cat(rows)) and offsets.tolist() == [0, 2, 3] and lengths is None and idx == 1
    assert api.jagged_parts(torch.ones(2, 3)) is None
    assert api.jagged_parts(torch.nested.nested_tensor([torch.ones(2)], layout=torch.strided)) is None
    assert api.flex_attention_hop().name() == "flex_attention"


def test_a_compiled_calls_backward_nodes_are_its_own_and_their_class_runs_its_backward():
    """pt2kit_capture_backward's two private APIs: the walk from a call's outputs stops at its inputs, so
    the second graph of a frame (after a graph break) finds its own node, never the first graph's."""
    sys.path.insert(0, str(BOOT))
    try:
        import pt2kit_capture_backward as backward
    finally:
        sys.path.remove(str(BOOT))
    gms = []

    def grab(gm, example_inputs):
        gms.append(gm)
        return torch._dynamo.backends.debugging.aot_eager(gm, example_inputs)

    w = torch.ones(3, requires_grad=True)
    x = torch.compile(lambda v: v * w, backend=grab)(torch.ones(3))
    y = torch.compile(lambda v: (v.sin() * w).view(3, 1), backend=grab)(x)  # a view of the compiled output
    (first,) = backward.compiled_backward_nodes(x, [])
    (second,) = backward.compiled_backward_nodes(y, [x])
    assert first is x.grad_fn and second is not first
    fcls = backward.function_class(second)
    assert isinstance(fcls, type) and issubclass(fcls, torch.autograd.Function) and callable(fcls.backward)
    assert backward.compiled_backward_nodes(torch.ones(2), []) == []  # no gradient: nothing to watch
