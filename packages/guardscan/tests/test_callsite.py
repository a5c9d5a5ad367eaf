"""A script's recompile advice names what the user's own code names: their call's argument, else which
argument of which line, never the ``example_inputs`` of a model file the script does not have."""

from __future__ import annotations

import subprocess
import sys

import pytest
from gstest import guardscan_in

from pt2kit.guardscan.callsite import argument

SCRIPT = """import functools

import torch


def keeps_kwargs(fn):  # what transformers puts round every forward: Dynamo compiles this wrapper
    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        return fn(self, *args, **kwargs)
    return wrapper


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    @keeps_kwargs
    def forward(self, input_ids, mask):
        return self.fc(input_ids) * mask


class Plain(torch.nn.Module):
    def forward(self, x):
        return x.sin()


block, plain = torch.compile(Block(), backend="eager"), torch.compile(Plain(), backend="eager")
for n in (4, 8):
    batch = {"input_ids": torch.randn(n, 16), "mask": torch.ones(n, 16)}
    block(**batch)
    plain(torch.randn(n, 3))
"""


@pytest.fixture(scope="module")
def scanned(tmp_path_factory):
    """The script run once under TORCH_TRACE (as `pt2kit capture` keeps its trace), then `guardscan --trace`."""
    tmp = tmp_path_factory.mktemp("callsite")
    (tmp / "train.py").write_text(SCRIPT)
    p = subprocess.run([sys.executable, "train.py"], cwd=tmp, capture_output=True, text=True,
                       env={"TORCH_TRACE": str(tmp / "trace"), "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr
    return tmp, guardscan_in(tmp, "--trace", str(tmp / "trace"))


@pytest.mark.xdist_group("callsite")
def test_mark_dynamic_names_the_scripts_own_argument_and_call_line(scanned):
    tmp, r = scanned
    assert r.code == 0, r.stderr
    advice = [a for a in r.kind("advice") if a["rule"] == "mark_dynamic"]
    assert [(a["change"], a["source"]) for a in advice] == [
        ("torch._dynamo.mark_dynamic(batch['input_ids'], 0)  # before the call at train.py:31", f"{tmp}/train.py:31"),
        ("torch._dynamo.mark_dynamic(<the tensor passed as x>, 0)  # before it reaches the call at train.py:32",
         f"{tmp}/train.py:32")]
    assert advice[1]["message"].startswith("dim 0 of the tensor passed as x at train.py:32 (plain(torch.randn(n, 3))) ")
    assert "example_inputs" not in r.stderr and "    torch._dynamo.mark_dynamic(batch['input_ids'], 0)" in r.stderr


@pytest.mark.parametrize(("tensor", "line", "expected"), [
    ("kwargs['input_ids']", "out = model(**batch)", "batch['input_ids']"),
    ("kwargs['input_ids']", "out = model(input_ids=ids, attention_mask=m)", "ids"),
    ("kwargs['input_ids']", "out = model(input_ids=enc.input_ids[0])", "enc.input_ids[0]"),
    ("args[1]", "loss = model(x, y)", "y"),
    ("args[0][1]", "model(pair)", "pair[1]"),
    ("x", "model(x=inp)", "inp"),
    ("x", "model(inp)", None),  # by position: which parameter it was is not on the line
    ("x", "model(a, **rest)", None),  # x may be a, or rest's
    ("args[0]", "model(x.to(device))", None),  # two calls could be the compiled one
    ("args[0]", "loss_fn(model(x), y)", None),
    ("kwargs['input_ids']", "model(input_ids=torch.randint(0, 9, (2, n)))", None),  # built in place
    ("kwargs['input_ids']", "out = model(", None),  # a statement over several lines
    ("self.w", "model(x)", None),
])
def test_argument_is_read_from_the_call_line_only_where_sure(tensor, line, expected):
    assert argument(tensor, line) == expected
