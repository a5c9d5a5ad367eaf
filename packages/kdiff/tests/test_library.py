"""kdiff as a library in a user's pytest suite."""

from __future__ import annotations

import pytest
import torch

import pt2kit.kdiff as kdiff


def test_assert_same_passes_on_equal_pytrees_and_rounding_noise():
    a = {"logits": torch.ones(2, 3), "hidden": (torch.zeros(4), 3)}
    b = {"logits": torch.ones(2, 3) + 1e-7, "hidden": (torch.zeros(4), 3)}
    kdiff.assert_same(a, b)


def test_assert_same_raises_with_the_per_leaf_table():
    expected = {"logits": torch.ones(2, 3), "aux": torch.zeros(5)}
    actual = {"logits": torch.ones(2, 3), "aux": torch.zeros(5)}
    actual["aux"][3] = 0.5
    with pytest.raises(AssertionError) as e:
        kdiff.assert_same(actual, expected)
    msg = str(e.value)
    assert msg.startswith("1 of 2 leaves differ\n")
    row = next(ln for ln in msg.splitlines() if ln.startswith("out['aux']"))
    assert "FAIL" in row and "[3]: 0 / 0.5" in row and "1/5" in row and "(1e-05, 1.3e-06)" in row
    assert next(ln for ln in msg.splitlines() if ln.startswith("out['logits']")).split()[1] == "ok"


def test_assert_same_names_structure_differences_and_takes_tolerances():
    with pytest.raises(AssertionError, match=r"only in the test's outputs"):
        kdiff.assert_same((torch.ones(2), torch.ones(2)), (torch.ones(2),))
    kdiff.assert_same(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.05]), atol=0.1)
    with pytest.raises(AssertionError, match="shape"):
        kdiff.assert_same(torch.ones(2), torch.ones(3))


def test_the_package_says_what_is_public():
    assert kdiff.__all__ == ["__version__", "assert_same", "compare", "localize"]
    assert all(getattr(kdiff, name) is not None for name in kdiff.__all__)
    import pt2kit.kdiff.localization  # noqa: F401  (a submodule named like a public name would hide it)

    assert [getattr(kdiff, n).__name__ for n in ("assert_same", "compare", "localize")] == [
        "assert_same", "compare", "localize"]
    with pytest.raises(AttributeError):
        kdiff.nothing_here  # noqa: B018


def test_a_dynamic_shape_dynamo_graph_is_captured_with_arguments_it_runs_on():
    from pt2kit.runtime.worker.aotgraphs import forward_graphs

    def f(x):
        return x.view(-1, x.shape[-1]).tanh()

    x = torch.randn(2, 6)
    torch._dynamo.mark_dynamic(x, 1)
    dynamo: list = []
    forward_graphs(f, lambda fn: fn(x), dynamo=dynamo)
    (gm, args), = dynamo
    assert 6 in args and not any(isinstance(a, torch.SymInt) for a in args)  # the size, as this call's int
    (out,) = torch.fx.Interpreter(gm).run(*args)  # a SymInt argument: "expected to contain only concrete integers"
    assert torch.equal(out, x.tanh())


def test_assert_same_compares_a_jagged_tensor_by_values_and_exact_offsets():
    def njt(*rows):
        return torch.nested.nested_tensor([torch.ones(n, 2) for n in rows], layout=torch.jagged)

    kdiff.assert_same(njt(1, 3), njt(1, 3))
    with pytest.raises(AssertionError) as e:
        kdiff.assert_same(njt(2, 2), njt(1, 3))  # the same values, split differently
    assert "1 of 2 leaves differ" in str(e.value)
    assert [ln.split()[:2] for ln in str(e.value).splitlines()[2:]] == [["out", "ok"], ["out.offsets()", "FAIL"]]


def test_a_gradient_on_one_side_only_fails_naming_the_leaf_and_none_on_both_is_no_diff():
    from pt2kit.kdiff.records import compare_grads

    g = torch.ones(2)
    ref = [("grad.a", None), ("grad.b", g), ("grad.c", None), ("grad.d", g)]
    test = [("grad.a", g), ("grad.b", None), ("grad.c", None), ("grad.d", g)]
    diffs, neither = compare_grads(ref, test, ref="eager", test="inductor", atol=None, rtol=None, equal_nan=False,
                                   store=None)
    assert neither == ["grad.c"]
    by = {d["output"]: d for d in diffs}
    assert sorted(by) == ["grad.a", "grad.b", "grad.d"] and by["grad.d"]["passed"]
    assert not by["grad.a"]["passed"] and not by["grad.b"]["passed"]
    assert by["grad.a"]["note"] == "no gradient in the ref run (eager), a gradient in the test run (inductor)"
    assert by["grad.b"]["note"] == "no gradient in the test run (inductor), a gradient in the ref run (eager)"
