"""test/dynamo/test_minifier.py::test_after_dynamo_non_leaf_compile_error (cpu)."""
import torch
import torch._inductor.config

# the settings MinifierTestBase.setUpClass patches for every test
torch._inductor.config.pattern_matcher = False
torch._inductor.config.compile_threads = 1
torch._inductor.config.cpp.vec_isa_ok = False


@torch.compile(backend="non_leaf_compile_error_TESTING_ONLY")
def inner(x):
    return x + 1


inner(torch.randn(20, 20, requires_grad=True, device="cpu") + 1)
