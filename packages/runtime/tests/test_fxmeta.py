from __future__ import annotations

import pytest

pytest.importorskip("torch")

from pt2kit.runtime.worker.fxmeta import module_path, user_frame


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


def test_a_printed_fx_graph_reads_through_to_the_users_line(tmp_path):
    # a captured model file: FX's print_readable code, each statement under the user's line it came from
    src = tmp_path / "g.py"
    src.write_text("class M:\n    def forward(self, x):\n        l_x_ = x\n\n"
                   "        # File: /w/train.py:12 in forward, code: y = self.fc(x).relu()\n"
                   "        y = torch.relu(l_x_)\n        z = y + 1\n\n"
                   "        # No stacktrace found for following nodes\n        return (z,)\n")
    at = [user_frame(f'  File "{src}", line {n}, in forward\n') for n in (3, 6, 7, 10)]
    assert at[0] == (f"{src}:3", "l_x_ = x") and at[3] == (f"{src}:10", "return (z,)")
    assert at[1] == at[2] == ("/w/train.py:12", "y = self.fc(x).relu()")


def test_module_paths():
    assert module_path({"a": ("L['self'].layers[0].conv", object)}) == "layers.0.conv"
    assert module_path({"a": ("L['self'].blocks['attn']", object)}) == "blocks.attn"
    assert module_path({"a": ("L['fn']", object)}) is None
    assert module_path({"a": ("self.fc1", object)}) == "fc1"
    assert module_path(None) is None
