"""The boot's model-file writer, called in this process on an FX graph (no compile): the values policy
(saved within the budget, else seeded in the real [lo, hi]), strides restored, loads repeatable."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import torch

import pt2kit.capture
from pt2kit.runtime.common.modelfile import load_model

BOOT = Path(pt2kit.capture.__file__).parent / "boot"


class Mix(torch.nn.Module):
    def forward(self, x, ids, mask, t):
        return x * 2, ids + 1, mask.logical_not(), t.sum()


def _writer():
    sys.path.insert(0, str(BOOT))
    try:
        import pt2kit_capture_write as write
    finally:
        sys.path.remove(str(BOOT))
    return write


def _write(tmp: Path, values: str, budget: int, args: tuple) -> tuple[Path, list[dict]]:
    write = _writer()
    gm = torch.fx.symbolic_trace(Mix())
    name, files, inputs = write.write(gm, list(args), tmp, "g0_0", ["a test"], values, budget)
    assert all((tmp / f).is_file() for f in files)
    return tmp / name, inputs


@pytest.fixture
def args():
    torch.manual_seed(0)
    x = torch.randn(3, 4) * 5 + 10  # values in about [-5, 25]
    x[0, 0] = float("inf")  # left out of the range: a seeded value is finite
    ids = torch.randint(7, 12, (2, 6))
    mask = torch.rand(5) > 0.5
    t = torch.randn(4, 3).t()  # a transposed input: stride (1, 3)
    return x, ids, mask, t


def test_none_seeds_every_tensor_within_its_range_and_twice_the_same(tmp_path, args):
    path, inputs = _write(tmp_path, "none", 1 << 30, args)
    assert [i["value"] for i in inputs] == ["seeded"] * 4
    first, again = load_model(str(path)), load_model(str(path))
    x, ids, mask, t = first.inputs
    finite = args[0][torch.isfinite(args[0])]
    assert finite.min() <= x.min() and x.max() <= finite.max() and not torch.equal(x, args[0])
    assert 7 <= ids.min() and ids.max() <= 11 and ids.dtype == torch.int64
    assert mask.dtype == torch.bool and mask.shape == (5,)
    assert t.stride() == (1, 3) and t.shape == (3, 4)
    for a, b in zip(first.inputs, again.inputs, strict=True):
        assert torch.equal(a, b)


def test_small_saves_in_input_order_within_the_budget(tmp_path, args):
    budget = args[0].nbytes + args[2].nbytes  # x and mask fit; ids (after x) would not
    path, inputs = _write(tmp_path, "small", budget, args)
    assert [i["value"] for i in inputs] == ["saved", "seeded", "saved", "seeded"]
    x, _, mask, _ = load_model(str(path)).inputs
    assert torch.equal(x, args[0]) and torch.equal(mask, args[2])


def test_all_restores_values_and_strides(tmp_path, args):
    path, inputs = _write(tmp_path, "all", 0, args)
    loaded = load_model(str(path))
    for got, want in zip(loaded.inputs, args, strict=True):
        assert torch.equal(got, want) and got.stride() == want.stride()
    assert inputs[3] | {"name": 0} == {"name": 0, "parameter": None, "buffer": None, "dtype": "torch.float32", "shape": [3, 4],
                                       "stride": [1, 3], "device": "cpu", "requires_grad": False, "value": "saved"}
    for got, want in zip(loaded.call(), Mix()(*args), strict=True):
        assert torch.equal(got, want)


@pytest.mark.parametrize("values", ["all", "none"])
def test_an_input_that_was_no_leaf_loads_as_none_and_a_backend_that_refuses_one_still_does(tmp_path, args, values):
    """Issue 44 item 4: x was the output of an op on a tensor that requires grad; the model file made it a
    leaf, so torch's non_leaf_compile_error_TESTING_ONLY backend, which raised in the script, passed."""
    x, ids, mask, t = args
    x = (x.clone().requires_grad_() * 1).expand(2, 3, 4)[0]  # no leaf, a view: stride kept too
    t = t.detach().requires_grad_()  # a leaf that requires grad
    path, inputs = _write(tmp_path, values, 1 << 30, (x, ids, mask, t))
    assert [i.get("leaf", True) for i in inputs] == [False, True, True, True]
    loaded = load_model(str(path))
    got = loaded.inputs
    assert [(a.is_leaf, a.requires_grad) for a in got] == [(False, True), (True, False), (True, False), (True, True)]
    assert got[0].stride() == x.stride() and got[3].stride() == (1, 3)
    if values == "all":
        assert all(torch.equal(a.detach(), b.detach()) for a, b in zip(got, (x, ids, mask, t), strict=True))
    torch._dynamo.reset()
    with pytest.raises(Exception, match="TestingOnlyCompileError"):
        loaded.call(torch.compile(loaded.model, backend="non_leaf_compile_error_TESTING_ONLY"))
    torch._dynamo.reset()


