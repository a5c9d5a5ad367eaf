"""The model file for one captured graph, and the tensor files it loads.

Runs inside the user's interpreter: stdlib + torch only. :func:`write` takes the GraphModule Dynamo
handed the backend and the inputs it was first called with, and writes under ``p<pid>/``:
``t/<sha256>.pt`` (``torch.save`` of one detached, contiguous CPU tensor, named by the file's sha256)
and ``gX_Y.py``, a self-contained model file: FX's own codegen of the graph (with the user's
``# File: train.py:12 in forward, code: ...`` line above each node), nested GraphModules (HOP
branches) as nested modules, get_attr tensors registered on the module, the script's ``nn.Parameter``
inputs as parameters of ``model`` (``fc.weight``) and its modules' buffers as buffers of ``model``
(``bn.running_mean``, dtype kept), and ``example_inputs`` for the rest.

Guarantees: the graph is read, never changed (the user's backend gets it untouched); with values
"all", every tensor's exact bytes are saved, so ``model(*example_inputs)`` with the eager backend
gives bit for bit what the graph gave in the script; each input is made with the requires_grad it had and,
where it was no leaf (an op's output on a tensor that requires grad), as no leaf again
(``pt2kit_portable.as_input``, its text embedded: a backend that looks at ``is_leaf`` sees what it saw in
the script); inputs that shared one storage in the script (``f(a, a[1])``) are views of one tensor
(:class:`Shared`); a seeded input draws from a ``torch.Generator``
seeded by its position, within the real values' [lo, hi], so two loads give the same numbers (a fake
tensor's, which has no values: within [-1, 1] for floats, 0 for integers). Memory: a kept tensor is
copied only where its bytes are not already one contiguous CPU storage, and written straight to its
file; a seeded one's range is read in chunks of ``RANGE_CHUNK`` elements (pt2kit_portable.value_range: a few
MB of scratch, whatever its size), never copied whole. Code: every string in the file that comes from the program (a path, a
function or backend name, FX's ``# File: ... code: ...`` lines, a placeholder) passes :func:`escape`
(comments) or ``repr`` (literals), and a name written as code must be an identifier: nothing a name
holds becomes a line of code. Layout: each tensor is made by ``pt2kit_portable.make_tensor`` (its text
embedded, as in every repro.py) with the script's shape, stride, storage offset and, where larger than its
layout reaches, storage size: an expanded (stride 0), overlapping or offset input stays one.

Not guaranteed: a seeded tensor's values (past ``--values small``'s budget or the run's, it is drawn in
its range: a failure that needs the exact values reproduces under ``--values all``); a graph holding an
attribute that is neither a GraphModule nor a tensor, or a name that is not a dotted identifier, is not
written (TypeError, ValueError: the line's ``capture_error`` names it).
"""

from __future__ import annotations

import inspect
import re
import textwrap
from pathlib import Path
from typing import Any

import pt2kit_capture_torchapi as api
from pt2kit_capture_code import ATTR, IMPORT, comment, escape, identifier, literal
from pt2kit_capture_hops import FLEX, FLEX_CALL, python_code
from pt2kit_capture_tensors import Tensors, dims, jagged_inputs
from pt2kit_capture_values import RunBudget, Shared

import pt2kit_portable
from pt2kit_portable import as_input, is_leaf, make_tensor

# the rules that make an input as it was (its layout, leaf or not), verbatim, as every repro.py has them: a
# model file imports nothing of pt2kit
AS_INPUT = "\n\n".join(inspect.getsource(f) for f in (make_tensor, pt2kit_portable.held, pt2kit_portable.storage_reach,
                                                          pt2kit_portable._drawn, pt2kit_portable._uniform,
                                                          as_input))

