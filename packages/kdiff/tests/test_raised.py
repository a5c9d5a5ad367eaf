"""kdiff.raised: where eager raises, only a compiled side that returns is a finding; one that raises too, in
any form, leaves the refusal as it was (capture's cannot-judge line where the record had one). No torch."""

from __future__ import annotations

import pytest

from pt2kit.kdiff.raised import EagerRaised, judge_raised
from pt2kit.runtime.common.errors import UsageError
from pt2kit.runtime.common.outcome import CannotJudge

ERROR = RuntimeError("addmv input tensors must have the same dtype, but got Float, Half, and Float")


def _refused() -> EagerRaised:
    return EagerRaised("m.py: the model's own eager run fails, so there is nothing to compare against", ERROR)


def _raises(e: BaseException):
    def run() -> None:
        raise e
    return run


def test_a_compiled_side_that_returns_is_one_failing_leaf_naming_eager_error():
    d = judge_raised(_refused(), lambda: None, "eager", "inductor", None)
    line = f"RuntimeError: {ERROR}"
    assert (d["output"], d["passed"], d["raised"], d["note"]) == ("out", False, line, f"eager raises {line}; inductor returns")


@pytest.mark.parametrize("compiled", [RuntimeError(str(ERROR)), TypeError("another error altogether")])
def test_a_compiled_side_that_raises_in_any_form_is_no_finding(compiled):
    e = _refused()
    with pytest.raises(UsageError) as got:
        judge_raised(e, _raises(compiled), "eager", "inductor", None)
    assert got.value is e
    cannot = CannotJudge("m.py: cannot judge: the captured graph does not run here: " + str(ERROR))
    with pytest.raises(CannotJudge) as got:
        judge_raised(e, _raises(compiled), "eager", "inductor", cannot)
    assert got.value is cannot
