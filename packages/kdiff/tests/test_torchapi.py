"""Each private or moving torch API kdiff uses (pt2kit.kdiff.torchapi), on the installed torch."""

from __future__ import annotations

import torch

from pt2kit.kdiff import torchapi
from pt2kit.runtime.hops import HopAwareMode


def test_original_module_unwraps_torch_compile_and_keeps_anything_else():
    m = torch.nn.Linear(2, 2)
    compiled = torch.compile(m, backend="eager")
    assert compiled is not m and torchapi.original_module(compiled) is m
    assert torchapi.original_module(m) is m

    def f(x):
        return x

    assert torchapi.original_module(f) is f


def test_overload_name_of_the_ops_a_dispatch_mode_sees():
    seen: list[tuple[str, str]] = []

    class Names(HopAwareMode):  # what kdiff's near-tie watch is
        def watch(self, func, args, kwargs):
            seen.append((func.overloadpacket.__name__, torchapi.overload_name(func)))
            return func(*args, **kwargs)

    x = torch.tensor([[3.0, 1.0], [2.0, 4.0]])
    with Names():
        x.max(dim=1)
        x.max()
        x.topk(1)
    assert seen == [("max", "dim"), ("max", "default"), ("topk", "default")]
    assert torchapi.overload_name(torch.ops.aten.sort.default) == "default"


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
