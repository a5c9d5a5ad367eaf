"""One rule names the compiler's own exception under torch's wrappers (pt2kit_portable.compiler_error): capture's
manifest line and minify's signature (every repro.py's) name one failure by one type. Before, capture followed
``inner_exception`` alone and named a lowering failure ``LoweringException``, where minify named the error the
lowering raised. The wrappers are raised as torch raises them (InductorError and LoweringException ``from
None``, so the error they hold is only their ``__context__`` and ``inner_exception``), and once by a real
Inductor compile."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from torch._dynamo.exc import BackendCompilerFailed
from torch._inductor.exc import CppCompileError, InductorError, LoweringException

import pt2kit.capture
from pt2kit.minify.judge.short import says
from pt2kit.minify.judge.verdicts import exception_signature
from pt2kit_portable import compiler_error

BOOT = Path(pt2kit.capture.__file__).parent / "boot"


def _raised(wrap, inner: Exception) -> Exception:
    """``inner`` raised, then ``wrap(inner)`` raised over it ``from None``, as torch's compile_fx and graph.py do."""
    try:
        try:
            raise inner
        except Exception as e:
            raise wrap(e).with_traceback(e.__traceback__) from None
    except Exception as outer:
        return outer


def _lowering_fails() -> Exception:
    lowering = _raised(lambda e: LoweringException(e, torch.ops.aten.relu.default, [], {}),
                       AssertionError("boom in the relu lowering"))
    return _raised(lambda e: InductorError(e, None), lowering)


def _missing_lowering() -> Exception:
    """A real compile: with implicit fallbacks off, an op with no lowering fails Inductor's lowering."""
    import torch._inductor.config as inductor

    torch._dynamo.reset()
    with inductor.patch(implicit_fallbacks=False), pytest.raises(Exception) as got:
        torch.compile(torch.ops.aten.cholesky.default, backend="inductor")(torch.eye(3))
    return got.value


@pytest.mark.parametrize(("make", "name", "stage"), [
    (_lowering_fails, "AssertionError", "lowering"),
    (lambda: _raised(lambda e: InductorError(e, None), CppCompileError(["g++", "k.cpp"], "boom")), "CppCompileError",
     "build"),
    (lambda: _raised(lambda e: BackendCompilerFailed("my_backend", e, None), ValueError("my backend refuses")),
     "ValueError", "compile"),
    (_missing_lowering, "MissingOperatorWithoutDecomp", "lowering"),
])
def test_capture_and_minify_name_one_failure_by_the_compilers_own_exception(make, name, stage, tmp_path,
                                                                             monkeypatch):
    """The line's stage too: capture's failed_stage scans the chain by the link compiler_error follows
    (pt2kit_portable.held_exception), so the wrapper raised ``from None`` is seen through to its build or lowering
    error."""
    monkeypatch.syspath_prepend(str(BOOT))
    import pt2kit_capture_manifest as boot

    monkeypatch.setenv("PT2KIT_CAPTURE_DIR", str(tmp_path))
    monkeypatch.setenv("PT2KIT_CAPTURE_GRAPHS", "all")
    e = make()
    assert type(compiler_error(e)).__name__ == name
    line = boot.new_line("inductor")

    def fails():
        raise e

    with pytest.raises(type(e)):
        boot.compile_through(line, fails)
    (written,) = [json.loads(x) for x in (tmp_path / f"p{os.getpid()}" / "graphs.ndjson").read_text().splitlines()]
    assert written["error"].partition(":")[0] == exception_signature(e).partition(":")[0] == name
    # a short repro's rule (PyTorch's check_str on the workers' signature) finds the same error in the wrapper's text
    assert says(e, exception_signature(e)) and not says(e, f"{name}: another error")
    assert written["stage"] == stage
