"""PyTorch's own planted bugs for its Dynamo-level minifier (torch._dynamo.backends.debugging): each
backend fails on a graph that calls torch.relu, as Dynamo hands it over (an aten graph has no
torch.relu in it, so only a Dynamo-level candidate can show these)."""

from torch._dynamo.backends.debugging import relu_accuracy_error_TESTING_ONLY as accuracy  # noqa: F401
from torch._dynamo.backends.debugging import relu_compile_error_TESTING_ONLY as compile_error  # noqa: F401
