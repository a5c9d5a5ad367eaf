"""What the command's processes left in the scratch dir, turned into records: one `model` per kept graph
(its model file, tensors and the process's structured trace moved into the store) and a `crash` when
the command failed.

The scratch dir holds ``p<pid>/graphs.ndjson`` (one line per graph, the child boot's manifest),
``p<pid>/exit.json`` (the exception a process died of), the model files and ``t/<sha256>.pt`` tensor
files they load, ``markers`` (a line per process the boot loaded in, hooked torch in, and per graph of a rank
--rank drops: what the parent says when no graph was kept), and ``trace/`` (torch's TORCH_TRACE logs, one per process).

Guarantees: a graph's model file finds its tensors in the store (each tensor file is checked to hash
to its name before it is moved there; a graph whose tensor does not is still written, with a warning),
and its `model` record names each of them (``captured.tensors``), so ``pt2kit gc`` given the stream keeps them;
a manifest line that does not decode (a process killed mid-write) is skipped and counted, never an
error; the records of graphs written before a crash are those of a completed write. Nothing here imports
torch. Not guaranteed: that a process's trace holds every event (a killed process's log ends where it
died).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from pt2kit.runtime.common.tensors import TENSOR_MEDIA_TYPE
from pt2kit.schema import Autocast, BlobRef, Captured, Store, TensorMeta
from pt2kit_portable import signal_name

from .boot import pt2kit_capture_contract as contract
from .job import Job

# Dynamo's placeholder of a module parameter: L_self_modules_fc_parameters_weight_, G_model_parameters_w_
_PARAMETER = re.compile(r"(?:^|_)parameters_")
_TRACE_PID = re.compile(r"^[VIWEF]\d{4} [\d:.]+ +(\d+) ")


class Input(msgspec.Struct, kw_only=True):
    name: str
    dtype: str | None = None
    shape: list[int | str] | None = None
    stride: list[int | str] | None = None
    device: str | None = None
    requires_grad: bool = False
    value: str = "other"  # saved | seeded | int | other
    type: str | None = None  # a non-tensor input's Python type (int, float, bool, NoneType)
    # the script's nn.Parameter this input was, as the model file names it (fc.weight); a manifest without
    # the field is read by Dynamo's placeholder name
    parameter: str | msgspec.UnsetType | None = msgspec.UNSET
    # a buffer of the script's module (bn.running_mean), a buffer of the model file's module: not an input
    buffer: str | None = None
    layout: str | None = None  # "jagged": a torch.nested jagged tensor
    offsets: list[int] | None = None

    @property
    def is_parameter(self) -> bool:
        if self.parameter is msgspec.UNSET:
            return bool(_PARAMETER.search(self.name)) and self.value in ("saved", "seeded")
        return bool(self.parameter)

    def numel(self) -> int:
        n = 1
        for d in self.shape or ():
            n *= d if isinstance(d, int) else 1
        return n


class Output(msgspec.Struct, kw_only=True):
    """One leaf of a graph's output as its example value says it (the boot's ``OutputLine``)."""

    dtype: str
    shape: list[int | None]


class Entry(msgspec.Struct, kw_only=True):
    """One line of a process's ``graphs.ndjson``: the boot's ``pt2kit_capture_contract.Line`` (a test checks
    the fields are its), decoded; ``part`` and ``proc`` are the parent's."""

    compile_id: str | None = None
    pid: int
    file: str | None = None  # None: the boot could not write the model file (capture_error says why)
    rank: int | None = None
    world: int | None = None
    argv: list[str] = []
    backend: str | None = None
    backend_code: str | None = None  # FILE.py:QUALNAME of a backend that is code (pt2kit_capture_backend)
    backend_in_script: bool = False
    mode: str | None = None
    options: dict[str, str] = {}
    mode_options: dict[str, str] = {}
    cache_dir: str | None = None
    dynamic: bool | None = None
    function: str | None = None
    source: str | None = None
    called_from: str | None = None
    cell: str | None = None  # (in process) "In[3]:5": the notebook cell and line the label names
    grad: bool = False
    autocast: list[Autocast] = []  # the ambient torch.autocast of the compiled call (pt2kit_portable.autocast_now)
    settings: dict[str, str] = {}
    code_settings: dict[str, str] = {}  # hooks and decompositions the script installed (pt2kit_capture_backend)
    tensors: list[str] = []
    inputs: list[Input] = []
    nodes: int | None = None
    ops: dict[str, int] = {}
    values: str = "none"
    error: str | None = None
    capture_error: str | None = None
    # False: --graphs does not keep this graph, so the boot wrote no files for it (its line counts it compiled)
    selected: bool = True
    # some of its inputs are seeded because the run's tensor files reached --max-run-bytes
    over_run_budget: bool = False
    # where error happened (compile | lowering | build | run | aoti-compile | aoti-load | aoti-run), and the
    # number of the call that raised (run stages): a line with a run stage is the graph's second line
    stage: str | None = None
    call: int | None = None
    phase: str | None = None  # a run stage's line: "forward", or "backward" (the backward of call `call` raised)
    seq: int = 0  # the line's place in its process's manifest
    of: int | None = None  # a run stage's line: the seq of its graph's line
    check: str | None = None  # --check: a line (`of`, `call`) whose file holds the first call the check failed, how
    outputs: list[Output | None] | None = None  # each output leaf's dtype and shape; None: unknown
    # not the child's: the signal that killed the process while this call ran (its p<pid>/running marker)
    signal: str | None = None
    # not the child's: why its model file does not load and run here (:mod:`.runs`), None where it does
    unrunnable: str | None = None
    # not the child's: this graph's place among its process's graphs with the same compile id, where there
    # are several (DDP's per-bucket graphs of one frame), so each has its own label
    part: int | None = None
    # not the child's either: "p<pid>:" where two kept processes share a rank (mp.spawn's workers before
    # their process group is up, or several plain processes), so their graphs' labels differ
    proc: str | None = None


