"""The interpreter shim: a kernel whose loop bound is a runtime int runs under TRITON_INTERPRET=1."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

KERNEL = '''
import torch, triton, triton.language as tl
from pt2kit.runtime.shims.tritoncompat import patch_interpreter_index

assert patch_interpreter_index() and patch_interpreter_index()  # patched, and idempotent
before = getattr(tl.tensor, "__index__", None)


@triton.jit
def steps(out_ptr, n):
    acc = tl.zeros([4], dtype=tl.int32)
    for i in tl.range(0, n, num_stages=2):  # the bound triton 3.6's interpreter could not take
        acc += i
    tl.store(out_ptr + tl.arange(0, 4), acc)


out = torch.zeros(4, dtype=torch.int32)
steps[(1,)](out, 5)
assert out.tolist() == [10, 10, 10, 10], out
assert getattr(tl.tensor, "__index__", None) is before  # nothing left patched after the run
print("ok")
'''


def test_runtime_loop_bound_runs_under_the_interpreter(tmp_path):
    if importlib.util.find_spec("triton") is None:  # not imported here: this process is not interpreting
        pytest.skip("triton is not installed")
    script = tmp_path / "kernel.py"
    script.write_text(KERNEL)
    env = dict(os.environ, TRITON_INTERPRET="1")
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stdout[-2000:] + p.stderr[-2000:]


def test_not_interpreting_leaves_triton_alone(monkeypatch):
    from pt2kit.runtime.shims.tritoncompat import patch_interpreter_index

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert patch_interpreter_index() is False
