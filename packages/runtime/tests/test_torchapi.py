"""pt2kit.runtime.shims.torchapi: every function run on the installed torch, so a torch release that moves a
private API fails here, by name, rather than deep inside a tool."""

from __future__ import annotations

import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from pt2kit.runtime.shims import torchapi  # noqa: E402


def test_importing_it_does_not_import_torch():
    code = "import sys, pt2kit.runtime.shims.torchapi; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


def test_config_modules_import_and_declare_their_defaults():
    for prefix, path in torchapi.CONFIG_MODULES.items():
        module = torchapi.config_module(path)
        assert module.__name__ == path, prefix
        assert torchapi.config_defaults(module), prefix
    inductor = torchapi.config_module("torch._inductor.config")
    assert torchapi.config_defaults(inductor)["cpp.inject_relu_bug_TESTING_ONLY"] is None
    with inductor.patch({"cpp.inject_relu_bug_TESTING_ONLY": "accuracy"}):
        # the default is what torch declares, not the value now
        assert torchapi.config_defaults(inductor)["cpp.inject_relu_bug_TESTING_ONLY"] is None


def test_settings_torchs_repro_writer_leaves_out():
    inductor = torchapi.config_module("torch._inductor.config")
    assert torchapi.left_out_of_repros(inductor, "trace.enabled")  # a cache-key prefix: machine-specific
    assert not torchapi.left_out_of_repros(inductor, "cpp.inject_relu_bug_TESTING_ONLY")


def test_reset_dynamo_makes_the_next_call_compile_again():
    graphs = []

    def backend(gm, example):
        graphs.append(gm)
        return gm.forward

    f = torch.compile(lambda x: x.sin() + 1, backend=backend)
    x = torch.ones(3)
    f(x)
    f(x)
    assert len(graphs) == 1
    torchapi.reset_dynamo()
    f(x)
    assert len(graphs) == 2


def test_aot_autograd_hands_the_forward_as_an_aten_graph():
    from functorch.compile import make_boxed_func

    seen = []

    def fw(gm, example):
        seen.extend(str(n.target) for n in gm.graph.nodes if n.op == "call_function")
        return make_boxed_func(gm.forward)

    torchapi.reset_dynamo()
    out = torch.compile(lambda x: x.sin() * 2, backend=torchapi.aot_autograd(fw_compiler=fw))(torch.ones(2))
    torchapi.reset_dynamo()
    assert seen == ["aten.sin.default", "aten.mul.Tensor"]
    assert torch.equal(out, torch.ones(2).sin() * 2)


def test_boxed_and_the_min_cut_partitioner_split_a_joint_graph_as_inductor_does():
    torch = pytest.importorskip("torch")
    seen: dict = {}

    def keep(phase):
        def compiler(gm, _example):
            seen[phase] = gm
            return torchapi.boxed(gm)
        return compiler

    backend = torchapi.aot_autograd(fw_compiler=keep("fw"), bw_compiler=keep("bw"),
                                    partition_fn=torchapi.min_cut_partition())
    x = torch.ones(3, requires_grad=True)
    torch.compile(lambda t: (t.sin() * 2).sum(), backend=backend)(x).backward()
    assert torch.allclose(x.grad, 2 * torch.ones(3).cos())
    # the backward is its own aten graph: sin's derivative, the cosine of what the forward saved
    assert "aten.cos.default" in {str(n.target) for n in seen["bw"].graph.nodes}
    assert "aten.cos.default" not in {str(n.target) for n in seen["fw"].graph.nodes}


def test_backward_compiler_is_an_aot_autograd_backends_own_and_run_backward_calls_it_as_aotautograd_does():
    from torch._dynamo.backends.common import aot_autograd

    def fw(gm, _example):
        return gm.forward

    def bw(gm, _example):  # a bug only the backward compiler makes: every cos becomes a sin
        for n in gm.graph.nodes:
            if n.target == torch.ops.aten.cos.default:
                n.target = torch.ops.aten.sin.default
        gm.recompile()
        return torchapi.boxed(gm.forward)  # boxed: called with one list, as AOTAutograd calls it

    class Backward(torch.nn.Module):  # not an fx graph (a repro's module): traced into one first
        def forward(self, x, g):
            return (torch.ops.aten.mul.Tensor(g, torch.ops.aten.cos.default(x)),)

    x, g = torch.randn(4), torch.randn(4)
    assert torchapi.backward_compiler(aot_autograd(fw_compiler=fw, bw_compiler=bw)) is bw
    assert torchapi.backward_compiler(aot_autograd(fw_compiler=fw)) is fw  # AOTAutograd's default
    assert torchapi.backward_compiler("inductor") is None and torchapi.backward_compiler(fw) is None
    (out,) = torchapi.run_backward(bw, Backward(), [x, g])
    assert torch.equal(out, g * x.sin())
    (out,) = torchapi.run_backward(fw, torch.fx.symbolic_trace(Backward()), [x, g])  # unboxed: called with *args
    assert torch.equal(out, g * x.cos())


