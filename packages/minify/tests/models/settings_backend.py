"""A user's backend file that sets Inductor's config at its top level, as scripts do: importing it turns the
planted relu bug on for every compile of the script. minify and kdiff compile under what it sets."""

import torch._inductor.config

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"


def inductor_as_set(gm, example_inputs):
    from torch._inductor.compile_fx import compile_fx

    return compile_fx(gm, example_inputs)
