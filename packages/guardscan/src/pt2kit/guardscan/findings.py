"""From trace events to findings: compiled frames, graph breaks, guards, recompiles. Imports no torch.

Guarantees:

* One :class:`Frame` per code object Dynamo compiled into a graph; its first compile names it
  (``0/0``), later compiles of the same frame are :class:`RecompileInfo`.
* A graph break is reported once per (reason, user line), however many compiles met it.
* A recompile is *expected* when it is automatic dynamic shapes at work: a size mismatch on one
  dimension, and the new compile's guards leave that dimension dynamic (``size=[None, ...]``).
  Such a recompile happens once per dimension and then never again; guardscan says so instead
  of calling it a problem.
* A recompile whose compile raised (the new size broke the frame: a Linear given another width) is
  never expected, and never advised to be made dynamic: the call failed, in the script as here.
* The failing guard is named as an expression (``L['x'].size()[0] == 4``, ``5 <= L['x'].size()[0]``)
  with the user's line that created it, when torch says.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from .breaks import BreakInfo, parse_break
from .callsite import CallSite, argument, call_sites
from .guards import GuardEntry, parse_guards, resolve_path, split_comment
from .tracelog import Trace

_REASON_ID = re.compile(r"^(?P<id>\d+/\d+):\s*(?P<text>.*)$", re.S)
# the name may hold quotes itself: tensor 'kwargs['input_ids']' size mismatch ...
_TENSOR = r"tensor '(?P<name>.+?)'"
_MISMATCH = [
    (re.compile(_TENSOR + r" size mismatch at index (?P<i>\d+)\. expected (?P<e>\S+), actual (?P<a>\S+)"),
     "size", "{src}.size()[{i}] == {e}", "{name}: dim {i} {e} -> {a}"),
    (re.compile(_TENSOR + r" stride mismatch at index (?P<i>\d+)\. expected (?P<e>\S+), actual (?P<a>\S+)"),
     "stride", "{src}.stride()[{i}] == {e}", "{name}: stride {i} {e} -> {a}"),
    (re.compile(_TENSOR + r" dtype mismatch\. expected (?P<e>\S+), actual (?P<a>\S+)"),
     "dtype", "{src}.dtype == {e}", "{name}: dtype {e} -> {a}"),
    (re.compile(_TENSOR + r" requires_grad mismatch\. expected requires_grad=(?P<e>\S+)"),
     "requires_grad", "{src}.requires_grad == {e}", "{name}: requires_grad changed"),
    (re.compile(_TENSOR + r" rank mismatch\. expected (?P<e>\S+), actual (?P<a>\S+)"),
     "rank", "{src}.dim() == {e}", "{name}: rank {e} -> {a}"),
    (re.compile(_TENSOR + r" dispatch key set mismatch"),
     "device", "{src} dispatch keys (device)", "{name}: device or dispatch keys changed"),
]
_SIZES = re.compile(r"size=\[(?P<sizes>[^\]]*)\]")


@dataclass
class Frame:
    compile_id: str
    frame_id: int
    function: str | None = None
    file: str | None = None
    firstline: int | None = None
    nodes: int = 0
    ops: dict[str, int] = field(default_factory=dict)
    code: str | None = None  # the graph as Dynamo printed it
    variant: str | None = None


@dataclass
class Compile:
    compile_id: str
    frame_id: int
    n: int
    guards: list[GuardEntry] = field(default_factory=list)
    guards_text: str | None = None  # the guard tree as torch printed it
    reasons: list[str] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    graph: str | None = None
    variant: str | None = None
    breaks: list[BreakInfo] = field(default_factory=list)


@dataclass
class RecompileInfo:
    compile_id: str
    frame_id: int
    function: str | None
    reason: str  # the newest cache entry's reason, as torch wrote it
    reasons: list[str]
    guard: str | None
    kind: str | None  # size | stride | dtype | requires_grad | rank | device | guard
    trigger: str | None
    expected: bool = False
    code: str | None = None
    source: str | None = None
    tensor: str | None = None
    dim: int | None = None
    failed: bool = False  # torch gave up (recompile limit): the call ran eagerly
    user_code: bool = False  # the failing guard was made by a line of the user's, not torch's
    raised: str | None = None  # the recompile's own compile raised (the new input broke the frame): why
    # a script's run (not a model file's): the user's line that called the compiled frame, and what that
    # line passed as ``tensor`` (``batch['input_ids']``), where it says so for sure (callsite.argument)
    called_from: str | None = None
    call: str | None = None  # that line's code
    argument: str | None = None


@dataclass
class BreakFinding:
    info: BreakInfo
    frame_id: int
    count: int = 1
    variant: str | None = None


@dataclass
class Findings:
    frames: list[Frame] = field(default_factory=list)
    compiles: list[Compile] = field(default_factory=list)
    breaks: list[BreakFinding] = field(default_factory=list)
    recompiles: list[RecompileInfo] = field(default_factory=list)
    limit_hits: list[str] = field(default_factory=list)  # compile ids where the recompile limit stopped Dynamo
    files: list[str] = field(default_factory=list)
    automatic_dynamic: bool = True
    recompile_limit: int | None = None
    torch_dir: str | None = None
    # the run called a model file's ``example_inputs`` (guardscan MODEL.py): advice names inputs by them;
    # False: a script's trace (captured, or --trace), whose inputs only the user's call line names
    model_file: bool = False
    # per call (None: a trace directory's whole run): [graphs, breaks] as torch._dynamo.explain counts
    # them: every graph compiled, before any de-duplication, and breaks = graphs - 1 (explain's own rule)
    totals: dict[str | None, list[int]] = field(default_factory=dict)

    @property
    def problems(self) -> int:
        return len(self.breaks) + sum(not r.expected for r in self.recompiles)


def _first_line(reason: str) -> str:
    """The line of Dynamo's failure text that says what went wrong: torch's own error where it quotes one
    ("got RuntimeError('a and b must have same reduction dim ...')"), else its first line."""
    got = re.search(r"got (\w+\(.*?\))(?:\n|$)", reason)
    return got.group(1) if got else reason.strip().splitlines()[0] if reason.strip() else "?"


_BINOPS = {"+": "add", "-": "sub", "*": "mul", "/": "truediv", "//": "floordiv", "%": "mod", "**": "pow",
           "@": "matmul", "<": "lt", ">": "gt", "<=": "le", ">=": "ge", "==": "eq", "!=": "ne"}
_ASSIGN = re.compile(r'^\s+\w+(?::\s*"[^"]*")?\s*=\s*(?P<rhs>.+?)(?:;.*)?$', re.M)
_CALL = re.compile(r"^(?P<fn>[\w.]+)\(")
_BINOP = re.compile(r"^[\w.]+ (?P<op>\*\*|//|<=|>=|==|!=|[-+*/%@<>]) ")
_MODULES = ("torch.", "operator.", "math.", "builtins.", "torch_")


def ops_of(graph_code: str) -> dict[str, int]:
    """Calls in Dynamo's printed graph: ``torch.relu(x)``, ``x.sum()`` as ``Tensor.sum``, ``a + b`` as ``operator.add``."""
    ops: dict[str, int] = {}
    for m in _ASSIGN.finditer(graph_code):
        rhs = m.group("rhs").strip()
        call, binop = _CALL.match(rhs), _BINOP.match(rhs)
        if call:
            name = call.group("fn")
            if "." in name and not name.startswith(_MODULES):
                name = "Tensor." + name.rsplit(".", 1)[1]
        elif binop:
            name = "operator." + _BINOPS[binop.group("op")]
        else:
            continue
        ops[name] = ops.get(name, 0) + 1
    return ops