@pytest.mark.parametrize("values", ["all", "none"])
def test_inputs_that_share_a_storage_in_the_script_share_one_in_the_model_file(tmp_path, values):
    """f(a, a[1]) writes into a and reads a[1]: with a copy each, the model file's eager run read the row
    unwritten (0 * 2 where the script got 2), and a backend bug about aliased inputs could not show."""
    write, written = _writer(), []

    def backend(gm, example_inputs):
        written.append(write.write(gm, list(example_inputs), tmp_path, "g0_0", ["a test"], values, 1 << 30))
        return gm.forward

    def f(a, b, c):
        a.add_(1)
        return b * 2 + c

    torch._dynamo.reset()
    a, c = torch.zeros(4, 4), torch.ones(4)
    want = torch.compile(f, backend=backend)(a, a[1], c)
    ((name, _, inputs),) = written
    assert [i["value"] for i in inputs] == ["saved" if values == "all" else "seeded"] * 3
    got_a, got_b, got_c = load_model(str(tmp_path / name)).inputs
    assert got_b.untyped_storage().data_ptr() == got_a.untyped_storage().data_ptr() != got_c.untyped_storage().data_ptr()
    assert (got_b.storage_offset(), got_b.shape, got_a.shape, got_a.stride()) == (4, (4,), (4, 4), (4, 1))
    out = f(got_a, got_b, got_c)
    assert torch.equal(got_a[1], got_b) and torch.equal(out, got_b * 2 + got_c)
    if values == "all":
        assert torch.equal(out, want)  # 3.0 everywhere, as in the script
    torch._dynamo.reset()


def test_a_compiled_modules_buffers_are_buffers_of_model_with_their_dtype(tmp_path):
    """BatchNorm's running stats are the module's state: forward takes only x, so a tool that makes every
    floating input require grad (kdiff --mode train) never hands batch_norm a running_mean that does."""
    write, written = _writer(), []

    def backend(gm, example_inputs):
        written.append(write.write(gm, list(example_inputs), tmp_path, "g0_0", ["a test"], "none", 0))
        return gm.forward

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.BatchNorm1d(4))
    net[1].running_var.fill_(2.0)
    net[1].num_batches_tracked.fill_(5)
    torch._dynamo.reset()
    torch.compile(net, backend=backend)(torch.randn(3, 8))
    ((name, _, inputs),) = written
    assert [(i["name"], i["parameter"], i["buffer"]) for i in inputs if not i["parameter"]] == [
        ("L_args_0_", None, None), ("L_fn_modules_1_buffers_num_batches_tracked_", None, "fn.1.num_batches_tracked"),
        ("L_fn_modules_1_buffers_running_mean_", None, "fn.1.running_mean"),
        ("L_fn_modules_1_buffers_running_var_", None, "fn.1.running_var")]
    loaded = load_model(str(tmp_path / name))
    # seeded within the real [lo, hi]: a constant buffer keeps its value, num_batches_tracked its int64
    assert {k: (v.dtype, v.tolist()) for k, v in loaded.model.named_buffers()} == {
        "fn.1.num_batches_tracked": (torch.int64, 5), "fn.1.running_mean": (torch.float32, [0.0] * 4),
        "fn.1.running_var": (torch.float32, [2.0] * 4)}
    assert [n for n, _ in loaded.model.named_parameters()] == ["fn.0.weight", "fn.0.bias", "fn.1.weight", "fn.1.bias"]
    (x,) = loaded.inputs
    out = loaded.model(x.requires_grad_())  # what refused with running_mean a forward input
    out[0].sum().backward()
    assert x.grad is not None and loaded.model.get_buffer("fn.1.num_batches_tracked").item() == 6


def _captured(tmp: Path, fn, *args, values: str = "small"):
    """fn compiled by Dynamo, its one graph written by the boot's writer as capture writes it; (the script's
    output, the model file, the inputs' manifest entries)."""
    write, written = _writer(), []

    def backend(gm, example_inputs):
        written.append(write.write(gm, list(example_inputs), tmp, "g0_0", ["a test"], values, 1 << 20))
        return gm.forward

    torch._dynamo.reset()
    out = torch.compile(fn, backend=backend, fullgraph=True)(*args)
    ((name, _, inputs),) = written
    return out, tmp / name, inputs


