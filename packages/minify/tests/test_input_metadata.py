"""What capture's model file and minify's spec record of an input to make it again, each by one rule of
pt2kit_portable: how much storage its layout reaches (storage_reach), so both record a storage size in one case
and make_tensor lays the input out again from either; and the range of its finite values (value_range), which a
seeded input is drawn in. No compile: the sites are called directly."""

from __future__ import annotations

import re
from pathlib import Path

import torch

import pt2kit.capture
from pt2kit.minify.worker.toir import _layout, _spec
from pt2kit_portable import make_tensor

BOOT = Path(pt2kit.capture.__file__).parent / "boot"


def _laid_out(t: torch.Tensor) -> tuple:
    return tuple(t.shape), t.stride(), t.storage_offset(), t.untyped_storage().nbytes() // t.element_size()


def test_capture_and_minify_record_one_storage_size_and_make_tensor_lays_the_input_out_again(monkeypatch):
    monkeypatch.syspath_prepend(str(BOOT))
    from pt2kit_capture_tensors import layout_args

    base = torch.arange(20.0)
    inputs = {  # what each site records: (offset, storage beyond the layout's reach, else 0)
        "expanded": (torch.arange(3.0)[None].expand(4, 3), (0, 0)),
        "overlapping": (torch.arange(10.0).as_strided((4, 3), (2, 1)), (0, 10)),
        "reaches the end": (base[8:].view(3, 4), (8, 0)),
        "a slice": (base[2:5], (2, 20)),
        "empty, at an offset": (base[5:5], (5, 20)),
    }
    for what, (t, want) in inputs.items():
        text = layout_args(t)
        capture = (int(m.group(1)) if (m := re.search(r"offset=(\d+)", text)) else 0,
                   int(m.group(1)) if (m := re.search(r"storage=(\d+)", text)) else 0)
        minify = _layout(t, list(t.stride()))
        assert capture == (minify["offset"], minify["storage"]) == want, what
        made = make_tensor(tuple(t.shape), t.stride(), t.dtype, "cpu", values=t, offset=want[0], storage=want[1])
        assert _laid_out(made) == _laid_out(t) and torch.equal(made, t), what


def test_capture_and_minify_record_one_range_a_seeded_input_is_drawn_in(tmp_path, monkeypatch):
    """The finite values' range, NaN and Inf left out (an integer tensor's as integers in the model file): both
    sites give the same numbers, and a tensor with no finite value has none (capture's model file then draws in
    [0, 0], minify's spec in the standard normal)."""
    monkeypatch.syspath_prepend(str(BOOT))
    from pt2kit_capture_tensors import Tensors

    nan, inf = float("nan"), float("inf")
    cases = [(torch.tensor([[-3.0, nan], [inf, 5.5]]), "lo=-3.0, hi=5.5", (-3.0, 5.5)),
             (torch.tensor([7, 2, 4]), "lo=2, hi=7", (2.0, 7.0)),
             (torch.tensor([nan, -inf]), "lo=0, hi=0", (None, None))]
    for t, written, spec in cases:
        expr, kind = Tensors(tmp_path, "none", 0).expr(t, seed=0)
        got = _spec(t, t, "cpu")
        assert kind == "seeded" and f", {written})" in expr and (got.lo, got.hi) == spec, (expr, got)