def _payload_list(payload: str | None) -> list[str]:
    if not payload:
        return []
    try:
        v = json.loads(payload)
    except ValueError:
        return [payload.strip()]
    if isinstance(v, list):
        return [str(x) for x in v]
    return [str(v)]


def describe_reason(text: str) -> tuple[str | None, str | None, str | None, dict[str, str]]:
    """(guard expression, kind, input change, fields) of one recompile reason."""
    m = _REASON_ID.match(text.strip())
    body = m.group("text") if m else text.strip()
    for rx, kind, guard, change in _MISMATCH:
        mm = rx.search(body)
        if mm:
            f = mm.groupdict(default="?")
            f["src"] = source_of(f["name"])
            return guard.format(**f), kind, change.format(**f), f
    expr, _, _ = split_comment(body)
    return (expr or None), "guard", None, {}


def source_of(tensor: str) -> str:
    """A recompile reason's tensor name as a guard source: ``x`` -> ``L['x']``, ``args[0]`` -> ``L['args'][0]``,
    ``kwargs['input_ids']`` -> ``L['kwargs']['input_ids']``; a name already a source (``L['self'].w``) stays."""
    if re.match(r"^[LG]\[", tensor):
        return tensor
    m = re.match(r"^(\w+)(.*)$", tensor)
    return f"L['{m.group(1)}']{m.group(2)}" if m else tensor


