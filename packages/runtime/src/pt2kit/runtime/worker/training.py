"""A training step, the one way every tool runs a model "as training" (``--mode train``, a model record's
``train``): gradients cleared, forward, the loss, backward.

The loss is the sum, over the model's floating outputs that require grad, of each one's mean (in
float32 or wider, so a half-precision output's mean does not overflow): every output gets a gradient,
scaled so no output's size dominates. benchrun's train mode, kdiff's and minify's ``--mode train``
and the backward capture (:func:`pt2kit.runtime.worker.aotgraphs.training_graphs`) all use it (the rule is
``pt2kit_portable.loss_of``, which minify's joint repros carry), so a gradient
one tool reports is the gradient another reproduces. A model file that holds ``example_grads`` (``pt2kit
capture``'s, for a graph whose backward ran in the script) is differentiated by them instead, in their
layout: the compiled backward then gets the tangents the script's ``.sum().backward()`` gave it, not the
mean's (:func:`train_step`).

Which leaves get gradients is the real step's: the parameters that require grad and the inputs that
required grad where the model was captured (a captured model file makes each input with the
``requires_grad`` it had in the script; :func:`step_inputs`), never every floating input: a forward that
changes its batch in place (``x.mul_(0.5)``) is legal on a batch that does not require grad. A model with
neither (a plain function of plain tensors) has nothing to train: :func:`check_trainable` says so, exit 2.

Guarantees: ``train_step`` leaves no gradient behind on the parameters it cleared (their ``.grad`` is
what this step made); a model with no floating output that requires grad is a :class:`UsageError`
(exit 2), not a silent no-op. Not guaranteed: the user's own loss (we cannot know it); an optimizer
step (none is taken: the weights stay as they were).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pt2kit_portable import as_input, copy_inputs, is_leaf
from pt2kit_portable import loss_of as portable_loss

from ..common.errors import UsageError


def step_inputs(inputs: Any, every_floating: bool = False) -> Any:
    """Copies of ``inputs`` whose tensors require grad exactly where the model file's did (the real
    step's; ``every_floating``: every floating one, kdiff's ``--grad``), so a step's input gradients and
    writes never reach the caller's tensors. Copied by every run's rule (``pt2kit_portable.copy_inputs``:
    each in its layout, an expanded one stays expanded; inputs that shared a storage share the copy), a
    Parameter too (``parameters=True``, as capture's ``--check`` copies one; a floating one then a plain leaf).
    An input that was no leaf stays none (``pt2kit_portable.as_input``: a backend may refuse it, as in the
    script), its gradient kept in ``.grad`` as a leaf's is."""
    from ..shims.torchapi import tree_map

    def grad(x: Any) -> Any:
        if not (hasattr(x, "requires_grad") and x.is_floating_point()):
            return x
        out = as_input(x, every_floating or x.requires_grad, is_leaf(x))
        if not out.is_leaf:
            out.retain_grad()
        return out

    return tree_map(grad, copy_inputs(inputs, parameters=True))


def check_trainable(model: Any, inputs: Any, label: str) -> None:
    """A :class:`UsageError` where a training step of ``model`` has no leaf to differentiate: no
    parameter and no input that requires grad."""
    from .outputs import flatten

    params = list(getattr(model, "parameters", list)())
    if any(p.requires_grad for p in params) or \
            any(getattr(t, "requires_grad", False) for _, t in flatten(inputs)):
        return
    what = "a function" if not hasattr(model, "parameters") else "a module with no parameter that requires grad"
    raise UsageError(f"{label}: --mode train: the model is {what} and no input requires grad, so a training "
                     "step has no gradient to take (make the inputs that should be trained with requires_grad=True)")


def loss_of(out: Any) -> Any:
    """The sum of the means of ``out``'s floating leaves that require grad (pt2kit_portable's rule, the one
    a joint repro.py takes too), over every leaf :func:`~.outputs.flatten` finds."""
    from .outputs import flatten

    loss = portable_loss([t for _, t in flatten(out)])
    if loss is None:
        raise UsageError("--mode train: no floating output of the model requires grad")
    return loss


def train_step(call: Callable[[], Any], params: Iterable[Any], grads: Any = None) -> Any:
    """One training step of ``call`` (a forward): ``params``' gradients cleared, forward, :func:`loss_of`,
    backward. Returns the forward's output. ``grads`` (a model file's ``example_grads``: the gradients the
    script's backward handed the graph, one per output leaf, None where none reached one): the backward is
    fed them in place of the loss, as the script's was, in their layout (AOTAutograd then hands its compiled
    backward what it handed it in the script: its tangents' values are the script's, not the loss's)."""
    from .outputs import flatten

    params = list(params)
    for p in params:
        p.grad = None
    out = call()
    if grads is None:
        loss_of(out).backward()
        return out
    leaves = [t for _, t in flatten(out)]
    if len(leaves) != len(grads):
        raise UsageError(f"example_grads has {len(grads)} gradients for the model's {len(leaves)} outputs")
    pairs = [(t, g) for t, g in zip(leaves, grads, strict=True) if g is not None and getattr(t, "requires_grad", False)]
    if not pairs:
        raise UsageError("--mode train: no output of the model that requires grad has a gradient in example_grads")
    import torch

    from pt2kit_portable import to_float64

    # the float64 reference's outputs get the gradients widened, in their layout (to_float64)
    pairs = [(t, to_float64(g) if t.dtype == torch.float64 and g.dtype != t.dtype else g.to(t.dtype))
             for t, g in pairs]
    torch.autograd.backward([t for t, _ in pairs], [g for _, g in pairs])
    return out
