"""A compiled graph's backward, watched: AOTAutograd runs the backward a backend compiled (Inductor's, an
``aot_autograd(bw_compiler=...)``'s) as the ``backward`` of one ``torch.autograd.Function`` class per
graph, which autograd calls from ``loss.backward()``, far from the forward call that
:func:`pt2kit_capture_calls.watch` wraps. After each forward call that needs gradients, the graph's
backward nodes (between its outputs and its inputs) are noted with that call's number and inputs, and
their class's ``backward`` is wrapped once: its first failing run is the graph failing at stage "run",
``phase`` "backward", with the inputs of the forward call whose backward raised (the training step
that replays it), and the call is marked running (:mod:`pt2kit_capture_running`) for a signal. The
gradients the first call's backward got are appended to the graph's model file as ``example_grads``
(:func:`write_grads`): a tool's training step feeds them, so its compiled backward gets the script's tangents.

Runs inside the user's interpreter: stdlib + torch. Guarantees: the backward gets the same arguments and
its result or exception passes unchanged; a forward call that needs gradients costs a walk over the
autograd nodes between its outputs and inputs; the inputs of a call are held (referenced, not copied)
until its backward nodes are freed; a failure of ours is swallowed. Not guaranteed: a backward run by
compiled autograd (``torch._dynamo.compiled_autograd``), which calls no Function's ``backward``.
The two private torch APIs it needs (AOTAutograd's Function class name, a node's ``_forward_cls``) are
:func:`compiled_backward_nodes` and :func:`function_class` (pt2kit_capture_torchapi is full).
"""

from __future__ import annotations

import functools
import weakref
from typing import Any

import pt2kit_capture_manifest as manifest
import pt2kit_capture_process as process
import pt2kit_capture_running as running
import pt2kit_capture_tensors as tensors
from pt2kit_capture_code import literal

from pt2kit_portable import value_range

_NODES: Any = weakref.WeakKeyDictionary()  # a backward node -> (its graph's state, call, inputs)


def watch(out: Any, args: list[Any], state: dict[str, Any], call: int) -> None:
    """Note the backward nodes of the forward call number ``call`` (given ``args``, returning ``out``) of the
    graph whose watch state is ``state`` (its ``line``, ``gm`` and ``failed``)."""
    try:
        for node in compiled_backward_nodes(out, args):
            _wrap(function_class(node))  # each graph's Function class, once
            _NODES[node] = (state, call, args, _shapes(out))
    except Exception:
        pass


def _wrap(fcls: Any) -> None:
    original = fcls.backward
    if getattr(original, "_pt2kit_capture", False):
        return

    @functools.wraps(original)
    def backward(ctx: Any, *grads: Any) -> Any:
        seen = _NODES.get(ctx)
        if seen is None:
            return original(ctx, *grads)
        state, call, args, shapes = seen
        # the incoming gradients, taken before the call (a boxed backward empties its list): --check's, and
        # the model file's example_grads where they are the gradients of the call its example_inputs hold
        incoming = incoming_grads(grads)
        if call == 1 and not state.get("grads_written"):
            state["grads_written"] = True
            write_grads(state["line"], incoming, shapes)
        token = running.enter(state["line"], call, "backward")
        try:
            got = original(ctx, *grads)
        except Exception as e:
            if not state["backward_failed"]:
                state["backward_failed"] = True
                manifest.failed(state["line"], state["gm"], list(args), call, e, "run", phase="backward")
            raise
        finally:
            running.leave(token)
        if state["check"] is not None:  # --check: the gradients it gave, judged
            try:
                state["check"].judge(call, list(args), incoming, got)
            except Exception:
                state["check"].forward.on = False
        return got

    backward._pt2kit_capture = True
    process.replace(fcls, "backward", staticmethod(backward))


def _shapes(out: Any) -> list[Any]:
    """The shape of each leaf of a forward call's output (None for a leaf that is no tensor)."""
    import torch

    return [tuple(o.shape) if isinstance(o, torch.Tensor) else None for o in torch.utils._pytree.tree_leaves(out)]


