"""to_float64, the float64 reference's inputs (kdiff's, minify's): tensors that share a storage stay views of one
widened copy of it, as the run they stand for had them; everything else is widened alone, as each_to_float64 does."""

from __future__ import annotations

import torch

from pt2kit_portable import each_to_float64, to_float64


def test_two_inputs_on_one_storage_stay_views_of_one_widened_copy():
    base = torch.randn(4, 4)
    before = base.clone()
    x, row, other = to_float64([base, base[1], torch.randn(3)])
    assert x.dtype == row.dtype == torch.float64 and x.untyped_storage().data_ptr() == row.untyped_storage().data_ptr()
    assert row.storage_offset() == 4 and torch.equal(row, base[1].double())
    x.add_(1)  # f(x, x[1]) writing x: the row reads the write, as in the run
    assert torch.equal(row, base[1].double() + 1)
    assert torch.equal(base, before)  # the original is not touched
    assert other.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()


def test_what_shares_no_storage_or_needs_grad_or_is_another_dtype_is_widened_alone():
    c = torch.randn(3, dtype=torch.complex64)
    wide_c, wide_r = to_float64([c, torch.view_as_real(c)])  # one storage, two dtypes: apart
    assert wide_c.dtype == torch.complex128 and wide_r.dtype == torch.float64
    assert torch.equal(wide_r, torch.view_as_real(c).double())
    leaf = torch.randn(3, requires_grad=True)
    a, b = to_float64([leaf, leaf])
    assert a.requires_grad and a.grad_fn is not None and a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr()
    ints = torch.arange(4)
    widened = to_float64({"i": ints, "n": 3})
    assert widened["i"] is ints and widened["n"] == 3
    alone = [torch.randn(2, 2), torch.randn(2)]
    assert all(torch.equal(p, q) for p, q in zip(to_float64(alone), each_to_float64(alone), strict=True))