def _dynamic_dims(guards: list[GuardEntry], tensor: str) -> set[int]:
    for g in guards:
        if g.kind == "TENSOR_MATCH" and g.source in (source_of(tensor), tensor):
            m = _SIZES.search(g.expr)
            if m:
                return {i for i, s in enumerate(m.group("sizes").split(",")) if s.strip() == "None"}
    return set()


def _is_user(source: str | None, torch_dir: str | None) -> bool:
    path = (source or "").rpartition(":")[0]
    if not path.startswith("/"):
        return False  # torch shortened it and no file the trace names ends so: not a file we can point at
    return not (torch_dir and path.startswith(torch_dir)) and "/site-packages/torch/" not in path


def _users_line(reasons: list[str], guard: str | None, known: list[str],
                torch_dir: str | None) -> tuple[str, str | None, bool] | None:
    """(the user's line, its code, True) from the first of the older cache entries' ``reasons`` whose guard
    reads what ``guard`` reads (``___stack0 == 0.15``: the float a graph break handed on) and names a line of
    the user's; None where none does."""
    lhs = (guard or "").split(" ", 1)[0]
    for reason in reasons:
        text = _REASON_ID.sub(r"\g<text>", reason.strip())
        expr, code, loc = split_comment(text)
        if not lhs or expr.split(" ", 1)[0] != lhs or loc is None:
            continue
        source = f"{resolve_path(loc[0], known, torch_dir)}:{loc[1]}"
        if _is_user(source, torch_dir):
            return source, code, True
    return None


def _guard_line(compiles: dict[str, Compile], reason: str, tensor: str,
                known: list[str], torch_dir: str | None) -> tuple[str | None, str | None]:
    """The user line that made the TENSOR_MATCH guard a tensor mismatch failed (from the failing entry)."""
    m = _REASON_ID.match(reason.strip())
    old = compiles.get(m.group("id")) if m else None
    for g in old.guards if old else []:
        if g.kind == "TENSOR_MATCH" and g.source == source_of(tensor) and g.file and g.line:
            return f"{resolve_path(g.file, known, torch_dir)}:{g.line}", g.code
    return None, None


def analyze(trace: Trace, *, torch_dir: str | None = None, model_file: bool = False) -> Findings:
    """What a trace shows: each compile, its frame's graph once, each distinct graph break (counted),
    every recompile with the guard that failed and the user's line, and the Dynamo settings it ran with.
    ``model_file``: the trace is of a model file's example inputs (a live run), not of a script."""
    f = Findings(files=trace.files(), torch_dir=torch_dir, model_file=model_file)
    sites = {} if model_file else call_sites(trace, torch_dir)
    compiles = _compiles(trace, f, torch_dir)
    f.compiles = list(compiles.values())
    # the files the trace names in full, so a path torch shortened can be mapped back (emit uses them too)
    f.files = f.files + [c.metrics.get("co_filename") for c in f.compiles if c.metrics.get("co_filename")]
    _dynamo_config(f)
    seen_frames: set[int] = set()
    seen_breaks: dict[tuple[str | None, int | None, str], BreakFinding] = {}
    functions: dict[int, str] = {}
    for c in f.compiles:
        fn = c.metrics.get("co_name")
        path = c.metrics.get("co_filename") or ""
        if fn and torch_dir and path.startswith(torch_dir):
            where: str | None = "the compiled model"  # torch's own wrapper frame (a compiled nn.Sequential)
        else:
            where = f"{fn} ({path}:{c.metrics.get('co_firstlineno')})" if fn else functions.get(c.frame_id)
        if where:
            functions.setdefault(c.frame_id, where)
        if c.graph is not None and c.frame_id not in seen_frames:
            seen_frames.add(c.frame_id)
            f.frames.append(Frame(
                compile_id=c.compile_id, frame_id=c.frame_id, function=fn, file=c.metrics.get("co_filename"),
                firstline=c.metrics.get("co_firstlineno"),
                nodes=int(c.metrics.get("graph_node_count") or 0), ops=ops_of(c.graph), code=c.graph,
                variant=c.variant))
        for b in c.breaks:
            key = (b.file, b.line, b.reason)
            if key in seen_breaks:
                seen_breaks[key].count += 1
            else:
                seen_breaks[key] = BreakFinding(b, c.frame_id, variant=c.variant)
        fail = c.metrics.get("fail_reason") or ""
        if "recompile limit" in fail.lower() or "cache_size_limit" in fail or "recompile_limit" in fail:
            f.limit_hits.append(c.compile_id)
        if c.n > 0 and c.reasons:
            f.recompiles.append(_recompile(c, where, compiles, f, sites.get(c.compile_id)))
    f.breaks = list(seen_breaks.values())
    for b in f.breaks:
        b.info.file = resolve_path(b.info.file, f.files, torch_dir)
    return f


