"""A compiler that reads process state no graph records (planted; the real cases: pytorch#181175, which
AOTAutograd fails only as Dynamo traced torch.func.grad in the script, and pytorch#184405, a guard missing on
the default dtype): it refuses to compile while the default dtype is float64. The script sets it and
compiles: the compile fails. The graph capture keeps, run again from its model file, compiles under the
default float32 and passes, so minify's run of it shows no failure: only the script does."""

import torch


def refuses_float64_default(gm, example_inputs):
    if torch.get_default_dtype() == torch.float64:
        raise RuntimeError("planted: compiled under a float64 default dtype")
    return gm.forward


def f(x):
    return x.sin() * 2


if __name__ == "__main__":
    torch.set_default_dtype(torch.float64)
    print(torch.compile(f, backend=refuses_float64_default)(torch.randn(8)))
