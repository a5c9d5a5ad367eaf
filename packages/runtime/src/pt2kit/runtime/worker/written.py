"""What a call writes in place, as leaves, and the values every side starts from (kdiff's verdict and
minify's check of the failure it was handed).

A graph may write its inputs, parameters or buffers in place (a compiled optimizer step returns ``()``
and writes its parameters and ``exp_avg``/``exp_avg_sq``; a BatchNorm its running stats; a forward
``x.mul_(0.5)`` its batch). Two guarantees follow, as PyTorch's dynamo benchmark harness gives them (it
deep-copies the model and clones the inputs for each run):

* Every side starts from the values the model file loaded: :meth:`Start.restore` writes back, before
  each run, whatever a run before it changed (only those: an unwritten tensor is not touched).
* What a side wrote is compared like an output: a tensor among the inputs, parameters and buffers whose
  value after the run is not its starting value is a leaf ``written.<name>`` (``written.inputs[0]``,
  ``written.exp_avg_0``). A tensor one side wrote and another left alone is compared at its starting
  value on that side (:meth:`Start.complete`), so a dropped or stray write fails with its values;
  :meth:`Start.pair` does that for every side of a verdict and lines them up in the first side's order.

Found by value, not by the graph's ops or version counters: a compiled kernel writing an input's buffer
bumps no version counter, and a write of the same value changes nothing a later call can see.
Guarantee: every tensor of the model's parameters, buffers and inputs is watched (float64 copies under
the same names); held elsewhere (an optimizer's own state dict, a global) it is not seen.
"""

from __future__ import annotations

from typing import Any

import torch

from .outputs import flatten

PREFIX = "written."


def _targets(module: Any, inputs: Any) -> list[tuple[str, torch.Tensor]]:
    """(leaf name, tensor) of every plain tensor a call of ``module`` (the model itself, not a
    torch.compile wrapper: its names would differ) on ``inputs`` can write in place."""
    found = [(n, x) for n, x in flatten(inputs, "inputs")]
    if isinstance(module, torch.nn.Module):
        found += list(module.named_parameters()) + list(module.named_buffers())
    # subclasses (jagged, DTensor) and sparse layouts: equality and copy_ mean other things there
    return [(PREFIX + n, t) for n, t in found
            if type(t) in (torch.Tensor, torch.nn.Parameter) and t.layout == torch.strided]


def unchanged(t: torch.Tensor, start: torch.Tensor) -> bool:
    """Whether ``t`` holds ``start``'s values (a NaN where ``start`` had one counts as the same): a run left it
    unwritten. minify's candidate runs judge their inputs' writes by it too."""
    if t.shape != start.shape:
        return False
    a, b = t.detach(), start.to(device=t.device, dtype=t.dtype)  # float32 -> float64 is exact
    if a.is_floating_point() or a.is_complex():
        return bool(((a == b) | (a.isnan() & b.isnan())).all())
    return bool(torch.equal(a, b))


class Start:
    """The starting values of a model's inputs, parameters and buffers (see the module docstring); the
    names any side wrote so far in :attr:`names`, in the order first seen."""

    def __init__(self, model: Any, inputs: Any) -> None:
        self.tensors = _targets(model, inputs)
        with torch.no_grad():
            self.values = {n: t.detach().clone() for n, t in self.tensors}
        self.names: dict[str, None] = {}

    def restore(self) -> None:
        """Every watched tensor back to its starting value (those a run changed)."""
        with torch.no_grad():
            for n, t in self.tensors:
                if not unchanged(t, self.values[n]):
                    t.copy_(self.values[n])

    def written(self, model: Any, inputs: Any) -> list[tuple[str, Any]]:
        """The leaves a side's run wrote: (name, its value now), for the module and inputs of that side (a
        float64 copy's, say)."""
        out = []
        for n, t in _targets(model, inputs):
            if n in self.values and not unchanged(t, self.values[n]):
                out.append((n, t.detach().clone()))
                self.names.setdefault(n)
        return out

    def complete(self, leaves: list[tuple[str, Any]] | None) -> None:
        """``leaves`` given, at their starting value, each name another side wrote and this one did not."""
        if leaves is None:
            return
        have = {n for n, _ in leaves}
        leaves += [(n, self.values[n]) for n in self.names if n not in have]

    def pair(self, *sides: list[tuple[str, Any]] | None) -> None:
        """Every side given (None: a side that did not run) completed (:meth:`complete`), then each put in the
        first side's order, leaf for leaf, so that zipping two sides pairs a leaf with its own name. The
        first side's order is kept: outputs first, then the writes as it saw them."""
        for leaves in sides:
            self.complete(leaves)
        first = next((leaves for leaves in sides if leaves is not None), None)
        if first is None:
            return
        order = {n: i for i, (n, _) in enumerate(first)}
        for leaves in sides:
            if leaves is not None and leaves is not first:
                leaves.sort(key=lambda leaf: order.get(leaf[0], len(order)))
