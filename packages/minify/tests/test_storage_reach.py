"""One rule says how much storage an input's layout reaches (pt2kit_portable.storage_reach), so capture's model
file and minify's spec record an input's storage size in one case and make_tensor lays the input out again from
either: a slice of a larger storage records that storage, an input whose layout reaches its storage's end records
none. No compile: the three sites are called directly."""

from __future__ import annotations

import re
from pathlib import Path

import torch

import pt2kit.capture
from pt2kit.minify.toir import _layout
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