def test_tree_map_reaches_every_leaf():
    assert torchapi.tree_map(lambda v: v * 10, {"a": [1, (2, 3)], "b": 4}) == {"a": [10, (20, 30)], "b": 40}


def test_pytree_key_children_names_each_child_as_pytree_keys_it():
    import collections

    t = torch.ones(1)
    assert torchapi.pytree_key_children((t, 2)) == [("[0]", t), ("[1]", 2)]
    assert torchapi.pytree_key_children({"logits": t}) == [("['logits']", t)]
    assert torchapi.pytree_key_children(collections.OrderedDict(b=3, a=t)) == [("['b']", 3), ("['a']", t)]
    assert torchapi.pytree_key_children(object()) is None  # not registered


def test_pytree_key_children_does_not_import_torch():
    code = ("import sys, pt2kit.runtime.shims.torchapi as t; "
            "print(t.pytree_key_children((1, 2)), 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out == "None False\n"


def test_ops_and_higher_order_ops_are_told_apart():
    cond = torch.ops.higher_order.cond
    assert torchapi.is_hop(cond) and torchapi.hop_name(cond) == "cond"
    add = torch.ops.aten.add.Tensor
    assert not torchapi.is_hop(add) and torchapi.hop_name(add) is None
    assert torchapi.is_op_overload(add) and torchapi.is_op_overload(torch.ops.aten.add)
    assert not torchapi.is_op_overload(lambda x: x) and not torchapi.is_op_overload(cond)
    assert torchapi.is_mutable(torch.ops.aten.add_.Tensor) and not torchapi.is_mutable(add)


def test_dispatch_mode_sees_each_aten_op():
    class Seen(torchapi.dispatch_mode()):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func))
            return func(*args, **(kwargs or {}))

    x = torch.ones(2)
    with Seen() as mode:
        (x + 1).neg()
    assert mode.ops == ["aten.add.Tensor", "aten.neg.default"]


def test_generate_code_makes_a_graphs_code_before_its_first_call():
    from torch.fx._lazy_graph_module import _LazyGraphModule, _use_lazy_graph_module

    with _use_lazy_graph_module(True):
        gm = torch.fx.symbolic_trace(lambda x: x.cos())
    assert isinstance(gm, _LazyGraphModule) and gm._needs_recompile()
    torchapi.generate_code(gm)
    assert not gm._needs_recompile() and "cos" in gm.code


def test_compiled_says_nothing_was_compiled_with_dynamos_reason():
    from pt2kit.runtime.common.outcome import Compiled

    def only_breaks(x):
        torch._dynamo.graph_break()
        return x

    def adds(x):
        return x + 1

    torchapi.reset_dynamo()
    with Compiled() as none:
        torch.compile(torch.nn.GRU(2, 2), backend="eager")(torch.randn(1, 3, 2))
    assert none.graphs == 0
    assert none.nothing.startswith("nothing compiled: Dynamo handed the backend no graph")
    assert "Attempted to wrap RNN, GRU, or LSTM" in none.nothing and "\n" not in none.nothing
    with Compiled() as some:
        torch.compile(adds, backend="eager")(torch.ones(2))
    assert (some.graphs, some.nothing) == (1, None)
    with Compiled() as broken:
        torch.compile(only_breaks, backend="eager")(torch.ones(2))
    assert broken.graphs == 0 and broken.nothing is not None


def test_model_or_compiler_blames_the_model_only_when_eager_fails_too():
    from pt2kit.runtime.common.errors import UsageError
    from pt2kit.runtime.common.outcome import model_or_compiler

    crash = RuntimeError("inductor fell over")

    def eager_fails():
        raise ValueError("shapes (4, 8) and (5, 3)")

    own = model_or_compiler("m.py", "eager run", crash, eager_fails)
    assert isinstance(own, UsageError)
    assert str(own) == ("m.py: the model's own eager run fails, so there is no compiled code to judge (the model, "
                        "not the compiler): ValueError: shapes (4, 8) and (5, 3)")
    assert model_or_compiler("m.py", "eager run", crash, lambda: None) is crash


