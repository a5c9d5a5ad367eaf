"""Each private (or moving) torch API aotiprint uses, run on the torch installed here."""

from __future__ import annotations

import torch

from pt2kit.aotiprint import torchapi
from pt2kit.runtime.shims.torchapi import generating, reset_dynamo


def _inductor_value(key: str) -> object:
    import torch._inductor.config as c

    section, _, name = key.rpartition(".")
    return getattr(getattr(c, section) if section else c, name)


def test_the_printer_and_provenance_configs_name_keys_this_inductor_has():
    cfg = {**torchapi.provenance_config(),
           **torchapi.printer_config("stats", ["cpp_fused_relu_0", "aoti_torch_cpu_addmm_out"])}
    assert cfg[torchapi.PRINTER_KEY] == "2" and cfg[torchapi.FILTER_KEY] == "cpp_fused_relu_0,aoti_torch_cpu_addmm_out"
    assert torchapi.printer_config("names", None) == {torchapi.PRINTER_KEY: "3"}
    before = {k: _inductor_value(k) for k in cfg}
    with torchapi.inductor_config(cfg):
        assert {k: _inductor_value(k) for k in cfg} == cfg
    assert {k: _inductor_value(k) for k in cfg} == before


def test_op_arguments_name_sdpas_mask_and_causal_flag_with_their_defaults():
    args = torchapi.op_arguments(torch.ops.aten.scaled_dot_product_attention.default)
    names = [a.name for a in args]
    assert names[:6] == ["query", "key", "value", "attn_mask", "dropout_p", "is_causal"]
    defaults = {a.name: a.default_value for a in args}
    assert defaults["attn_mask"] is None and defaults["is_causal"] is False


def test_tree_leaves_flattens_in_order():
    a, b, c = torch.zeros(1), torch.ones(2), torch.full((3,), 2.0)
    leaves = torchapi.tree_leaves({"x": (a, [b]), "y": c})
    assert len(leaves) == 3 and all(got is want for got, want in zip(leaves, [a, b, c], strict=True))


def test_rewrite_wrapper_sees_the_python_wrapper_of_a_jit_compile():
    seen: list[bool] = []

    def rewrite(src: str, is_cpp: bool) -> str:
        seen.append(is_cpp)
        return src + "\n# rewritten by aotiprint's test\n"

    reset_dynamo()
    x = torch.randn(8)
    for _ in range(2):  # the second compile is generated again, not read back from the FX graph cache
        reset_dynamo()
        with generating(), torchapi.rewrite_wrapper(rewrite):
            out = torch.compile(lambda t: torch.relu(t) * 2, backend="inductor")(x)
    assert seen == [False, False]
    assert torch.equal(out, torch.relu(x) * 2)


def test_an_aoti_package_compiles_with_the_cpp_wrapper_rewritten_loads_and_runs(tmp_path):
    seen: list[bool] = []

    def rewrite(src: str, is_cpp: bool) -> str:
        seen.append(is_cpp)
        return src

    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval()
    x = torch.randn(2, 4)
    with torch.no_grad():
        ep = torch.export.export(model, (x,))
    with generating(), torchapi.rewrite_wrapper(rewrite):
        path = torchapi.compile_package(ep, str(tmp_path / "m.pt2"), {})
    assert path == str(tmp_path / "m.pt2") and (tmp_path / "m.pt2").is_file()
    assert True in seen  # the C++ wrapper went through the rewrite
    with torch.no_grad():
        assert torch.allclose(torchapi.load_package(path, "cpu")(x), model(x))
