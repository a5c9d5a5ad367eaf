"""pt2kit_portable's rule of values no op defined, on eager code as models write it (no compile)."""

from __future__ import annotations

import torch

from pt2kit_portable import undefined_values


def test_an_inverse_permutation_written_by_index_is_judged_and_empty_memory_is_not():
    """transformers' MoE routing: `inv = empty_like(perm); inv[perm] = arange(n)` defines every element."""
    perm = torch.randperm(6)
    mode = undefined_values()
    with mode:
        inv = torch.empty_like(perm)
        inv[perm] = torch.arange(perm.size(0))
        routed = torch.randn(6, 3)[inv]
        garbage = torch.empty(4) * 2
        half = torch.empty(4)
        half[:2].fill_(0)
    assert mode.made_by(inv) is None and mode.made_by(routed) is None
    assert mode.made_by(garbage) == "aten.empty" and mode.made_by(half) == "aten.empty"