def test_forget_vec_isa_makes_inductor_pick_its_isa_again_under_the_settings_now():
    import torch._inductor.config as ic
    from torch._inductor import cpu_vec_isa

    from pt2kit.runtime.shims.torchapi import forget_vec_isa

    with ic.patch({"cpp.vec_isa_ok": False}):
        forget_vec_isa()
        assert cpu_vec_isa.valid_vec_isa_list() == [] and not cpu_vec_isa.pick_vec_isa()
    forget_vec_isa()
    assert cpu_vec_isa.valid_vec_isa_list.cache_info().currsize == 0


def test_warm_inductor_answers_the_machine_probes_in_this_process():
    # if torch renames a probe, the answers stay unmemoised here and every forked child or warmed worker pays
    # them again at its first compile
    code = ("import torch\nfrom pt2kit.runtime.shims import torchapi\nfrom torch._inductor import codecache, cpu_vec_isa\n"
            "torchapi.warm_inductor().join()  # the ISA probes go on in a thread of their own\n"
            "print(cpu_vec_isa.valid_vec_isa_list.cache_info().currsize, "
            "codecache.CacheBase.get_system.cache_info().currsize)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "1 1\n"


def test_cuda_asked_by_nvml_sets_torchs_switch_inside_and_leaves_it_as_it_was(monkeypatch):
    import os

    for before in (None, "0"):
        if before is None:
            monkeypatch.delenv("PYTORCH_NVML_BASED_CUDA_CHECK", raising=False)
        else:
            monkeypatch.setenv("PYTORCH_NVML_BASED_CUDA_CHECK", before)
        with torchapi.cuda_asked_by_nvml():
            # torch's own reader of the switch: if torch renames it, the fork server's imports poison its forks
            assert torch.cuda._nvml_based_avail() is True
        assert os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK") == before


def test_vec_isa_answers_replayed_in_another_process_memoise_its_probes_without_building():
    import os

    # a fork server's prober computes the answers, the server memoises them and builds nothing; if torch's
    # probe moves, the replay finds no answers and children pay the probes again
    code = ("import json, os, torch\nfrom pt2kit.runtime.shims import torchapi\nfrom torch._inductor import cpu_vec_isa\n"
            "r, w = os.pipe()\nif os.fork() == 0:\n"
            "    os.write(w, json.dumps(torchapi.vec_isa_answers()).encode()); os._exit(0)\n"
            "os.close(w); answers = json.loads(os.fdopen(r).read())\n"
            "built = []\nreal = cpu_vec_isa.VecISA.check_build\n"
            "cpu_vec_isa.VecISA.check_build = lambda self, code: built.append(self) or real(self, code)\n"
            "torchapi.replay_vec_isa_answers(answers)\n"
            "print(len(answers) > 0, built, cpu_vec_isa.valid_vec_isa_list.cache_info().currsize,\n"
            "      [str(i) for i in cpu_vec_isa.valid_vec_isa_list()] == json.loads(os.environ['WANT']))")
    want = subprocess.run([sys.executable, "-c", "import json\nfrom torch._inductor import cpu_vec_isa\n"
                           "print(json.dumps([str(i) for i in cpu_vec_isa.valid_vec_isa_list()]))"],
                          capture_output=True, text=True, check=True).stdout
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "WANT": want}).stdout
    assert out == "True [] 1 True\n"



def test_forget_cache_dirs_makes_inductor_read_its_cache_folder_afresh(tmp_path, monkeypatch):
    from torch._inductor.codecache import CacheBase

    from pt2kit.runtime.shims.torchapi import forget_cache_dirs

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "a"))
    forget_cache_dirs()
    assert str(CacheBase.get_local_cache_path()).startswith(str(tmp_path / "a"))
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "b"))
    assert str(CacheBase.get_local_cache_path()).startswith(str(tmp_path / "a"))  # memoised: why it exists
    forget_cache_dirs()
    assert str(CacheBase.get_local_cache_path()).startswith(str(tmp_path / "b"))