class Export(msgspec.Struct, kw_only=True):
    """A torch.export.export the script called that raised (the contract's ExportLine): no graph."""

    exception: str
    message: str = ""
    source: str | None = None
    function: str | None = None
    rank: int | None = None


class Exit(msgspec.Struct, kw_only=True):
    exception: str | None = None
    message: str | None = None


@dataclass
class Process:
    """What one process of the command wrote: its graphs, in compile order, and how it ended."""

    pid: int
    dir: Path
    entries: list[Entry] = field(default_factory=list)
    broken: int = 0  # manifest lines that did not decode: cut short (a killed process)
    unreadable: list[str] = field(default_factory=list)  # whole lines capture could not read: why, each
    exit: Exit | None = None
    moved: dict[str, BlobRef] = field(default_factory=dict)  # its tensor files in the store, by scratch name
    # (graph seq, call, phase) of the compiled call it was in when it ended: killed inside it (a signal)
    running: tuple[int, int, str, str | None] | None = None
    exports: list[Export] = field(default_factory=list)  # torch.export.export calls of its that raised
    fault: str | None = None  # the fatal signal faulthandler reported killing it (SIGSEGV), whoever its parent

    @property
    def rank(self) -> int | None:
        return next((e.rank for e in [*self.entries, *self.exports] if e.rank is not None), None)


def read_processes(scratch: Path) -> list[Process]:
    """Every ``p<pid>/`` of the scratch dir, ordered by rank then pid."""
    out = []
    for d in scratch.glob("p*"):
        if not (d.is_dir() and d.name[1:].isdigit()):
            continue
        p = Process(int(d.name[1:]), d)
        manifest = d / contract.MANIFEST
        for raw in manifest.read_bytes().splitlines() if manifest.is_file() else ():
            try:
                p.entries.append(msgspec.json.decode(raw, type=Entry))
            except msgspec.ValidationError as e:  # a whole line a field of which the parent cannot read: ours
                p.unreadable.append(str(e))
            except msgspec.DecodeError:
                p.broken += 1
        _number_parts(p.entries)
        exports = d / contract.EXPORTS
        for raw in exports.read_bytes().splitlines() if exports.is_file() else ():
            try:
                p.exports.append(msgspec.json.decode(raw, type=Export))
            except (msgspec.DecodeError, msgspec.ValidationError):
                p.broken += 1
        p.fault = read_fault(d / contract.FAULT)
        running = d / contract.RUNNING_FILE
        p.running = contract.read_running(running.read_bytes()) if running.is_file() else None
        if (d / contract.EXIT).is_file():
            try:
                p.exit = msgspec.json.decode((d / contract.EXIT).read_bytes(), type=Exit)
            except (msgspec.DecodeError, msgspec.ValidationError):
                p.exit = None
        out.append(p)
    return sorted(out, key=lambda p: (p.rank or 0, p.pid))


def read_fault(path: Path) -> str | None:
    """The signal a process's ``fault`` file names ("Fatal Python error: Segmentation fault": SIGSEGV), or None."""
    try:
        head = path.read_bytes()[:200].decode("utf-8", "replace")
    except OSError:
        return None
    what = head.partition("Fatal Python error: ")[2].partition("\n")[0].strip()
    return contract.FAULTS.get(what)


