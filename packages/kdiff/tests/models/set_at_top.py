"""A backend file as scripts write them: its top level turns Inductor's planted relu bug on, which importing it
does for every compile of the script; kdiff runs every side under it."""

import torch._inductor.config

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"


def compiled(gm, example_inputs):
    from torch._inductor.compile_fx import compile_fx

    return compile_fx(gm, example_inputs)
