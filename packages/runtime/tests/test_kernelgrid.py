"""The persistent kernels' grid: capped by the blocks, a few per SM on CUDA, a few when interpreted."""

from __future__ import annotations

import pytest
import torch

from pt2kit.runtime.worker.kernelgrid import INTERPRETED_PROGRAMS, persistent_programs


def test_interpreted_grid_is_capped_by_blocks_and_by_a_few_programs():
    cpu = torch.device("cpu")
    assert persistent_programs(cpu, 0, 64, 4) == 1
    assert persistent_programs(cpu, 129, 64, 4) == 3
    assert persistent_programs(cpu, 10**9, 64, 4) == INTERPRETED_PROGRAMS


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_cuda_grid_is_per_sm():
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    assert persistent_programs(torch.device("cuda", 0), 10**9, 1024, 12) == sms * 12
    assert persistent_programs(torch.device("cuda"), 10**9, 1024, 3) == sms * 3
    assert persistent_programs(torch.device("cuda", 0), 5000, 1024, 12) == 5