def test_a_nested_jagged_input_is_written_as_the_scripts_tensor_and_gives_the_scripts_values(tmp_path):
    """Issue 45: Dynamo hands the graph the jagged tensor and its ragged size as a symbol (``s71``); the
    size was written as null, the manifest line could not be read, and capture dropped the graph as "cut
    short by the command's end". The file rebuilds the tensor from its values and offsets, passes its
    nested int for the symbol, two jagged inputs with the script's shared offsets share them again (their
    product needs one nested int), and capture's own run check finds it gives the graph's outputs."""
    import msgspec

    from pt2kit.capture.records import Input
    from pt2kit.capture.runs import work

    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 3)
    nt = torch.nested.nested_tensor([torch.randn(n, 4) for n in (2, 5, 3)], layout=torch.jagged)
    gate = torch.nested.nested_tensor_from_jagged(torch.rand(10, 3), nt.offsets())
    with torch.no_grad():
        out, path, inputs = _captured(tmp_path, lambda t, g: (torch.relu(lin(t)) * g).sum(dim=1), nt, gate)
    jagged = [i for i in msgspec.convert(inputs, list[Input]) if i.layout == "jagged"]
    assert [(i.offsets, i.shape[0::2], i.value) for i in jagged] == [([0, 2, 7, 10], [3, 4], "saved"),
                                                                      ([0, 2, 7, 10], [3, 3], "saved")]
    assert isinstance(jagged[0].shape[1], str)
    loaded = load_model(str(path))
    with torch.no_grad():
        (got,) = loaded.call()
    assert torch.equal(got, out)
    assert work({"files": [{"file": str(path), "grad": False,
                            "outputs": [{"dtype": "torch.float32", "shape": [3, 3]}]}]}, _Chan()) == [None]


def test_a_graph_that_returns_a_jagged_tensor_runs_here(tmp_path):
    """Issue 55: the run check read each output's sizes with int(), which a jagged output's ragged size (its
    nested int, j1) refuses: the model file ran, and the check called it unrunnable. A ragged size is
    compared as a symbolic one is: not at all (each call has its own)."""
    from pt2kit.capture.runs import work

    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 3)
    nt = torch.nested.nested_tensor([torch.randn(n, 4) for n in (2, 5, 3)], layout=torch.jagged)
    with torch.no_grad():
        out, path, _ = _captured(tmp_path, lambda t: torch.relu(lin(t)), nt)
        (got,) = load_model(str(path)).call()
    assert got.is_nested and torch.equal(got.values(), out.values())
    # the output as Dynamo's example value gives it (torchapi.output_meta): the ragged size has no int
    meta = [{"dtype": "torch.float32", "shape": [3, None, 3]}]
    assert work({"files": [{"file": str(path), "grad": False, "outputs": meta}]}, _Chan()) == [None]
    meta = [{"dtype": "torch.float32", "shape": [3, None, 5]}]  # a static size that differs is still told
    (why,) = work({"files": [{"file": str(path), "grad": False, "outputs": meta}]}, _Chan())
    assert re.fullmatch(r"output 0 is float32\[3, j\d+, 3\], the graph gave float32\[3, None, 5\]", why), why


def test_a_flex_attention_graphs_model_file_compiles_as_the_script_did(tmp_path):
    """Issue 45: Dynamo writes the flex_attention op with its score_mod subgraph and captured tensors (9
    arguments) but traces only the script's form (7): compiling the model file as written crashed in
    Dynamo ("too many values to unpack"), a crash kdiff and minify would report as the compiler's. The
    file calls the op through ``_flex_attention``, the score_mod's captured tensor bound as the script's
    closure bound it, and compiles to the script's values (aot_eager: the same trace Inductor gets)."""
    from torch.nn.attention.flex_attention import flex_attention

    torch.manual_seed(0)
    bias = torch.randn(16)  # a tensor the score_mod captures: lifted into the subgraph by Dynamo

    def score_mod(score, b, h, q, kv):
        return score + bias[kv] + (q - kv).float() * 0.1

    q, k, v = (torch.randn(1, 2, 16, 8) for _ in range(3))
    out, path, _ = _captured(tmp_path, lambda q, k, v: flex_attention(q, k, v, score_mod=score_mod), q, k, v)
    loaded = load_model(str(path))
    torch._dynamo.reset()
    (got,) = torch.compile(loaded.model, backend="aot_eager", fullgraph=True)(*loaded.inputs)
    torch.testing.assert_close(got, out)
    (eager,) = loaded.call()
    torch.testing.assert_close(eager, out)
    assert "_flex_attention(" in path.read_text()


