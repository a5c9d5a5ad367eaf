"""Which failure a stream record asks minify to keep."""

import msgspec

from pt2kit.minify.records import Want, checked, wanted
from pt2kit.schema import Diff, Violation

RUN = {"v": 1, "run": "20261123T000000Z-abcdef012345", "model": "m.py"}


def _diff(**kw):
    return msgspec.convert({**RUN, "kind": "diff", "output": "out", "ref": "eager", "test": "inductor", "atol": 1e-5,
                            "rtol": 1e-5, "passed": False, **kw}, Diff)


def _violation(**kw):
    return msgspec.convert({**RUN, "kind": "violation", "phase": "forward", "op": "aten.mm.default", **kw}, Violation)


def test_a_failing_diff_brings_its_reference_and_a_passing_one_asks_nothing():
    said = "the diff of out fails assert_close"
    assert wanted(_diff(ref="eager64")) == Want(kind="accuracy", ref="eager64", said=said, backend="inductor")
    # the backend the diff compiled with, which minify then cuts with (kdiff --backend NAME | minify)
    assert wanted(_diff(test="aot_eager")) == Want(kind="accuracy", ref="eager", said=said, backend="aot_eager")
    assert wanted(_diff(passed=True)) is None


def test_a_close_failure_keeps_its_rule_and_says_its_numbers():
    metrics = {"numel": 512, "max_abs": 2.0, "mean_abs": 0.5, "max_rel": 2.0, "rmse": 0.9, "mismatches": 502,
               "mismatch_share": 0.98}
    assert wanted(_diff(rule="close", close=False, metrics=metrics)) == Want(
        kind="accuracy", ref="eager", rule="close", backend="inductor",
        said="the diff of out fails assert_close (--verdict close), 98% of elements, max abs 2")
    fp64 = {"passed": False, "rmse_test": 0.5, "rmse_baseline": "nan", "multiplier": 2.0, "tol": 1e-4}
    assert wanted(_diff(rule="fp64", close=False, accuracy=fp64)).said == \
        "the diff of out fails PyTorch's float64 rule (compiled RMSE 0.5 vs eager nan from float64)"


def test_an_alignment_violation_brings_its_tile_and_unchecked_rules_are_left():
    got = wanted(_violation(constraint="align", message="aten.mm.default: dim 0 of size 10 is not a multiple of 16"))
    assert got == Want(kind="violation", constraint="align", op="aten.mm.default", dtype=None, align=16)
    symbolic = "aten.mm.default: dim 0 is symbolic (s0), so alignment to 16 cannot be verified; its example size 10 " \
               "is not a multiple"
    assert wanted(_violation(constraint="align", message=symbolic)) is None  # no size a repro could hold
    assert wanted(_violation(constraint="contiguous", message="not contiguous")) is None
    # a backward graph's violation is kept since --mode train (minified in the backward graph)
    assert wanted(_violation(constraint="deny", message="denied", phase="backward")).phase == "backward"
    assert wanted(_violation(constraint="deny", message="denied")).op == "aten.mm.default"


def test_backend_takes_a_name_aoti_or_a_backend_file_and_refuses_module_attr():
    """minify's --backend: any plain name (the worker asks torch whether it registers it), aoti, FILE.py:NAME."""
    import pytest

    from pt2kit.minify.job import Job
    from pt2kit.runtime.common.errors import UsageError

    for name in ("relu_compile_error_TESTING_ONLY", "aot_eager", "aoti", None):
        assert Job(model="m.py", backend=name).backend == name
    with pytest.raises(UsageError, match=r"^--backend pkg\.mod:fn: expected a name torch registers"):
        Job(model="m.py", backend="pkg.mod:fn")
    with pytest.raises(UsageError, match=r"^--backend /nope/b\.py:fn: no such file /nope/b\.py$"):
        Job(model="m.py", backend="/nope/b.py:fn")


def test_a_failed_capture_check_is_a_nan_or_accuracy_failure_of_the_forward_or_the_backward():
    class Captured(msgspec.Struct):
        check: str | None = None

    assert checked(Captured("nan: out[0]: 11 of 40 values non-finite (NaN or Inf) where eager's are finite")) == Want(kind="nan")
    assert checked(Captured("nan: the gradient of input 0 (fn.0.weight): 128 of 128 values non-finite")) == Want(
        kind="nan", phase="backward")
    got = checked(Captured("accuracy: out[0]: 12 of 12 elements differ (RMSE vs float64 0.00592 > 3 x eager's)"))
    assert (got.kind, got.ref, got.phase) == ("accuracy", "eager", None)
    assert got.said == "pt2kit capture --check accuracy: out[0]: 12 of 12 elements differ (RMSE vs float64 0.00592 > 3 x eager's)"
    assert checked(Captured()) is None and checked(None) is None and checked(Captured("later: other")) is None