PRELUDE = '''
_HERE = Path(__file__).resolve()
# in the store: blobs/<ab>/<sha>.pt beside this file's blobs/<cd>/; in a capture's scratch dir: t/<sha>.pt
_ROOTS = (lambda sha: _HERE.parents[1] / sha[:2] / f"{sha}.pt", lambda sha: _HERE.parent / "t" / f"{sha}.pt")


def _load(sha, size, shape, stride, dtype, device, requires_grad, leaf=True, offset=0, storage=0):
    """A tensor this capture saved, its file's bytes checked against their size and sha256 (the file's
    name) before torch.load reads them (read once: no file swapped in between), in the script's layout
    (shape, stride, storage offset) on its device."""
    for where in _ROOTS:
        path = where(sha)
        if path.is_file():
            data = path.read_bytes()
            if len(data) != size or hashlib.sha256(data).hexdigest() != sha:
                raise ValueError(f"{path}: not the bytes this model file saved ({len(data)} bytes, sha256 "
                                 f"{hashlib.sha256(data).hexdigest()[:12]}..., not {size} bytes, {sha[:12]}...): "
                                 "refusing to load it")
            t = torch.load(io.BytesIO(data), weights_only=True).reshape(shape)
            t = make_tensor(shape, stride, dtype, device, values=t, offset=offset, storage=storage)
            return as_input(t, requires_grad, leaf)  # pt2kit_portable's, as make_tensor: their text below
    raise FileNotFoundError(f"{sha}.pt: not in {_HERE.parents[1]} nor {_HERE.parent / 't'}")


def _seeded(seed, shape, stride, dtype, device, requires_grad, lo=0, hi=0, leaf=True, offset=0, storage=0):
    """Values drawn in [lo, hi] (the real values' range) from a generator seeded by the input's position."""
    g = torch.Generator().manual_seed(seed)
    t = make_tensor(shape, stride, dtype, device, lo, hi, g, offset=offset, storage=storage)
    return as_input(t, requires_grad, leaf)


def _jagged(values, offsets, lengths, ragged_idx, requires_grad):
    """A torch.nested jagged tensor, as the script's: its values split at its offsets (lengths: its holes)."""
    t = torch.nested.nested_tensor_from_jagged(values, offsets, lengths, jagged_dim=ragged_idx)
    return t.requires_grad_(requires_grad) if requires_grad else t


def _view(storage, shape, stride, offset, requires_grad, leaf=True):
    """An input that shared its storage with another input in the script (a view of it, or both views of
    one tensor): a view of the one tensor that holds their storage, so a write into one shows in the other."""
    return as_input(storage.as_strided(shape, stride, offset), requires_grad, leaf)


def _put(root, path, value):
    """Register value at a dotted path ("layer.0.weight"), making the modules on the way."""
    *parents, leaf = path.split(".")
    for name in parents:
        if not hasattr(root, name):
            root.add_module(name, torch.nn.Module())
        root = getattr(root, name)
    if isinstance(value, torch.nn.Parameter):
        root.register_parameter(leaf, value)
    elif isinstance(value, torch.nn.Module):
        root.add_module(leaf, value)
    else:
        root.register_buffer(leaf, value)
'''

PRELUDE += FLEX

_BUFFER = re.compile(r"\._buffers\['[^']+'\]$")
_ACCESSOR = re.compile(r"\._(?:modules|parameters|buffers)\['([^']+)'\]|\.([A-Za-z_]\w*)")


def parameter_path(node: Any) -> str | None:
    """``L['self']._modules['fc']._parameters['weight']`` -> ``fc.weight`` (``G['proj']._parameters['weight']``
    -> ``proj.weight``); None when the source is not a
    chain of attribute and module/parameter/buffer lookups from one root."""
    name = api.source_name(node)
    return _path(name) if name else None


def buffer_path(node: Any) -> str | None:
    """The dotted path of a placeholder that is a registered buffer of the script's module (its source ends
    in ``._buffers['running_mean']``: ``fn.1.running_mean``), else None. Without a source, a placeholder
    Dynamo named for a buffer (``L_self_modules_bn_buffers_running_mean_``) keeps that name."""
    name = api.source_name(node)
    if name is None:
        return node.target if "_buffers_" in node.target else None
    return (_path(name) or node.target) if _BUFFER.search(name) else None


def _path(name: str) -> str | None:
    root = re.match(r"^[A-Z]\['([^']+)'\]", name or "")
    if not root:
        return None
    # the compiled module's own parameters are named as in it; a global's or argument's start with its name
    rest, parts = name[root.end():], ([] if root.group(1) == "self" else [root.group(1)])
    while rest:
        m = _ACCESSOR.match(rest)
        if not m:
            return None
        parts.append(m.group(1) or m.group(2))
        rest = rest[m.end():]
    return ".".join(parts) or None