def write_grads(line: dict[str, Any], grads: list[Any], shapes: list[Any]) -> None:
    """Append ``example_grads`` to the model file of ``line`` (written for its first call): the gradients
    the script's backward handed the graph's compiled backward, one per output leaf, each in its layout
    (an expanded gradient, ``.sum().backward()``'s, stays stride 0: make_tensor) with its values where it
    has at most ``EXACT`` elements, else drawn in their range (``_seeded``: a gradient of equal elements,
    a mean's or a sum's, comes out exact). pt2kit's training steps feed them in place of their own loss, so
    AOTAutograd hands the compiled backward the values (and, where it does not make them contiguous, the
    layout) it got in the script. Nothing where they do not pair one to one with the outputs (AOTAutograd's
    extra outputs: a mutated input, an aliased intermediate's base): the tools' loss is used then."""
    import torch

    try:
        if not line.get("file") or len(grads) != len(shapes) or any(
                (g is not None) and (not isinstance(g, torch.Tensor) or tuple(g.shape) != s) for g, s in zip(grads, shapes, strict=True)):
            return
        lines = [grad_expr(g, 2000 + i) for i, g in enumerate(grads)]
        text = ("\n# the gradients the script's backward handed this graph's compiled backward, one per output "
                "(None: none reached it): pt2kit's training steps feed them in place of their loss\n"
                "example_grads = (\n" + "".join(f"    {e},\n" for e in lines) + ")\n")
        with open(process.pdir() / line["file"], "a", encoding="utf-8") as f:
            f.write(text)
    except Exception:
        pass


EXACT = 1024  # elements: a gradient this small is written by value


def grad_expr(g: Any, seed: int) -> str:
    """The model file's expression of one incoming gradient (None: ``None``), in its layout."""
    if g is None:
        return "None"
    meta = f"{tensors.shape(g.shape)!r}, {tensors.shape(g.stride())!r}, {g.dtype}, {str(g.device)!r}"
    layout = tensors.layout_args(g)
    if g.numel() <= EXACT and not g.is_complex():
        values = literal(g.detach().cpu().reshape(-1).tolist())
        return f"make_tensor({meta}, values=torch.tensor({values}, dtype={g.dtype}){layout})"
    lo, hi = (value_range(g) if g.numel() and not g.is_complex() else None) or (0, 0)
    return f"_seeded({seed}, {meta}, False, lo={literal(lo)}, hi={literal(hi)}{layout})"


def compiled_backward_nodes(out: Any, args: Any) -> list[Any]:
    """The autograd nodes of AOTAutograd's compiled Functions that a compiled call made: walked from the
    outputs' ``grad_fn`` back to the inputs' (the nodes of earlier graphs lie past them, never entered)."""
    import torch

    stop = {id(a.grad_fn) for a in args if isinstance(a, torch.Tensor) and a.grad_fn is not None}
    todo = [o.grad_fn for o in torch.utils._pytree.tree_leaves(out) if isinstance(o, torch.Tensor) and o.grad_fn]
    seen: set[int] = set()
    found = []
    while todo and len(seen) < 256:
        node = todo.pop()
        if node is None or id(node) in seen or id(node) in stop:
            continue
        seen.add(id(node))
        if getattr(getattr(node, "_forward_cls", None), "__name__", "") == "CompiledFunction":
            found.append(node)
            continue
        todo.extend(n for n, _ in node.next_functions)
    return found


def incoming_grads(grads: tuple[Any, ...]) -> list[Any]:
    """The gradients a compiled Function's ``backward`` got, one per output of its forward: AOTAutograd's
    on torch 2.13 takes them boxed, as one list (``boxed_grads_call``) that it empties; 2.11's one by one."""
    if len(grads) == 1 and isinstance(grads[0], list):
        return list(grads[0])
    return list(grads)


def function_class(node: Any) -> Any:
    """The ``torch.autograd.Function`` class whose ``backward`` autograd calls for ``node``."""
    return node._forward_cls