@dataclass
class Markers:
    """The boot's account of the command's Python processes (its ``markers`` file): the pids it loaded in,
    hooked torch in, found torch imported past its hook in, and the rank of each graph compiled in a
    process --rank does not keep."""

    booted: set[int] = field(default_factory=set)
    hooked: set[int] = field(default_factory=set)
    unhooked: set[int] = field(default_factory=set)
    skipped: list[int | None] = field(default_factory=list)
    hook_errors: dict[int, str] = field(default_factory=dict)  # pid: the error a patch raised at torch's import


def read_markers(scratch: Path) -> Markers:
    m = Markers()
    path = scratch / contract.MARKERS
    for line in path.read_text("utf-8", "replace").splitlines() if path.is_file() else ():
        pid, _, what = line.partition(" ")
        kind, _, arg = what.partition(" ")
        if not pid.isdigit():
            continue  # a line a killed process left half written
        if kind == "skipped":
            m.skipped.append(int(arg) if arg.isdigit() else None)
        elif kind == "hookfailed":
            m.hook_errors[int(pid)] = arg
        elif kind in ("boot", "hooked", "unhooked"):
            getattr(m, "booted" if kind == "boot" else kind).add(int(pid))
    return m


def _number_parts(entries: list[Entry]) -> None:
    """Number the graphs that share a compile id (0, 1, ... in compile order: DDP's buckets, first to last);
    a failing call's line takes its graph's number."""
    graphs = [e for e in entries if e.of is None]
    seen: dict[str, int] = {}
    for e in graphs:
        seen[e.compile_id] = seen.get(e.compile_id, 0) + 1
    count: dict[str, int] = {}
    for e in graphs:
        if seen[e.compile_id] > 1:
            e.part = count.get(e.compile_id, 0)
            count[e.compile_id] = e.part + 1
    for e in entries:
        graph = graph_of(e, entries)
        if graph is not None:
            e.part = graph.part


def graph_of(entry: Entry, entries: list[Entry]) -> Entry | None:
    """The graph line a failing call's line (``of``) belongs to, among its process's lines; None for a graph's
    own line, or where the process that compiled it is another (a forked child calling its parent's graph)."""
    if entry.of is None:
        return None
    return next((e for e in entries if e.seq == entry.of and e.of is None), None)


def tag_processes(procs: list[Process]) -> None:
    """Give each graph of a process that shares its rank with another process that compiled a graph its
    process in its label (``train.py[p4242:0/0]``): two processes' graphs never share a label."""
    ranks = [p.rank for p in procs if p.entries]
    for p in procs:
        if p.entries and ranks.count(p.rank) > 1:
            for e in p.entries:
                e.proc = f"p{p.pid}:"


def pick(entries: list[Entry], graphs: tuple[str, ...]) -> list[Entry]:
    """The graphs of one process that --graphs keeps (the boot wrote files for those only)."""
    entries = [e for e in entries if e.selected]
    if graphs == ("all",):
        return entries
    if graphs == ("first",):
        return entries[:1]
    if graphs == ("failing",):  # its backend raised, its compiled code did, or --check failed a call
        return [e for e in entries if e.error or e.check]
    return [e for e in entries if e.compile_id in graphs]


def label(entry: Entry, command: list[str]) -> str:
    """``train.py[0/1]`` (``In[3]:5[0/1]`` for a notebook cell's graph); ``train.py[r1:0/1]`` for a rank other than 0; ``train.py[0/1#2]`` for the third
    of several graphs with one compile id (DDP's third bucket); ``train.py[0/1@step3]`` for the inputs of
    its third call, which raised or --check failed (a failing call whose inputs are its graph's model's is named as that)."""
    argv0 = entry.argv[0] if entry.argv else ""
    # a notebook's graph: its cell ("In[3]:5[0/0]"), where the kernel's script (ipykernel_launcher.py) says nothing
    script = entry.cell or (Path(argv0).name if argv0 not in ("", "-c", "-") else Path(command[0]).name)
    rank = f"r{entry.rank}:" if entry.rank else ""
    if entry.compile_id is None:
        return f"{script}[{entry.proc or ''}{rank}?]"
    part = "" if entry.part is None else f"#{entry.part}"
    # a failing call's inputs, where they are a model of their own: train.py[0/1@step3]
    call = f"@step{entry.call}" if entry.of is not None and entry.call is not None else ""
    return f"{script}[{entry.proc or ''}{rank}{entry.compile_id}{part}{call}]"


