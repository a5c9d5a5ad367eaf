"""test/inductor/test_minifier.py::test_accuracy_vs_strict_accuracy (cpu, its default-accuracy half): the
log1p bug changes only the mask of a where whose branches are the same; the output is wrong from the relu."""
import torch
import torch._inductor.config

# the settings MinifierTestBase.setUpClass patches for every test
torch._inductor.config.pattern_matcher = False
torch._inductor.config.compile_threads = 1
torch._inductor.config.cpp.vec_isa_ok = False

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"
torch._inductor.config.cpp.inject_log1p_bug_TESTING_ONLY = "accuracy"


@torch.compile()
def inner(x):
    y = torch.log1p(x)
    b = y > 0
    # Need to ensure suffix removal hits a boolean output
    b = torch.logical_not(b)
    b = torch.logical_not(b)
    x = torch.relu(x)
    return torch.where(b, x, x)


inner(torch.randn(20))
