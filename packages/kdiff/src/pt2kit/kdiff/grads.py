"""The gradients kdiff compares: one forward and backward of a model, run the same way on every side
and in the backward capture that localisation searches, so a gradient it reports is the one it localises.

Two backwards, never another loss: ``--grad`` alone backpropagates ones from every output that requires
grad (each output's sum); ``--mode train`` runs :func:`pt2kit.runtime.worker.training.train_step` (the model
in train mode, gradients cleared, the loss every pt2kit tool uses: each floating output's mean,
summed). Either way the gradients are the parameters' that require grad (a frozen one has none: see
:func:`.records.frozen_parameters`) and the inputs' (``--grad``: every floating one; train: those that
required grad in the real step, :func:`pt2kit.runtime.worker.training.step_inputs`), named ``grad.<param>`` and
``grad.inputs[i]``, None where backward reached no such leaf; a jagged gradient is two leaves, its
values and offsets (:func:`~pt2kit.runtime.common.tensors.unjag`).

Guarantees: the model's parameters keep no gradient after a call (cleared before and after); the
inputs are never changed (the gradients are taken on copies).
"""

from __future__ import annotations

from typing import Any

import torch

from pt2kit.runtime.common.tensors import unjag
from pt2kit.runtime.shims.torchapi import reset_dynamo
from pt2kit.runtime.worker.outputs import flatten

from .torchapi import original_module


def _parameters(fn: Any) -> list[tuple[str, Any]]:
    module = original_module(fn)
    return [(n, p) for n, p in module.named_parameters() if p.requires_grad] \
        if isinstance(module, torch.nn.Module) else []


def step(loaded: Any, fn: Any, inputs: Any = None, *, train: bool, copied: bool = False) -> tuple[Any, list[tuple[str, Any]]]:
    """(the forward's output, the gradients) of one forward and backward of ``fn`` (see the module
    docstring) on copies of ``inputs`` (default: the model's); on ``inputs`` themselves where ``copied``
    (the caller made them with ``step_inputs``, to see what the step wrote into them)."""
    from pt2kit.runtime.worker.training import step_inputs, train_step

    inputs = loaded.inputs if inputs is None else inputs
    # a training step differentiates the inputs that required grad in the real step; --grad every floating one
    inputs = inputs if copied else step_inputs(inputs, every_floating=not train)
    params = _parameters(fn)
    with torch.enable_grad():
        if train:
            out = train_step(lambda: loaded.call(fn, inputs), [p for _, p in params])
        else:
            for _, p in params:
                p.grad = None
            out = loaded.call(fn, inputs)
            leaves = [t for _, t in flatten(out) if isinstance(t, torch.Tensor) and t.requires_grad]
            if leaves:
                torch.autograd.backward(leaves, [torch.ones_like(t) for t in leaves])
    grads = [(f"grad.{n}", p.grad.detach().clone() if p.grad is not None else None) for n, p in params]
    grads += [(f"grad.{n}", x.grad.detach().clone() if x.grad is not None else None)
              for n, x in flatten(inputs, "inputs") if isinstance(x, torch.Tensor) and x.requires_grad]
    for _, p in params:
        p.grad = None
    return out, unjag(grads)


def grads_of(loaded: Any, backend: Any, seed: int, *, train: bool = False) -> list[tuple[str, Any]]:
    """The gradients of one :func:`step` of ``backend``'s side (seeded with ``seed``)."""
    from .backends import context, prepare

    fn, inputs = prepare(loaded.model, loaded.inputs, backend)
    torch.manual_seed(seed)
    with context(backend):
        _, grads = step(loaded, fn, inputs, train=train)
    reset_dynamo()
    return grads
