"""What a model file must write in another form than FX's codegen of Dynamo's graph, for the capture boot's
writer: the form Dynamo traces again when a tool compiles the file (flex_attention's call, autocast regions).

Runs inside the user's interpreter: stdlib + torch. Guarantees: the graph is read, never changed once
:func:`python_code` returns (a node is retargeted only while FX writes its code). Not guaranteed: a
higher-order op other than these is written as FX's codegen writes it, which Dynamo may refuse to trace
again when a tool compiles the file.
"""

from __future__ import annotations

import re
from typing import Any

import pt2kit_capture_torchapi as api

# Dynamo writes a flex_attention call as the op with its score_mod and mask_mod subgraphs and their captured
# tensors (9 arguments), but traces only the script's form (7: each mod a function of its own), so a tool
# that compiles a model file calling the op as written crashes in Dynamo ("too many values to unpack"),
# where the script compiled. The file calls it through this function, which binds each subgraph's tensors
# in a closure, as the script's score_mod captured them: Dynamo then traces the op as it did in the script.
FLEX = '''
def _flex_attention(query, key, value, score_mod, block_mask, scale, kernel_options,
                    score_mod_other_buffers=(), mask_mod_other_buffers=()):
    """torch.ops.higher_order.flex_attention called as the script called it: its score_mod and mask_mod
    functions (the graph's subgraphs, with the tensors they captured), the form Dynamo traces."""
    mask_mod = block_mask[-1]

    def score(score, b, h, m, n):
        return score_mod(score, b, h, m, n, *score_mod_other_buffers)

    def mask(b, h, m, n):
        return mask_mod(b, h, m, n, *mask_mod_other_buffers)

    return torch.ops.higher_order.flex_attention(query, key, value, score, (*block_mask[:-1], mask), scale,
                                                 kernel_options)
'''
_SPACE: dict[str, Any] = {"__name__": __name__}
exec(FLEX, _SPACE)  # the stand-in FX's codegen names in place of the op; the file defines it from FLEX
FLEX_CALL = _SPACE["_flex_attention"]


def python_code(graph: Any) -> Any:
    """FX's code of graph, each flex_attention call written as a call of ``_flex_attention`` (:data:`FLEX`), and
    each autocast region as a ``with`` block (:func:`autocast_blocks`): the op's nodes are retargeted for the
    codegen and put back at once (the backend gets the graph as is)."""
    hop = api.flex_attention_hop()
    flex = [n for n in graph.nodes if n.op == "call_function" and hop is not None and n.target is hop]
    try:
        for n in flex:
            n.target = FLEX_CALL
        code = graph.python_code("self", verbose=True)
        code.src = autocast_blocks(code.src)
        return code
    finally:
        for n in flex:
            n.target = hop


# Dynamo writes a `with torch.autocast(...)` inside the compiled code as two calls, _enter_autocast(args) and
# _exit_autocast(ctx). Dynamo 2.11 traces such a call as an in-graph function and runs it while tracing, so a
# tool that compiles the model file crashed ("Global autocast(cpu)_enabled state changed while dynamo
# tracing"). The file writes the region as the script did, a `with` block, which every Dynamo traces back
# into the same two nodes.
_ENTER = re.compile(r"(\s*)(\w+) = torch\.amp\.autocast_mode\._enter_autocast\((.*)\)")
_EXIT = re.compile(r"(\s*)\w+ = torch\.amp\.autocast_mode\._exit_autocast\((\w+)\)(?:;.*)?")


def autocast_blocks(src: str) -> str:
    """``src`` (FX's code of a forward) with each _enter_autocast ... _exit_autocast region as a ``with
    torch.amp.autocast(args):`` block; ``src`` unchanged where the regions do not nest or the context
    object is used by anything but its exit."""
    out: list[str] = []
    open_: list[tuple[str, int]] = []  # each open region: the context's name, the index of its `with` line
    for line in src.split("\n"):
        enter, leave = _ENTER.fullmatch(line), _EXIT.fullmatch(line)
        pad = "    " * len(open_)  # inside every open region, the one this line may close included
        if leave is not None:
            if not open_ or open_[-1][0] != leave.group(2):
                return src
            _, at = open_.pop()
            if all(not x.strip() or x.lstrip().startswith("#") for x in out[at + 1:]):  # a `with` needs a body
                out.append(f"{pad}{leave.group(1)}pass")
            continue
        # the context object an argument of something else (not the name of torch's function, which the first
        # context is named after: `_enter_autocast = ..._enter_autocast(...)`, and a nested region calls it again)
        if any(re.search(rf"(?<![\w.]){re.escape(name)}\b", line) for name, _ in open_):
            return src
        if enter is not None:
            out.append(f"{pad}{enter.group(1)}with torch.amp.autocast({enter.group(3)}):")
            open_.append((enter.group(2), len(out) - 1))
            continue
        out.append(pad + line if line.strip() else line)
    return src if open_ else "\n".join(out)
