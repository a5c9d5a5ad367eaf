"""Each private torch API benchrun reads, on the installed torch: a real compile moves every number."""

from __future__ import annotations

import torch

from pt2kit.benchrun import torchapi


def test_compile_metrics_split_a_real_compile(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()
    torchapi.clear_compile_metrics()
    k0, c0 = torchapi.generated_kernels(), torchapi.dynamo_counts()

    def f(x):
        x = torch.sin(x) * 2
        print("a graph break")
        return torch.cos(x) + 1

    torch.compile(f)(torch.randn(8))
    split = torchapi.split_compile(torchapi.compile_metrics())
    assert split["frame_s"] >= split["backend_s"] >= split["inductor_s"] > 0
    assert split["cache_misses"] >= 2 and split["cache_hits"] == 0
    assert split["frames"][:1] == ["0/0"]
    c = torchapi.dynamo_counts()
    assert c["graphs"] - c0["graphs"] == 2 and c["breaks"] - c0["breaks"] == 1
    assert torchapi.generated_kernels() - k0 >= 2


def test_profiler_events_are_read_on_this_torch():
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        torch.mm(torch.randn(64, 64), torch.randn(64, 64))
    (mm,) = [e for e in prof.key_averages() if e.key == "aten::mm"]
    assert torchapi.device_us(mm) == 0.0 and not torchapi.is_device_kernel(mm)
