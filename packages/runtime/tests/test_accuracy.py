"""The float64 reference and PyTorch's accuracy rule (pt2kit.runtime.worker.accuracy)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from pt2kit.runtime.worker.accuracy import accuracy_rule, float64_copy, float64_mode  # noqa: E402


class Casts(torch.nn.Module):
    """What HF models do: a norm in float32 whatever the dtype, a float16 round trip, float32 constants."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.softmax(self.a(x).float(), -1).to(torch.float32)
        h = h + torch.zeros(8, dtype=torch.float32) + torch.tensor(0.5)
        return self.b(h)


def test_explicit_casts_stay_float64_and_run():
    torch.manual_seed(0)
    m, x = Casts(), torch.randn(4, 8)
    m64, (x64,) = float64_copy(m, (x,))
    with pytest.raises(RuntimeError, match="dtype"):
        m64(x64)  # what kdiff --ref eager64 used to crash on
    with float64_mode():
        out = m64(x64)
    assert out.dtype == torch.float64
    torch.testing.assert_close(out.float(), m(x), rtol=1e-5, atol=1e-6)
    assert next(m.parameters()).dtype == torch.float32  # the original is untouched


def test_a_half_round_trip_still_rounds():
    x = torch.randn(64, dtype=torch.float64) * 3
    with float64_mode():
        y = x.half().float()
    assert y.dtype == torch.float64
    assert torch.equal(y, x.half().double()) and not torch.equal(y, x)


def test_an_op_without_a_float64_kernel_runs_in_float32():
    lib = torch.library.Library("pt2kit_acc_test", "DEF")
    lib.define("f32only(Tensor x) -> Tensor")

    def impl(x: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.float32:
            raise RuntimeError(f"f32only: expected Float, got {x.dtype}")
        return x * 2

    lib.impl("f32only", impl, "CPU")
    x = torch.randn(5, dtype=torch.float64)
    mode = float64_mode()
    with mode:
        y = torch.ops.pt2kit_acc_test.f32only(x) + 1
    assert y.dtype == torch.float64 and mode.narrowed == ["pt2kit_acc_test.f32only.default"]
    torch.testing.assert_close(y, x.float().double() * 2 + 1)


class Branchy(torch.nn.Module):
    """torch.cond with float32 constants inside its branches, then a while_loop carrying a float32 value."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from torch._higher_order_ops.while_loop import while_loop

        h = torch.cond(x.sum() > 0, lambda t: (t * torch.tensor(0.1)).tanh(),
                       lambda t: t - torch.ones(8, dtype=torch.float32), (x,))
        _, h = while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v.sin() + 0.5), (torch.tensor(0), h))
        return h


def test_higher_order_ops_run_in_float64_with_their_insides():
    torch.manual_seed(0)
    m, x = Branchy(), torch.randn(4, 8)
    x64 = x.double()
    mode = float64_mode()
    with mode:  # raised NotImplementedError ("no rule registered for HigherOrderOperator cond") before
        out = m(x64.float())  # a float32 input, as the model's own casts give: the mode widens it
    assert out.dtype == torch.float64 and mode.blind == []
    want = x64 * torch.tensor(0.1).double() if bool(x.sum() > 0) else x64 - 1  # the constant as float32 holds it
    want = want.tanh() if bool(x.sum() > 0) else want
    for _ in range(3):
        want = want.sin() + 0.5
    torch.testing.assert_close(out, want, rtol=1e-12, atol=1e-12)  # float64 throughout, not float32 widened


def test_accuracy_rule_passes_rounding_noise_and_fails_a_bug():
    torch.manual_seed(0)
    fp64 = torch.randn(4096, dtype=torch.float64)
    eager = fp64.float()
    noise = (fp64 * (1 + 1e-6 * torch.randn(4096, dtype=torch.float64))).float()  # another summation order
    assert accuracy_rule(noise, eager, fp64).passed
    bug = eager.clone()
    bug[:100] = 0.0
    r = accuracy_rule(bug, eager, fp64)
    assert not r.passed and r.multiplier == 2.0 and r.rmse_test > 100 * r.rmse_baseline
    nan = eager.clone()
    nan[0] = float("nan")
    assert not accuracy_rule(nan, eager, fp64).passed


def test_nan_and_the_same_inf_on_both_sides_agree_the_rest_is_still_judged():
    from pt2kit.runtime.worker.accuracy import differs

    eager = torch.tensor([1.0, float("nan"), float("inf"), -float("inf"), 2.0])
    fp64 = eager.double()
    assert differs(eager.clone(), eager, fp64) == ""
    assert differs(eager.clone(), eager, None) == ""
    nan_only_in_test = eager.clone()
    nan_only_in_test[0] = float("nan")
    assert differs(nan_only_in_test, eager, fp64).startswith("1 of 5 elements differ (RMSE vs float64 nan")
    flipped = eager.clone()
    flipped[2] = -float("inf")
    assert differs(flipped, eager, fp64).startswith("1 of 5 elements differ")
    # agreeing NaN no longer hides a bug in the finite part (same() passes when both RMSEs are NaN)
    bug = eager.clone()
    bug[4] = 3.0
    assert differs(bug, eager, fp64).startswith("1 of 5 elements differ (RMSE vs float64 0.707 > 3 x eager's 0")
    assert accuracy_rule(bug, eager, fp64).rmse_test == 0.5 ** 0.5  # over the 2 elements not NaN/Inf on both


def test_verdict_close_judges_by_assert_close_alone():
    from pt2kit.runtime.worker.accuracy import differs

    torch.manual_seed(0)
    fp64 = torch.randn(4096, dtype=torch.float64)
    eager = fp64.float()
    drift = (fp64 * (1 + 5e-6 * torch.randn(4096, dtype=torch.float64))).float()  # within the float64 rule
    assert differs(drift, eager, fp64) == ""
    # kdiff --verdict close's diff, as minify judges it
    assert differs(drift, eager, fp64, rule="close") == \
        "155 of 4096 elements differ (assert_close fails; e.g. -1.29564 vs -1.29563)"
