"""test/inductor/test_minifier.py::test_constant_in_graph (cpu)."""
import torch
import torch._inductor.config

# the settings MinifierTestBase.setUpClass patches for every test
torch._inductor.config.pattern_matcher = False
torch._inductor.config.compile_threads = 1
torch._inductor.config.cpp.vec_isa_ok = False

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"


@torch.compile()
def inner(x):
    return torch.tensor(2) + torch.relu(x)


inner(torch.randn(2))
