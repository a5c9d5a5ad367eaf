"""Which non-finite kinds (NaN, Inf) a model's eager run makes on purpose, and which reach its outputs.

Real models make Inf on purpose: an additive attention mask is ``finfo.min`` or ``-inf`` where a
token is padded or in the future, and softmax turns it into an exact 0. Such an Inf is no bug, and
a tool that calls it one is not run twice. aotiprint's rule: a NaN/Inf in a compiled kernel is a
finding when that kind reaches an output, or when the eager run of the same model never makes that
kind anywhere; otherwise it is information (a ``note``), exit 0.
"""

from __future__ import annotations

from typing import Any


def kinds_of(t: Any) -> set[str]:
    import torch

    if not isinstance(t, torch.Tensor) or not (t.is_floating_point() or t.is_complex()) or t.numel() == 0:
        return set()
    out = set()
    if bool(torch.isnan(t).any()):
        out.add("nan")
    if bool(torch.isinf(t).any()):
        out.add("inf")
    return out


def output_kinds(out: Any) -> list[str]:
    """Non-finite kinds in any tensor of a model's output (through cache objects too)."""
    from pt2kit.runtime.worker.outputs import flatten

    kinds: set[str] = set()
    for _, leaf in flatten(out):
        kinds |= kinds_of(leaf)
    return sorted(kinds)


def _masked_attention(func: Any, args: Any, kwargs: dict[str, Any]) -> bool:
    """A fused attention with a mask or causal masking: eager makes -inf inside it (Inductor, which
    decomposes it, makes the same -inf in a kernel of its own: on CUDA, GPT-2's mask)."""
    name = getattr(getattr(func, "overloadpacket", None), "__name__", "")
    if "scaled_dot_product" not in name:
        return False
    from .torchapi import op_arguments

    schema = op_arguments(func)
    named = {arg.name: (args[i] if i < len(args) else kwargs.get(arg.name, arg.default_value))
             for i, arg in enumerate(schema)}
    mask = named.get("attn_mask", named.get("attn_bias"))
    return mask is not None or bool(named.get("is_causal"))


def eager_kinds(model: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                blind: list[str] | None = None) -> list[str]:
    """Non-finite kinds any op of an eager run produces (its intermediates included, inside
    higher-order ops' branches, loop bodies and score_mods too). ``blind``, when given, receives the
    higher-order ops run whole, their insides unseen (only their outputs were looked at)."""
    import torch

    from pt2kit.runtime.worker.hops import HopAwareMode, hop_name

    from .torchapi import tree_leaves

    seen: set[str] = set()

    def look(out: Any) -> Any:
        if len(seen) < 2:
            for leaf in tree_leaves(out):
                seen.update(kinds_of(leaf))
        return out

    class Watch(HopAwareMode):
        def watch(self, func: Any, a: tuple[Any, ...], kw: dict[str, Any]) -> Any:
            if _masked_attention(func, a, kw):
                seen.add("inf")  # masked scores are -inf inside the fused kernel, where no op shows them
            return look(func(*a, **kw))

        def hop_out(self, func: Any, a: tuple[Any, ...], kw: dict[str, Any], out: Any) -> Any:
            if hop_name(func) == "flex_attention":
                seen.add("inf")  # its block mask makes -inf scores inside the op, as a fused SDPA's does
            return look(out)

    watch = Watch()
    with torch.no_grad(), watch:
        model(*args, **kwargs)
    if blind is not None:
        blind.extend(watch.blind)
    return sorted(seen)
