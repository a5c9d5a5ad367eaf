"""harness.py: what every query and every repro runs."""

import torch

from pt2kit.minify.judge import plan
from pt2kit.minify.judge.harness import (
    dense,
    eager_outputs,
    fresh,
    fresh_plain,
    make_inputs,
    make_laid_inputs,
    make_plain_inputs,
    make_shared_inputs,
    make_uniform_inputs,
    make_valued_inputs,
    run_eager,
)
from pt2kit.minify.judge.short import says
from pt2kit.minify.judge.verdicts import exception_signature, outcome

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
    for copies in (fresh, fresh_plain):  # a repro of plain inputs copies them as every query does
        a, b, n = copies([t, e, 5])
        assert a.stride() == (1, 2) and torch.equal(a, t) and a.data_ptr() != t.data_ptr()
        assert torch.equal(b, e) and b.stride() == (0,) and b.data_ptr() != e.data_ptr() and n == 5


class WritesAView(torch.nn.Module):
    """A write into one input read through another that shares its storage (``f(x, x[2:4])``)."""

    def forward(self, base, view):
        view.mul_(10)
        return (base + 1,)


def test_a_run_keeps_inputs_that_share_a_storage_sharing_it_and_the_write_seen_through_the_other():
    base = torch.arange(6.0)
    inputs = [base, base[2:4]]
    (out,) = run_eager(WritesAView(), fresh(inputs), eager_outputs)
    assert out.tolist() == [1.0, 2.0, 21.0, 31.0, 5.0, 6.0]  # the script's own answer: the write is read through base
    assert base.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]  # the run wrote its copies, not the inputs


def _drops_writes(gm, example):
    """A backend that runs the graph on copies of its inputs: a write into an input never reaches the caller."""
    return lambda *args: gm(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])


class WritesThenSums(torch.nn.Module):
    def forward(self, x):
        x.mul_(2)
        return (x.sum(),)


def test_a_write_into_an_input_one_side_drops_fails_where_the_outputs_agree():
    x = torch.ones(3)
    # the sums agree (6 and 6); the input as each run left it does not (2s and 1s)
    assert outcome(WritesThenSums(), [x], _drops_writes, {}, ACCURACY) == (
        True, "accuracy", "input 0 as the run left it: 3 of 3 elements differ (RMSE vs float64 1 > 3 x eager's 0; "
                          "e.g. 1 vs 2)")
    assert outcome(WritesThenSums(), [x], "eager", {}, ACCURACY) == (False, "passes", "")  # the write kept: none
    assert x.tolist() == [1.0, 1.0, 1.0]


def test_a_jagged_spec_is_rebuilt_at_its_offsets_run_on_a_copy_and_judged_by_its_values():
    (x,) = make_inputs([("jagged", [8, 3], [3, 1], "float32", "cpu", -1.0, 1.0, [0, 2, 7, 8], 1)])
    assert x.layout == torch.jagged and x.offsets().tolist() == [0, 2, 7, 8] and [len(t) for t in x.unbind()] == [2, 5, 1]
    (v,) = dense([x])
    assert v.shape == (8, 3) and float(v.min()) >= -1.0 and float(v.max()) <= 1.0
    (y,) = fresh([x])
    assert y.values().data_ptr() != x.values().data_ptr() and torch.equal(y.values(), v)
    specs = [("tensor", [2, 3], [1, 2], "float32", "cpu", -1.0, 1.0), ("scalar", 3), ("tensor", [4], [0], "int64", "cpu",
             0, 5)]
    assert all(torch.equal(a, b) and a.stride() == b.stride() for a, b in zip(make_inputs(specs), make_plain_inputs(
        specs), strict=True) if isinstance(a, torch.Tensor))  # a repro of plain specs draws make_inputs's values
    # every tensor floating with its range: the plainest maker, the same values (the draw's one branch they need)
    floats = [specs[0], specs[1], ("tensor", [3, 2], [0, 1], "bfloat16", "cpu", -3.0, 0.5)]
    assert plan.inputs_maker(floats) == (plan.HARNESS, "make_uniform_inputs")
    assert all(torch.equal(a, b) and a.stride() == b.stride() for a, b in zip(make_inputs(floats), make_uniform_inputs(
        floats), strict=True) if isinstance(a, torch.Tensor))
    for other in (specs[2], ("tensor", [2], [1], "float32", "cpu", None, None), ("tensor", [2], [1], "complex64",
                                                                                  "cpu", -1.0, 1.0)):
        assert plan.inputs_maker([*floats, other]) == (plan.HARNESS, "make_plain_inputs"), other
    specs[1:1] = [("tensor", [2, 2], [1, 2], "float64", "cpu", -1.0, 1.0, [0.5, "nan", "-inf", -0.0])]
    made = [(str(a.flatten().tolist()), a.stride()) for a in make_valued_inputs(specs) if isinstance(a, torch.Tensor)]
    assert made == [(str(a.flatten().tolist()), a.stride()) for a in make_inputs(specs) if isinstance(a, torch.Tensor)]
    assert made[1][0] == "[0.5, nan, -inf, -0.0]"  # the real values as written (row-major), NaN and -0.0 kept
    # a slice of a larger tensor (an offset into its storage, a storage larger than it reaches), seeded or valued
    laid = [*(s for s in specs if plan.plain([s])), ("tensor", [2, 3], [4, 1], "float32", "cpu", -1.0, 1.0, None,
                                                       {"offset": 5, "storage": 20}),
            ("tensor", [2], [2], "int64", "cpu", 0, 9, None, {"offset": 1})]
    assert plan.inputs_maker(laid) == (plan.HARNESS, "make_laid_inputs") and not plan.valued(laid)
    made = [(str(a.flatten().tolist()), a.stride(), a.storage_offset(), a.untyped_storage().nbytes())
            for a in make_laid_inputs(laid) if isinstance(a, torch.Tensor)]
    assert made == [(str(a.flatten().tolist()), a.stride(), a.storage_offset(), a.untyped_storage().nbytes())
                    for a in make_inputs(laid) if isinstance(a, torch.Tensor)]
    assert [m[2:] for m in made[-2:]] == [(5, 80), (1, 32)]
    # real values at an offset, a view of another input's storage: make_shared_inputs, the same tensors, the view
    # on the very storage of the input it views; a non-leaf (or a jagged tensor): make_inputs's
    shared = [*laid, (*laid[-1][:7], [1, 2], {"offset": 1}), ("tensor", [2, 2], [3, 1], "float32", "cpu", -1.0, 1.0,
                                                              None, {"offset": 6, "view_of": len(laid) - 2})]
    assert plan.inputs_maker(shared) == (plan.HARNESS, "make_shared_inputs") and not plan.laid(shared)
    made = make_shared_inputs(shared)
    assert [(str(a.flatten().tolist()), a.stride(), a.storage_offset(), a.untyped_storage().nbytes())
            for a in made if isinstance(a, torch.Tensor)] == [
        (str(a.flatten().tolist()), a.stride(), a.storage_offset(), a.untyped_storage().nbytes())
        for a in make_inputs(shared) if isinstance(a, torch.Tensor)]
    assert made[-1].untyped_storage().data_ptr() == made[len(laid) - 2].untyped_storage().data_ptr()
    assert made[-2].tolist() == [1, 2] and made[-2].storage_offset() == 1
    assert plan.inputs_maker([*laid, (*laid[-1][:7], None, "non-leaf", {"offset": 1})]) == (plan.HARNESS, "make_inputs")
    (z,) = make_inputs([("jagged", [2, 1], [1, 1], "float32", "cpu", None, None, [0, 1, 2], 1, [0.5, "inf"])])
    assert z.values().flatten().tolist() == [0.5, float("inf")]  # real values where the failure needs them


