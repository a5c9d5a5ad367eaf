"""harness.py: what every query and every repro runs."""

import torch

from pt2kit.minify.harness import exception_signature, fresh, outcome

ACCURACY = {"kind": "accuracy", "signature": "accuracy"}


class WritesItsInput(torch.nn.Module):
    """An in-place op on an input: what a cut graph holds when it cuts before ``relative_buckets += ...``."""

    def forward(self, x):
        x.add_(1)
        return (x * 2,)


def test_each_run_of_a_candidate_reads_the_inputs_as_made_not_as_the_run_before_left_them():
    x = torch.zeros(4, dtype=torch.int64)  # integers: compared exactly, no float64 rule to blur it
    # the eager and float64 runs each wrote x + 1 into the input; a compiled run reading it gave 6, not 2
    assert outcome(WritesItsInput(), [x], "eager", {}, ACCURACY) == (False, "passes", "")
    assert x.tolist() == [0, 0, 0, 0]


def test_a_fresh_input_keeps_its_strides_and_values():
    t = torch.arange(6.0).reshape(3, 2).t()  # strides (1, 2): Inductor specialises on them
    e = torch.zeros(1).expand(3)  # stride 0: cannot be written element by element
    a, b, n = fresh([t, e, 5])
    assert a.stride() == (1, 2) and torch.equal(a, t) and a.data_ptr() != t.data_ptr()
    assert torch.equal(b, e) and b.data_ptr() != e.data_ptr() and n == 5


def test_an_error_in_inductors_compile_worker_has_the_signature_it_has_in_process():
    from torch._inductor.compile_worker.subproc_pool import SubprocException

    details = ('Traceback (most recent call last):\n  File "/x/subproc_pool.py", line 470, in do_job\n'
               '    result = job()\n  File "/x/compile_tasks.py", line 29, in _reload_python_module\n'
               '    raise RuntimeError(\nRuntimeError: Failed to import /tmp/torchinductor_u/t3/ct36.py\n'
               'SyntaxError: invalid syntax (ct36.py, line 20)\n')
    in_process = RuntimeError("Failed to import /tmp/torchinductor_v/ab/cab12.py\nSyntaxError: invalid syntax")
    assert exception_signature(SubprocException(details)) == exception_signature(in_process) \
        == "RuntimeError: Failed to import <path>"
    assert exception_signature(SubprocException("no traceback here")).startswith("SubprocException: An exception")