def test_the_inductor_cache_folder_is_the_environments(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    assert torchapi.inductor_cache_dir() == str(tmp_path)


def test_mode_settings_are_the_ones_max_autotune_and_reduce_overhead_turn_on():
    import torch._inductor.config as config

    off = dict.fromkeys(torchapi.MODE_SETTINGS, False)
    with config.patch(off):
        assert torchapi.mode_settings() == []
        with config.patch(torch._inductor.list_mode_options("max-autotune")):
            assert torchapi.mode_settings() == ["max_autotune", "coordinate_descent_tuning", "triton.cudagraphs"]
        with config.patch(torch._inductor.list_mode_options("reduce-overhead")):
            assert torchapi.mode_settings() == ["triton.cudagraphs"]


def test_compile_counters_count_an_mm_selection_and_the_fx_graph_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    before = torchapi.compile_counters()
    torch._dynamo.reset()
    torch.compile(torch.mm)(torch.randn(3, 4), torch.randn(4, 5))
    after = torchapi.compile_counters()
    grew = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    assert grew["mm_selections"] == 1 and grew["fxgraph_cache_miss"] == 1, grew
    assert grew.get("select_algorithm_autotune", 0) == 0, grew  # max-autotune off: no choice benchmarked


def test_fx_key_globals_name_the_settings_the_harness_precision_changes():
    # why kdiff under the accuracy harness cannot read the script's compiled graph back (its FX graph cache key)
    from pt2kit.runtime.common.precision import HARNESS, precision_state, use_precision

    was = precision_state()
    try:
        use_precision({**was, "matmul": "tf32"}, inductor=False)  # a script that turned TF32 on
        before = torchapi.fx_key_globals()
        use_precision(HARNESS, inductor=False)
        after = torchapi.fx_key_globals()
    finally:
        use_precision(was)
    assert before["torch.backends.cuda.matmul.fp32_precision"] == "tf32", before
    assert {k: v for k, v in after.items() if before[k] != v} == {"torch.backends.cuda.matmul.fp32_precision": "ieee"}



def test_counting_cudagraphs_across_resets_routes_dynamos_reset_through_the_count_and_puts_torchs_back():
    # minify's worker resets Dynamo after each candidate, which empties the CUDA graph trees: inside the block the
    # trees' reset is the counting one, Dynamo still forgets what it compiled, and torch's own function is back after
    import torch._inductor.cudagraph_trees as trees

    original, before = trees.reset_cudagraph_trees, torchapi.cudagraph_wrapped()
    f = torch.compile(lambda x: x + 1, backend="eager")
    with pytest.raises(RuntimeError, match="raised inside"), torchapi.counting_cudagraphs_across_resets():
        assert trees.reset_cudagraph_trees is not original
        f(torch.zeros(2))
        frames = torch._dynamo.utils.counters["frames"]["ok"]
        torch._dynamo.reset()
        f(torch.zeros(2))  # compiled again: the reset happened
        assert torch._dynamo.utils.counters["frames"]["ok"] == frames + 1
        raise RuntimeError("raised inside")
    assert trees.reset_cudagraph_trees is original
    assert torchapi.cudagraph_wrapped() == before == 0  # no CUDA graph on the CPU


def test_generating_compiles_afresh_in_the_environments_cache_folder_and_puts_the_settings_back(monkeypatch, tmp_path):
    import torch._dynamo.config as dynamo
    import torch._functorch.config as functorch
    import torch._inductor.config as inductor

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    torchapi.forget_cache_dirs()
    before = (inductor.fx_graph_cache, functorch.enable_autograd_cache, dynamo.automatic_dynamic_local_pgo)
    counts = torchapi.compile_counters()
    for _ in range(2):
        torch._dynamo.reset()
        with torchapi.generating():
            assert not (inductor.fx_graph_cache or functorch.enable_autograd_cache or dynamo.automatic_dynamic_local_pgo)
            # a kernel no other test builds: one this process built before loads from memory, writing no .so here
            torch.compile(lambda t: torch.relu(t) + 3.0517578125)(torch.randn(8))
    after = torchapi.compile_counters()
    assert after.get("fxgraph_cache_hit", 0) == counts.get("fxgraph_cache_hit", 0)  # both compiles generated
    assert after.get("autograd_cache_hit", 0) == counts.get("autograd_cache_hit", 0)
    # the kernels were built in the folder the environment names, not in a fresh one per compile
    # (force_disable_caches's tmpXXXX folders, where every kernel and vec-ISA probe builds again)
    assert any(p.suffix == ".so" for p in tmp_path.rglob("*.so")) and not list(tmp_path.glob("tmp*"))
    assert (inductor.fx_graph_cache, functorch.enable_autograd_cache, dynamo.automatic_dynamic_local_pgo) == before
