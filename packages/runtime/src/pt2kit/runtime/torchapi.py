"""The private torch API that pt2kit.runtime's own modules use, each use behind one small function.

Private API moves between torch releases without notice; here is the one place to mend when it does,
and tests/test_torchapi.py runs every function on the installed torch. A wrapper more than one package
needs (reset_dynamo, tree_map, is_op_overload) lives here once and the tools call it; a tool's own
``torchapi.py`` keeps only the wrappers that tool alone uses. The code a repro embeds (minify's
harness, this package's precision.py) is torch-only by contract and exempt.

Guarantees: importing this module does not import torch (each function imports what it needs when
called); every function works on torch 2.11 and 2.13. Not guaranteed: any other torch version (a
function may raise ImportError or AttributeError there: the test file says which one broke); the
names below are pt2kit's internals, not a library API for users.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

# --config's prefixes and the torch config modules they name (private modules, public settings)
CONFIG_MODULES = {
    "inductor": "torch._inductor.config",
    "dynamo": "torch._dynamo.config",
    "functorch": "torch._functorch.config",
    "fx": "torch.fx.experimental._config",
}


def config_module(path: str) -> Any:
    """One of CONFIG_MODULES's torch config modules, imported."""
    return importlib.import_module(path)


def config_defaults(module: Any) -> dict[str, Any]:
    """Each setting of a torch config module at its declared default (``ConfigModule._config[key].default``):
    a setting an environment variable changed is not at its default."""
    return {k: entry.default for k, entry in module._config.items()}


def left_out_of_repros(module: Any, key: str) -> bool:
    """Whether torch's own repro writer leaves a setting out (``_save_config_ignore``: callables, pickling
    trouble) or its cache key does as machine-specific (``_cache_config_ignore_prefix``: trace dumps,
    compile threads, worker start method, CUTLASS folders)."""
    if key in getattr(module, "_save_config_ignore", ()):
        return True
    return any(key.startswith(p) for p in getattr(module, "_cache_config_ignore_prefix", ()))


def reset_dynamo() -> None:
    """Forget every graph Dynamo compiled (``torch._dynamo.reset``): the next call compiles afresh."""
    import torch._dynamo

    torch._dynamo.reset()


def pytree_key_children(obj: Any) -> list[tuple[str, Any]] | None:
    """The children of an object of a class registered with torch's pytree, each with the key path
    pytree names it by (``[0]``, ``['logits']``, ``.hidden``), or None for a class not registered
    (``SUPPORTED_NODES``, ``keystr``). Only consults torch when its pytree is already imported: never
    imports torch itself, and any failure means "not registered"."""
    pytree = sys.modules.get("torch.utils._pytree")
    if pytree is None:
        return None
    try:
        node = pytree.SUPPORTED_NODES.get(type(obj))
        if node is None or node.flatten_with_keys_fn is None:
            return None
        pairs, _ = node.flatten_with_keys_fn(obj)
        return [(pytree.keystr((k,)), v) for k, v in pairs]
    except Exception:
        return None


def aot_autograd(**compilers: Any) -> Any:
    """A torch.compile backend that traces Dynamo's graph through AOTAutograd into aten graphs and hands
    them to ``fw_compiler`` / ``bw_compiler``."""
    from torch._dynamo.backends.common import aot_autograd as make

    return make(**compilers)


def min_cut_partition() -> Any:
    """The partitioner Inductor splits a joint graph with (``min_cut_rematerialization_partition``): the
    backward graph it gives is the one Inductor compiles, saved values and recomputation alike."""
    from functorch.compile import min_cut_rematerialization_partition

    return min_cut_rematerialization_partition


def boxed(fn: Callable[..., Any]) -> Any:
    """``fn`` in AOTAutograd's boxed calling convention (``make_boxed_func``: one list of arguments)."""
    from functorch.compile import make_boxed_func

    return make_boxed_func(fn)


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    """``fn`` on every leaf of a pytree of lists, tuples, dicts and registered containers."""
    from torch.utils._pytree import tree_map as pytree_map

    return pytree_map(fn, tree)


def is_mutable(op: Any) -> bool:
    """Whether an aten op overload writes into one of its arguments (in-place, ``out=``)."""
    return bool(op._schema.is_mutable)


def is_hop(func: Any) -> bool:
    """Whether ``func`` (what a mode's ``__torch_dispatch__`` is handed) is a higher-order op."""
    import torch._ops

    return isinstance(func, torch._ops.HigherOrderOperator)


def hop_name(target: Any) -> str | None:
    """The name of a higher-order op (``cond``, ``while_loop``, ``flex_attention``), or None."""
    return getattr(target, "_name", None) or getattr(target, "__name__", None) if is_hop(target) else None


def is_op_overload(a: Any) -> bool:
    """Whether ``a`` is an aten op (``aten.add.Tensor``) or its packet (``aten.add``)."""
    import torch._ops

    return isinstance(a, torch._ops.OpOverload | torch._ops.OpOverloadPacket)


def dispatch_mode() -> type:
    """The base class of a mode that sees every aten op as it runs (``TorchDispatchMode``)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    return TorchDispatchMode


def generate_code(gm: Any) -> None:
    """Make FX generate a graph module's Python code now, not lazily at its first call."""
    from torch.fx._lazy_graph_module import _LazyGraphModule

    _LazyGraphModule.force_recompile(gm)