def _classes(gm: Any, cls: str, tensors: Tensors, globals_: dict[str, Any], out: list[str]) -> None:
    """Append the source of ``cls`` (and first its nested GraphModules' classes) to out."""
    import torch

    code = python_code(gm.graph)
    globals_.update({k: v for k, v in code.globals.items() if k != "__builtins__"})
    init, seen = [], set()
    for node in gm.graph.nodes:
        if node.op not in ("get_attr", "call_module") or node.target in seen:
            continue
        seen.add(node.target)
        if not ATTR.fullmatch(node.target):  # FX writes such a name between quotes of its own, unescaped
            raise ValueError(f"{node.op} {escape(repr(node.target))}: not a dotted name, not written as code")
        obj = _fetch(gm, node.target)
        if isinstance(obj, torch.fx.GraphModule):
            sub = cls + "_" + re.sub(r"[^A-Za-z0-9_]", "_", node.target)
            _classes(obj, sub, tensors, globals_, out)
            init.append(f"_put(self, {node.target!r}, {sub}())")
        elif isinstance(obj, torch.Tensor):
            value, _ = tensors.expr(obj, seed=1000 + len(tensors.files) + len(init))
            if isinstance(obj, torch.nn.Parameter):
                value = f"torch.nn.Parameter({value}, requires_grad={obj.requires_grad})"
            init.append(f"_put(self, {node.target!r}, {value})")
        else:
            raise TypeError(f"{node.op} {node.target}: a {type(obj).__name__} (only GraphModules and tensors "
                            "are written)")
    body = ["def __init__(self):", "    super().__init__()", *(f"    {line}" for line in init)]
    # FX's `# File: ... code: ...` lines hold the user's paths and source (a \r, \x0b or \u2028 there would
    # end the comment for some reader): each line escaped; FX writes its strings as repr, which escaping keeps
    fx = "\n".join(escape(line) for line in code.src.strip("\n").split("\n"))
    src = "\n".join(body) + "\n\n" + fx
    out.append(f"class {cls}(torch.nn.Module):\n{textwrap.indent(src, '    ')}\n")


def _autocast_lines(autocast: list[dict[str, Any]]) -> list[str]:
    """``autocast_state = [...]``, where the script called the graph under torch.autocast: every tool's loader
    calls ``model`` under it (its ops give the dtypes they gave in the script only so); nothing otherwise."""
    if not autocast:
        return []
    entries = ", ".join("{" + ", ".join(f"{literal(k)}: {literal(a[k])}" for k in ("device_type", "dtype", "cache_enabled"))
                        + "}" for a in autocast)
    return ["# the script called this graph under torch.autocast (these arguments): pt2kit's tools call `model` under it",
            f"autocast_state = [{entries}]"]


def _fetch(gm: Any, target: str) -> Any:
    obj = gm
    for name in target.split("."):
        obj = getattr(obj, name)
    return obj


