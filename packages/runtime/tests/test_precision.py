"""pt2kit.runtime.common.precision: the harness's settings applied over whatever a model file set, read back
without torch's mixed-API errors, and a model's own state restored from what was read."""

from __future__ import annotations

import subprocess
import sys

import pytest

CASES = {
    "legacy flag": "torch.backends.cuda.matmul.allow_tf32 = True",
    "matmul precision high": "torch.set_float32_matmul_precision('high')",
    "new API, one backend": "torch.backends.cuda.matmul.fp32_precision = 'tf32'",
    "new API, generic": "torch.backends.fp32_precision = 'tf32'",
    "matmul precision medium (bf16 CPU matmul)": "torch.set_float32_matmul_precision('medium')",
}

SCRIPT = """
import torch
from pt2kit.runtime.common.precision import HARNESS, differences, precision_state, reduced_modes, use_precision
{user}
own = precision_state()
print(reduced_modes(own, "cuda"))
use_precision(HARNESS)
assert precision_state() == HARNESS, precision_state()
assert torch.backends.cuda.matmul.allow_tf32 is False and torch.backends.cudnn.allow_tf32 is False
assert torch.get_float32_matmul_precision() == "highest" and torch._inductor.config.fallback_random
use_precision(own)
assert precision_state() == own, (precision_state(), own)  # CUBLAS_WORKSPACE_CONFIG unset again too
print("ok")
"""


@pytest.mark.parametrize("user", CASES.values(), ids=CASES.keys())
def test_harness_settings_override_a_models_own_and_the_own_come_back(user):
    # a fresh process each: these are process-wide settings
    p = subprocess.run([sys.executable, "-c", SCRIPT.format(user=user)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    modes, ok = p.stdout.split("\n")[:2]
    assert modes == "['TF32 matmul', 'TF32 cuDNN']" and ok == "ok"


def test_importing_it_imports_no_torch_and_names_cpu_modes_apart():
    p = subprocess.run([sys.executable, "-c", "import sys; from pt2kit.runtime.common import precision as p; "
                        "assert 'torch' not in sys.modules; "
                        "s = dict(p.HARNESS, matmul='tf32', cpu_matmul='bf16'); "
                        "print(p.reduced_modes(s, 'cpu'), p.reduced_modes(s, 'cuda:0'), p.differences(s))"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "['BF16 CPU matmul'] ['TF32 matmul'] ['matmul=tf32', 'cpu_matmul=bf16']"


def test_the_cpu_part_sets_what_a_cpu_run_reads_and_leaves_cudas_settings_alone():
    """A repro made on the CPU carries use_cpu_precision alone: the harness's CPU settings, none of CUDA's."""
    script = ("import torch\nfrom pt2kit.runtime.common.precision import HARNESS, precision_state, use_cpu_precision\n"
              "torch.set_float32_matmul_precision('medium')\nbefore = precision_state()\n"
              "use_cpu_precision(HARNESS)\nnow = precision_state()\n"
              "print(before['cpu_matmul'], [k for k in HARNESS if now[k] != HARNESS[k]])")
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "bf16 ['cudnn', 'cudnn_deterministic', 'cublas_workspace']"
