"""The boot's model-file writer, called in this process on an FX graph (no compile): the values policy
(saved within the budget, else seeded in the real [lo, hi]), strides restored, loads repeatable."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

import pt2kit.capture
from pt2kit.runtime.modelfile import load_model

BOOT = Path(pt2kit.capture.__file__).parent / "boot"


class Mix(torch.nn.Module):
    def forward(self, x, ids, mask, t):
        return x * 2, ids + 1, mask.logical_not(), t.sum()


def _write(tmp: Path, values: str, budget: int, args: tuple) -> tuple[Path, list[dict]]:
    sys.path.insert(0, str(BOOT))
    try:
        import pt2kit_capture_write as write
    finally:
        sys.path.remove(str(BOOT))
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
    assert inputs[3] | {"name": 0} == {"name": 0, "parameter": None, "dtype": "torch.float32", "shape": [3, 4],
                                       "stride": [1, 3], "device": "cpu", "requires_grad": False, "value": "saved"}
    for got, want in zip(loaded.call(), Mix()(*args), strict=True):
        assert torch.equal(got, want)
