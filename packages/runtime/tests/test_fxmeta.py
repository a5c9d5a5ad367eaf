from __future__ import annotations

import pytest

pytest.importorskip("torch")

from pt2kit.runtime.fxmeta import module_path, user_frame


def test_user_frame_skips_torch_frames_and_reads_the_line(tmp_path):
    import torch

    src = tmp_path / "m.py"
    src.write_text("import torch\n\n\ndef f(x):\n    return x.relu()  # here\n")
    tdir = torch.__file__.rsplit("/", 1)[0]
    trace = (f'  File "{src}", line 5, in f\n    return x.relu()\n'
             f'  File "{tdir}/nn/modules/linear.py", line 125, in forward\n    return F.linear(x)\n')
    assert user_frame(trace) == (f"{src}:5", "return x.relu()  # here")
    assert user_frame(None) == (None, None)
    assert user_frame(f'  File "{tdir}/x.py", line 3, in g\n') == (f"{tdir}/x.py:3", None)


def test_module_paths():
    assert module_path({"a": ("L['self'].layers[0].conv", object)}) == "layers.0.conv"
    assert module_path({"a": ("L['self'].blocks['attn']", object)}) == "blocks.attn"
    assert module_path({"a": ("L['fn']", object)}) is None
    assert module_path({"a": ("self.fc1", object)}) == "fc1"
    assert module_path(None) is None