def write(gm: Any, args: list[Any], pdir: Path, stem: str, header: list[str], values: str, budget: int,
          names: dict[str, str] | None = None, run: RunBudget | None = None, autocast: list[dict[str, Any]] = (),
          ) -> tuple[str, list[str], list[dict[str, Any]]]:
    """Write ``<stem>.py`` and its tensors; (file, tensor files, the inputs' manifest entries). ``names``: a parameter's path by placeholder name, where Dynamo's sources do not say
    it (an exported program); ``run``: the run's budget, shared by every graph of every process;
    ``autocast``: the ambient torch.autocast of the call that compiled it, the file's ``autocast_state``."""
    import torch

    tensors = Tensors(pdir, values, budget, run)
    globals_: dict[str, Any] = {}
    classes: list[str] = []
    _classes(gm, "Graph", tensors, globals_, classes)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    used = {n.target for n in placeholders}
    forward, call, params, examples, inputs = [], [], [], [], []
    jagged, sizes = jagged_inputs(placeholders, args, tensors)
    shared = Shared(args, [isinstance(a, torch.Tensor) and not isinstance(a, torch.nn.Parameter) and not buffer_path(n)
                           and not api.is_fake(a) for n, a in zip(placeholders, args, strict=False)])
    for i, (node, arg) in enumerate(zip(placeholders, args, strict=False)):
        entry: dict[str, Any] = {"name": node.target, "parameter": None, "buffer": None}
        if i in jagged:
            expr = jagged[i][0]
            entry.update(jagged[i][2])
        elif isinstance(arg, torch.SymInt) and str(arg) in sizes:  # a ragged size: the jagged input's nested int
            expr, entry["value"], entry["type"] = sizes[str(arg)], "other", "SymInt"
        elif isinstance(arg, torch.Tensor):
            expr, kind = shared.expr(i, tensors) or tensors.expr(arg, seed=i)
            entry.update(dtype=str(arg.dtype), shape=dims(arg.shape), stride=dims(arg.stride()),
                         device=str(arg.device), requires_grad=bool(arg.requires_grad), value=kind,
                         **({} if is_leaf(arg) else {"leaf": False}))
            # the script's parameters and buffers are the module's state, not inputs a tool may feed (or
            # make require grad: batch_norm refuses a running_mean that does)
            kind = "parameter" if isinstance(arg, torch.nn.Parameter) else "buffer" if buffer_path(node) else None
            if kind:
                path = ((names or {}).get(node.name) or parameter_path(node) if kind == "parameter"
                        else buffer_path(node))
                path = path if path and path not in used else node.target
                used.add(path)
                entry[kind] = path
                if kind == "parameter":
                    expr = f"torch.nn.Parameter({expr}, requires_grad={arg.requires_grad})"
                params.append(f"_put(self, {literal(path)}, {expr})")
                call.append(f"self.get_{kind}({literal(path)})")
                inputs.append(entry)
                continue
        elif isinstance(arg, int | torch.SymInt) and not isinstance(arg, bool) and api.int_hint(arg) is not None:
            expr, entry["value"] = literal(api.int_hint(arg)), "int"
        else:
            plain = isinstance(arg, float | bool | str | type(None))
            expr, entry["value"] = (literal(arg) if plain else "None"), "other"
            entry["type"] = type(arg).__name__
        forward.append(identifier(node.target))
        call.append(node.target)
        examples.append(f"    {expr},  {comment(node.target)}")
        inputs.append(entry)
    if run is not None and run.spent:
        header = [*header, f"values seeded past the run's budget: this run's tensor files reached "
                  f"--max-run-bytes ({run.limit} bytes); the inputs marked seeded are drawn in their range"]
    model = ["class Model(Graph):",
             '    """The graph, the script\'s parameters and buffers its own, the rest forward\'s inputs."""',
             "", "    def __init__(self):", "        super().__init__()",
             *(f"        {p}" for p in params), "",
             f"    def forward({', '.join(['self', *forward])}):",
             f"        return super().forward({', '.join(call)})"]
    # sorted whole (a set's order changes with each process's hash seed): the same graph and values give
    # the same bytes, so the same sha256 in the store, from one run to the next; with them the modules that
    # register the ops it calls (torch.ops.prims.fma: torch._inductor.inductor_prims)
    op_imports, op_notes = api.op_imports(gm)
    header = [*header, *op_notes]
    # FX names the flex_attention stand-in as a global to import: the file defines it (PRELUDE) instead
    aliases = [f"{identifier(k)} = _flex_attention" for k in [k for k, v in globals_.items() if v is FLEX_CALL]
               if globals_.pop(k) and k != "_flex_attention"]
    imports = sorted({"import hashlib", "import io", "import torch", *api.import_block(globals_).splitlines(),
                      *op_imports}, key=lambda x: (x.startswith("from"), x))
    bad = [line for line in imports if not IMPORT.fullmatch(line)]
    if bad:  # a module path FX would import is not a dotted name (a __module__ the program set)
        raise ValueError(f"{escape(bad[0])}: not an import of a dotted name, not written as code")
    text = "\n".join([*(comment(h) for h in header), "from pathlib import Path", "", *imports, PRELUDE, *aliases,
                      "", AS_INPUT,
                      *("\n" + c for c in classes), "", *model, "", "", "model = Model()", *shared.lines,
                      *(line for _, line, _ in jagged.values()), "example_inputs = (",
                      *examples, ")", *_autocast_lines(autocast), ""])
    text = "\n".join(line.rstrip() for line in text.split("\n")) + "\n"
    name = f"{stem}.py"
    (pdir / name).write_text(text, encoding="utf-8")
    return name, tensors.files, inputs