class _Chan:
    def stage(self, name):
        pass

    def note(self, key, value):
        pass


class Three(torch.nn.Module):
    def forward(self, a, b, c):
        return a * 2, b + 1, c.sum()


def _laid_out(t: torch.Tensor) -> tuple:
    return tuple(t.shape), t.stride(), t.storage_offset(), t.untyped_storage().nbytes()


@pytest.mark.parametrize("values", ["all", "none"])
def test_an_expanded_overlapping_or_offset_input_loads_in_the_scripts_layout(tmp_path, values):
    """Issue 57, class 1: a backend whose bug lives in a layout (an expanded gradient's stride 0, views that
    overlap, a slice at an offset into a larger storage) saw it in the script; the model file gave it
    contiguous tensors (an expanded one as one row expanded, the offset and storage dropped), and the bug
    was gone. Each loads as the script had it: shape, stride, storage offset, storage size, and its values."""
    write = _writer()
    torch.manual_seed(0)
    args = [torch.randn(4, 3)[:1].expand(4, 3), torch.randn(10).as_strided((4, 3), (2, 1)), torch.randn(20)[8:].view(3, 4)]
    gm = torch.fx.symbolic_trace(Three())
    name, _, _ = write.write(gm, list(args), tmp_path, "g0_0", ["a test"], values, 1 << 30)
    got = load_model(str(tmp_path / name)).inputs
    assert [_laid_out(g) for g in got] == [_laid_out(a) for a in args] == [
        ((4, 3), (0, 1), 0, 48), ((4, 3), (2, 1), 0, 40), ((3, 4), (4, 1), 8, 80)]
    assert torch.equal(got[0][0], got[0][3]) and torch.equal(got[1][0, 2], got[1][1, 0])  # one element each
    if values == "all":
        assert all(torch.equal(g, a) for g, a in zip(got, args, strict=True))
    text = (tmp_path / name).read_text()
    assert "offset=8)" in text and "storage=12)" in text  # the third's storage is what its layout reaches


def test_an_autocast_region_of_the_graph_is_written_as_the_with_block_every_dynamo_traces(tmp_path):
    """Dynamo writes `with torch.autocast(...)` in a compiled forward as _enter_autocast/_exit_autocast calls;
    Dynamo 2.11 ran such a call while tracing a tool's compile of the model file and crashed ("Global
    autocast(cpu)_enabled state changed while dynamo tracing"). The file holds the script's `with` block."""
    graphs = []

    def fn(x, w):
        with torch.autocast("cpu", torch.bfloat16):
            y = torch.nn.functional.linear(x, w).relu()
        return y.float() * 2

    def keep(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    args = (torch.randn(4, 8), torch.randn(8, 8))
    torch._dynamo.reset()
    torch.compile(fn, backend=keep)(*args)
    name, _, _ = _writer().write(graphs[0], list(args), tmp_path, "g0_0", ["a test"], "all", 1 << 20)
    text = (tmp_path / name).read_text()
    assert "with torch.amp.autocast('cpu', torch.bfloat16, True, None):" in text and "_enter_autocast(" not in text
    loaded = load_model(str(tmp_path / name))
    (got,) = torch.compile(loaded.model, backend="eager")(*loaded.inputs)
    assert torch.equal(got, fn(*loaded.inputs)) and not torch.is_autocast_enabled("cpu")


def test_an_empty_autocast_region_is_a_with_block_holding_pass_inside_its_region(tmp_path):
    """A region with no op of the graph inside (``with torch.autocast("cpu", enabled=False): pass`` in the script's
    bfloat16 region) is an _enter_autocast right before its _exit_autocast in Dynamo's code: its `with` holds
    `pass`, indented inside it and the region around it, so the model file loads and gives the script's values."""
    graphs = []

    def fn(x):
        y = x * 2
        with torch.autocast("cpu", torch.bfloat16):
            with torch.autocast("cpu", enabled=False):
                pass
            n = x.shape[0]
        return y + n

    def keep(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    torch.compile(fn, backend=keep)(torch.randn(4))
    name, _, _ = _writer().write(graphs[0], [torch.randn(4)], tmp_path, "g0_0", ["a test"], "all", 1 << 20)
    text = (tmp_path / name).read_text()
    outer = "        with torch.amp.autocast('cpu', torch.bfloat16, True, None):\n"
    inner = "            with torch.amp.autocast('cpu', None, False, None):\n                pass\n"
    assert outer + inner in text and "_enter_autocast(" not in text
    loaded = load_model(str(tmp_path / name))
    (got,) = loaded.model(*loaded.inputs)
    assert torch.equal(got, fn(*loaded.inputs))