def test_an_error_in_inductors_compile_worker_has_the_signature_it_has_in_process():
    from torch._inductor.compile_worker.subproc_pool import SubprocException

    details = ('Traceback (most recent call last):\n  File "/x/subproc_pool.py", line 470, in do_job\n'
               '    result = job()\n  File "/x/compile_tasks.py", line 29, in _reload_python_module\n'
               '    raise RuntimeError(\nRuntimeError: Failed to import /tmp/torchinductor_u/t3/ct36.py\n'
               'SyntaxError: invalid syntax (ct36.py, line 20)\n')
    in_process = RuntimeError("Failed to import /tmp/torchinductor_v/ab/cab12.py\nSyntaxError: invalid syntax")
    assert exception_signature(SubprocException(details)) == exception_signature(in_process) \
        == "RuntimeError: Failed to import <path>"
    assert says(SubprocException(details), exception_signature(in_process))  # a short repro's rule: in its traceback
    assert exception_signature(SubprocException("no traceback here")).startswith("SubprocException: An exception")


def test_every_check_a_repro_can_be_handed_embeds_without_a_name_twice_and_compiles():
    """Each plan a repro can get (every kind; forward, backward, training step; a named backend, aoti, a
    backend file; a config with code or none) embeds by source without two definitions under one name (the
    embedder refuses one: in a repro it would silently be the later one's), and compiles; an accuracy check
    carries the float64 reference and the verdict once, any other none of it."""
    from pt2kit.minify.judge import plan
    from pt2kit.minify.parent import embed

    code = {"torch._inductor.config": {"post_grad_custom_post_pass": ("pt2kit:code", "/f.py", "p")}}
    eager = {"eager": "RuntimeError: ZeroDivisionError"}  # a crash where eager raises: its check needs the signature
    for kind, own in (("accuracy", {}), ("nan", {}), ("compile-error", {}), ("crash", {}), ("crash", eager),
                      ("missing-error", eager), ("violation", {})):
        for backend in ("inductor", "aoti", ("/b.py", "be")):
            for phase, train in (({}, False), ({"phase": "backward"}, False), ({}, True)):
                for config in ({}, code):
                    how = plan.repro({"kind": kind, **own, **phase}, backend, config, train)
                    c = embed.closure([(plan.ANSWER, "main"), *how.values()], docstrings=False)
                    compile(c.source(), "<check>", "exec")
                    assert set(how) <= {"judge", "backend_of", "inputs", "side", "compiled", "configured", "float64",
                                        "verdict", "signature", "fresh", "precision", "under"}
                    assert all(name in c.names for _, name in how.values())
                    assert ("signature" in how) == (kind == "compile-error" or bool(own))
                    assert c.source().count("def to_float64(") == c.source().count("def differs(") == (
                        kind == "accuracy")
                    # an accuracy check is one judge written straight through (minify's workers run it too), with
                    # none of the other kinds' branches; every other kind but a violation runs judged
                    assert ("def accuracy_judged(" in c.source(), "def judged(" in c.source()) == (
                        kind == "accuracy", kind not in ("accuracy", "violation"))