def trace_logs(trace_dir: Path | None) -> dict[int, Path]:
    """pid -> that process's TORCH_TRACE log (torch writes one per process, the pid in each line's prefix)."""
    logs: dict[int, Path] = {}
    for log in sorted(trace_dir.glob("dedicated_log_torch_trace_*.log")) if trace_dir and trace_dir.is_dir() else ():
        with open(log, "rb") as f:
            m = _TRACE_PID.match(f.readline(4096).decode("utf-8", "replace"))
        if m:
            logs.setdefault(int(m.group(1)), log)
    return logs


def model_fields(store: Store, job: Job, proc: Process, entry: Entry, trace: BlobRef | None,
                 warn: Any) -> dict[str, Any]:
    """The fields of the `model` record of one captured graph, its files moved into the store."""
    tensors = []
    for rel in entry.tensors:
        ref = proc.moved.get(rel)  # an earlier graph of this process moved it already (the same bytes)
        if ref is None and (proc.dir / rel).is_file():
            ref = proc.moved[rel] = store.put_file(proc.dir / rel, TENSOR_MEDIA_TYPE, ".pt")
        if ref is not None and ref.sha256 == Path(rel).stem:
            tensors.append(ref)
        elif ref is not None:
            warn(f"{label(entry, job.command)}: tensor file {rel} does not hash to its name; its model file will "
                 "not find it")
    code = store.put_file(proc.dir / entry.file, "text/x-python", ".py")
    params = [i for i in entry.inputs if i.is_parameter]
    inputs = [i for i in entry.inputs if not (i.is_parameter or i.buffer)]
    device = next((i.device for i in entry.inputs if i.device and i.device != "meta"), None) or "cpu"
    return {
        "model": label(entry, job.command),
        "file": str(store.path(code)),
        "device": device,
        "settings": dict(entry.settings),
        "inputs": [TensorMeta(name=i.name, dtype=(i.dtype or "").removeprefix("torch.") or None, shape=i.shape,
                              stride=i.stride, device=i.device, type=i.type or ("int" if i.value == "int" else None),
                              layout=i.layout, offsets=i.offsets)
                   for i in inputs],
        "parameters": sum(p.numel() for p in params),
        "trainable": sum(p.numel() for p in params if p.requires_grad),
        "frozen": sum(1 for p in params if not p.requires_grad),
        # the script trained through this graph: downstream tools run it as a training step (kdiff compares
        # gradients too, minify searches the backward), unless told --mode infer
        "train": entry.grad,
        # the script called it under torch.autocast: its model file enters it for every tool (autocast_state)
        "autocast": list(entry.autocast),
        "captured": Captured(
            command=list(job.command), compile_id=entry.compile_id or "?", code=code, backend=entry.backend,
            backend_code=entry.backend_code, backend_in_script=entry.backend_in_script,
            mode=entry.mode, options=dict(entry.options), mode_options=dict(entry.mode_options), dynamic=entry.dynamic, function=entry.function,
            source=entry.source, called_from=entry.called_from, grad=entry.grad, rank=entry.rank, pid=entry.pid, values=entry.values,
            # a failing call's error is its crash record's, not the backend's
            error=entry.error if entry.of is None else None, trace=trace, tensors=tensors,
            step=entry.call if entry.of is not None else None, check=entry.check,
            unrunnable=entry.unrunnable, code_settings=dict(entry.code_settings),
            cache_dir=entry.cache_dir),
    }


def killed_in_call(p: Process, returncode: int) -> None:
    """A process killed by a signal inside a compiled call, an AOT Inductor package's load or call (its
    ``running`` marker still set): one more line for that call of its graph, so the `crash` record names the graph (its model file holds its first call's
    inputs), the phase and the call; killed while its backend compiled a graph: that graph's line, from the
    ``compiling-<N>.json`` the boot wrote before the compile (the line it appends after never came), with
    the signal. The signal is the one faulthandler reported killing the process (a torchrun or mp.spawn
    worker, whose exit status capture never sees), else the command's: a process whose report is off (the
    script's own faulthandler) is attributed only where the command died of a signal."""
    sig = p.fault or signal_name(returncode)
    if sig is None or p.running is None:
        return
    key, call, stage, phase = p.running
    seq = max((e.seq for e in p.entries), default=-1) + 1
    if stage in contract.COMPILE_STAGES:
        try:
            pending = msgspec.json.decode((p.dir / contract.COMPILING.format(key)).read_bytes(), type=Entry)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            return
        p.entries.append(msgspec.structs.replace(pending, stage=stage, error=None, signal=sig, seq=seq))
        _number_parts(p.entries)
        return
    graph = next((e for e in p.entries if e.seq == key and e.of is None), None)
    if graph is None:
        return
    p.entries.append(msgspec.structs.replace(graph, of=graph.seq, call=call or None, phase=phase, stage=stage,
                                             error=None, check=None, signal=sig, seq=seq))