def _compiles(trace: Trace, f: Findings, torch_dir: str | None) -> dict[str, Compile]:
    """Each compile the trace's events name, by compile id in the order first seen, with its graph,
    guards, recompile reasons, graph breaks and metrics; ``f.totals`` counts each variant's graphs."""
    compiles: dict[str, Compile] = {}
    for ev in trace.events:
        if ev.kind == "dynamo_output_graph":
            t = f.totals.setdefault(ev.variant, [0, 0])
            t[0] += 1
            t[1] = t[0] - 1
        cid = ev.compile_id
        if cid is None:
            continue
        if cid not in compiles:
            fid, n = (int(x) for x in cid.split("/")[:2])
            compiles[cid] = Compile(cid, fid, n, variant=ev.variant)
        c = compiles[cid]
        if ev.kind == "dynamo_output_graph":
            c.graph = ev.payload or ""
        elif ev.kind == "dynamo_cpp_guards_str" and ev.payload:
            c.guards = parse_guards(ev.payload)
            c.guards_text = ev.payload
        elif ev.artifact == "recompile_reasons":
            c.reasons = _payload_list(ev.payload)
        elif ev.artifact == "dynamo_graph_break_reason" and ev.payload:
            c.breaks.append(parse_break(ev.payload, torch_dir))
        elif ev.kind == "compilation_metrics" and isinstance(ev.body, dict):
            c.metrics = ev.body
    return compiles


def _dynamo_config(f: Findings) -> None:
    """Automatic dynamic shapes and the recompile limit, as the compiles' Dynamo settings say."""
    for c in f.compiles:
        cfg = c.metrics.get("dynamo_config")
        if isinstance(cfg, str):
            try:
                cfgd = json.loads(cfg)
                f.automatic_dynamic = bool(cfgd.get("automatic_dynamic_shapes", True))
                f.recompile_limit = cfgd.get("recompile_limit", cfgd.get("cache_size_limit", f.recompile_limit))
            except ValueError:
                pass


def _recompile(c: Compile, where: str | None, compiles: dict[str, Compile], f: Findings,
               site: CallSite | None = None) -> RecompileInfo:
    """Recompile ``c`` (its frame's function ``where``): the guard that failed, the change, the user's line
    (from the guard's own line where the reason names none), and whether automatic dynamic shapes made it."""
    known, torch_dir = f.files, f.torch_dir
    guard, kind, change, fields = describe_reason(c.reasons[0])
    _, code, loc = split_comment(_REASON_ID.sub(r"\g<text>", c.reasons[0].strip()))
    tensor = fields.get("name")
    dim = int(fields["i"]) if kind == "size" and fields.get("i", "").isdigit() else None
    rec = RecompileInfo(
        compile_id=c.compile_id, frame_id=c.frame_id, function=where, reason=c.reasons[0],
        reasons=c.reasons, guard=guard, kind=kind, trigger=c.variant or change, code=code,
        source=f"{resolve_path(loc[0], known, torch_dir)}:{loc[1]}" if loc else None, tensor=tensor, dim=dim,
        failed=c.compile_id in f.limit_hits)
    if site is not None:
        rec.called_from, rec.call = site.where, site.code
        rec.argument = argument(tensor, site.code) if site.direct and tensor else None
    fail = c.metrics.get("fail_reason") or ""
    if c.metrics.get("fail_type") and not rec.failed:  # the frame raised on the new input
        rec.raised = f"{c.metrics['fail_type']}: {_first_line(fail)}"
    rec.user_code = _is_user(rec.source, torch_dir)
    if not rec.user_code:  # torch's own line (a float specialised again): where an older entry's same guard was made
        rec.source, rec.code, rec.user_code = _users_line(c.reasons[1:], guard, known, torch_dir) or (
            rec.source, rec.code, rec.user_code)
    if rec.source is None and tensor is not None:
        rec.source, rec.code = _guard_line(compiles, c.reasons[0], tensor, known, torch_dir)
    if kind == "size" and tensor is not None and dim is not None and f.automatic_dynamic:
        earlier = [r for r in f.recompiles
                   if r.frame_id == c.frame_id and r.tensor == tensor and r.dim == dim and r.expected]
        rec.expected = rec.raised is None and not earlier and (
            not c.guards or dim in _dynamic_dims(c.guards, tensor))
    return rec
