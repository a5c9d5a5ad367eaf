"""A user's script whose compiled code fails, as PyTorch's minifier tests build it (relu is the bug):
``python fails.py KIND [KIND ...]`` runs each in turn; the last one's exception ends the script, the
earlier ones' are caught and printed. KIND:

- ``compile`` / ``run``: Inductor's C++ build fails (``cpp.inject_relu_bug_TESTING_ONLY = "compile_error"``),
  or its code raises when called (``"runtime_error"``);
- ``backend-compile`` / ``backend-run``: torch's ``relu_compile_error_TESTING_ONLY`` /
  ``relu_runtime_error_TESTING_ONLY`` backends;
- ``later``: the script's own backend, whose code fails only once the input grows (the second call);
- ``aoti-compile`` / ``aoti-run``: AOT Inductor with the relu bug in its inductor_configs (argv's last
  word: where its package goes);
- ``export``: ``torch.export.export`` of a module whose branch depends on its input's values: export raises
  before any graph exists.
"""
import sys

import torch


def inner(x):
    x = torch.relu(x)
    x = torch.cos(x)
    return x


class Net(torch.nn.Module):
    def forward(self, x):
        return inner(x)


class Branchy(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) if x.sum() > 0 else x  # data-dependent: export cannot trace it


def flaky(gm, example_inputs):
    """A backend whose code overflows on large inputs."""
    def run(*args):
        if args[0].abs().max() > 5:
            raise OverflowError("kernel overflow")
        return gm(*args)
    return run


def one(kind):
    bug = kind.split("-")[-1].replace("run", "runtime") + "_error"
    if kind in ("compile", "run"):
        torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = bug
        try:
            torch.compile(inner)(torch.randn(20, 20))
        finally:
            torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = None
    elif kind in ("backend-compile", "backend-run"):
        torch.compile(inner, backend=f"relu_{bug}_TESTING_ONLY")(torch.randn(20, 20))
    elif kind == "later":
        f = torch.compile(inner, backend=flaky)
        f(torch.ones(20, 20))
        f(torch.full((20, 20), 9.0))
    elif kind == "export":
        torch.export.export(Branchy(), (torch.randn(20, 20),))
    elif kind in ("aoti-compile", "aoti-run"):
        ep = torch.export.export(Net(), (torch.randn(20, 20),))
        path = torch._inductor.aoti_compile_and_package(
            ep, package_path=sys.argv[-1], inductor_configs={"cpp.inject_relu_bug_TESTING_ONLY": bug})
        torch._inductor.aoti_load_package(path)(torch.full((20, 20), 3.0))  # not the export's example input


kinds = [k for k in sys.argv[1:] if not k.endswith(".pt2")]
for kind in kinds[:-1]:
    try:
        one(kind)
    except Exception as e:
        print(f"{kind}: {type(e).__name__}")
one(kinds[-1])
print("done")
