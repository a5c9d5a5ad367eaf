"""test/dynamo/test_minifier.py::test_after_dynamo_runtime_error (cpu): backend relu_runtime_error_TESTING_ONLY."""
import torch
import torch._inductor.config

# the settings MinifierTestBase.setUpClass patches for every test
torch._inductor.config.pattern_matcher = False
torch._inductor.config.compile_threads = 1
torch._inductor.config.cpp.vec_isa_ok = False


@torch.compile(backend="relu_runtime_error_TESTING_ONLY")
def inner(x):
    for _ in range(10):
        x = torch.sin(x)
    x = torch.relu(x)
    for _ in range(10):
        x = torch.cos(x)
    return x


inner(torch.randn(20, 20, device="cpu"))
