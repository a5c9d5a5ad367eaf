"""Eager raises, the compiled side returns: the one verdict on a model whose reference run raises.

A model whose eager run raises has nothing to compare against: the model's own error, exit 2. Unless the
compiled side returns where eager raised: the compiler dropped eager's check (a meta function or an
Inductor decomposition that leaves it out: torch.bmm of float16 and float32, pytorch#177629, or
linalg.cholesky of a matrix that is not positive definite, pytorch#182965). That is a finding: one failing
`diff` record naming eager's error (``raised``), no values. The compiled side raising too, in any form,
is no finding: the refusal stands (a record capture found not to run here keeps capture's cannot-judge line).
"""

from __future__ import annotations

from typing import Any

from pt2kit.runtime.common.errors import UsageError
from pt2kit.runtime.common.text import exception_line


class EagerRaised(UsageError):
    """The reference's eager run raised ``error``: said as the model's own failure (exit 2) unless the
    compiled side returns (:func:`judge_raised`)."""

    def __init__(self, message: str, error: BaseException) -> None:
        super().__init__(message)
        self.error = error


def eager_fails(label: str, what: str, e: BaseException, again: Any) -> BaseException:
    """The model's own eager run failing is bad input (exit 2, one line), not a crash: there is nothing
    to compare against (but :func:`judge_raised`). Unless ``again()`` (the same run without kdiff's dispatch modes)
    succeeds: then the failure is kdiff's own, and ``e`` stays a crash."""
    try:
        again()
    except Exception:
        return EagerRaised(f"{label}: the model's own {what} fails, so there is nothing to compare against "
                           f"(the model, not the compiler): {exception_line(e)}", e)
    return e


def judge_raised(e: EagerRaised, run_test: Any, ref: str, test: str, refusal: UsageError | None) -> dict[str, Any]:
    """The failing diff's fields where ``run_test()`` (the compiled side, on the same inputs) returns; where it
    raises, ``refusal`` (capture's cannot-judge line), else ``e`` itself, is raised."""
    try:
        run_test()
    except Exception:
        raise (refusal or e) from None
    line = exception_line(e.error)
    return {"output": "out", "ref": ref, "test": test, "atol": 0.0, "rtol": 0.0, "equal_nan": True, "passed": False,
            "raised": line, "note": f"{ref} raises {line}; {test} returns"}
