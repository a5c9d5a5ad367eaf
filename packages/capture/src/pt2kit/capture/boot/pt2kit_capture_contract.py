"""pt2kit capture's parent-child contract: the one place that spells it.

The parent (``pt2kit.capture.drive``) starts the user's command with these environment variables; the
boot, inside every Python process of it, reads them and writes, under ``<scratch>/p<pid>/``, one JSON
line per graph to ``graphs.ndjson`` (a :class:`Line`), the model files and ``t/<sha256>.pt`` tensors
they name, and ``exit.json`` (an :class:`ExitLine`) when the process dies of an exception. The parent's
msgspec ``Entry``/``Input``/``Exit`` (``pt2kit.capture.records``) decode these lines; a test checks
that their fields are these.

Stdlib only, no package-relative import: the boot imports it by its file name from its folder (the
user's interpreter has no pt2kit, nor msgspec), the parent and the tests' stand-in child as
``pt2kit_capture_contract`` with the boot folder on their path; the lowest of the boot's layers.

Guarantees: the names and fields here are the ones the parent decodes (capture's ``test_contract.py``
checks the two agree). Not guaranteed: that every line the parent reads is whole (a process killed mid-write
leaves a broken one, which the parent skips and counts).
"""

from __future__ import annotations

from typing import Any, TypedDict

ENV_DIR = "PT2KIT_CAPTURE_DIR"  # the scratch dir; unset: the boot does nothing
ENV_VALUES = "PT2KIT_CAPTURE_VALUES"  # small | all | none
ENV_MAX_VALUE_BYTES = "PT2KIT_CAPTURE_MAX_VALUE_BYTES"  # --values small's budget per graph
ENV_RUN_BYTES = "PT2KIT_CAPTURE_MAX_RUN_BYTES"  # the run's budget of tensor-file bytes; unset or "": none
ENV_RANK = "PT2KIT_CAPTURE_RANK"  # the rank whose processes record ("all": every one)
ENV_GRAPHS = "PT2KIT_CAPTURE_GRAPHS"  # all | first | failing | compile ids, comma-separated
ENV_CHECK = "PT2KIT_CAPTURE_CHECK"  # nan | accuracy: judge every compiled call (pt2kit_capture_check); "": none

VALUES = ("small", "all", "none")
DEFAULT_VALUES = "small"
DEFAULT_MAX_VALUE_BYTES = 64 << 20
# the bytes of tensor files one run writes, all graphs and processes together, under --values small (a
# script recompiling a large input 1000 times would otherwise write 1000 budgets beside its checkpoints)
DEFAULT_MAX_RUN_BYTES = 1 << 30
PICKS = ("all", "first", "failing")
CHECKS = ("nan", "accuracy")

MANIFEST = "graphs.ndjson"  # in p<pid>/
EXIT = "exit.json"  # in p<pid>/
EXPORTS = "exports.ndjson"  # in p<pid>/: an ExportLine per torch.export.export the script called that raised
RUN_BYTES = "run-bytes"  # in the scratch dir: the run's budget spent so far
RUNNING_FILE = "running"  # in p<pid>/: the compiled call running now (pt2kit_capture_running), zeros when none
# in p<pid>/: faulthandler's report of the fatal signal that killed the process (empty while none): its exit
# status is its launcher's to see where it is not the command's own process (torchrun's, mp.spawn's worker)
FAULT = "fault"
# faulthandler's names of the signals it reports ("Fatal Python error: Segmentation fault")
FAULTS = {"Segmentation fault": "SIGSEGV", "Aborted": "SIGABRT", "Bus error": "SIGBUS",
          "Floating point exception": "SIGFPE", "Floating-point exception": "SIGFPE", "Illegal instruction": "SIGILL"}
RUNNING_SIZE = 12  # three little-endian int32: the graph line's seq + 1, the call's number, what runs
# what runs: (the crash record's stage, its phase)
RUNNING = {1: ("run", "forward"), 2: ("run", "backward"), 3: ("aoti-load", None), 4: ("aoti-run", None),
           5: ("compile", None), 6: ("aoti-compile", None)}
# a backend compiling a graph (RUNNING's compile stages): its line, as it would be appended once the backend returns,
# waits in p<pid>/compiling-<N>.json (N: the marker's first number less 1; the line has no seq yet)
COMPILE_STAGES = ("compile", "aoti-compile")
COMPILING = "compiling-{}.json"
MARKERS = "markers"  # in the scratch dir: "<pid> boot|hooked|unhooked|skipped <rank>" lines, one a write


class InputLine(TypedDict, total=False):
    """One input of a graph, in placeholder order."""

    name: str  # the placeholder
    dtype: str  # "torch.float32" (tensors)
    shape: list[int | str]  # a dim with no int by its name (a jagged tensor's ragged size: "j1")
    stride: list[int | str]
    device: str
    requires_grad: bool
    value: str  # saved | seeded | int | other
    type: str  # a non-tensor input's Python type
    parameter: str | None  # the script's nn.Parameter, as the model file names it (fc.weight)
    buffer: str | None  # a buffer of the script's module (bn.running_mean)
    layout: str  # "jagged": a torch.nested jagged tensor (the model file rebuilds it from values and offsets)
    offsets: list[int]  # a jagged tensor's offsets


class OutputLine(TypedDict):
    """One leaf of a graph's output, as its example value says it: what the model file must give."""

    dtype: str  # "torch.float32"
    shape: list[int | None]  # None: a symbolic size (a later call's may differ)


class Line(TypedDict):
    """One line of ``graphs.ndjson``: a graph the process compiled, appended once its backend returned or
    raised (a Dynamo restart drops it); one more for the graph when its compiled code first raises."""

    compile_id: str | None
    rank: int | None
    world: int | None
    pid: int
    argv: list[str]
    backend: str
    backend_code: str | None  # FILE.py:QUALNAME of a backend that is code (pt2kit_capture_backend)
    backend_in_script: bool
    mode: str | None
    options: dict[str, str]
    mode_options: dict[str, str]  # the Inductor settings mode stands for, as reprs
    cache_dir: str | None  # the folder Inductor caches in for this process (an Inductor graph's; else None)
    dynamic: bool | None
    function: str | None
    source: str | None  # "/abs/path.py:LINE"
    called_from: str | None  # the user's own line that called into the compiled code (no library's)
    # (in process: a notebook) the cell and line of source, else of called_from, as the kernel names a cell:
    # "In[3]:5"; the record's label names it where a script's name would say nothing (ipykernel_launcher.py)
    cell: str | None
    grad: bool
    # the ambient torch.autocast of the call that compiled it, one entry per enabled device type
    # (pt2kit_portable.autocast_now: {"device_type", "dtype", "cache_enabled"}); [] none
    autocast: list[dict[str, Any]]
    settings: dict[str, str]
    code_settings: dict[str, str]  # hooks and decompositions the script installed: FILE.py:QUALNAME each
    file: str | None  # the model file, relative to p<pid>/; None: not written (capture_error, or not selected)
    tensors: list[str]  # "t/<sha256>.pt"
    inputs: list[InputLine]
    nodes: int
    ops: dict[str, int]
    values: str
    error: str | None  # the user's backend raised: "Type: first line"
    capture_error: str | None  # our recording failed: "Type: first line"
    selected: bool  # False: --graphs does not keep it; no files written
    over_run_budget: bool  # some inputs seeded because the run's budget was spent
    # where error happened: compile | lowering | build (the generated code did not compile) | run (its compiled
    # code raised when called) | aoti-compile | aoti-load | aoti-run; None: no error
    stage: str | None
    call: int | None  # run, aoti-run: the number of the call that raised (1: the first)
    phase: str | None  # run: "forward", or "backward" where the backward of call `call` raised
    seq: int  # this line's place among its process's lines (0, 1, ...)
    of: int | None  # a run stage's line: the seq of its graph's line
    check: str | None  # --check: a line (with `of` and `call`) whose file holds the first call the check failed, how
    # each leaf of the graph's output as Dynamo's example value says it (None: no tensor); None: unknown
    outputs: list[OutputLine | None] | None


class ExportLine(TypedDict):
    """A ``torch.export.export`` the script called that raised: no graph exists yet (pt2kit_capture_patch_export)."""

    exception: str  # its type's name
    message: str  # its first line
    source: str  # "/abs/path.py:LINE": the script's line that called it
    function: str
    rank: int | None


class ExitLine(TypedDict):
    exception: str
    message: str


def read_running(data: bytes) -> tuple[int, int, str, str | None] | None:
    """(the graph line's seq, the call's number, the stage and phase it runs in) a ``running`` file holds,
    None when no compiled call was running (zeros, or a file cut short). For a compile stage, the first is
    the N of the ``compiling-<N>.json`` that holds the graph's line (it has no seq yet)."""
    import struct

    if len(data) < RUNNING_SIZE:
        return None
    seq, call, what = struct.unpack("<iii", data[:RUNNING_SIZE])
    return (seq - 1, call, *RUNNING.get(what, ("run", None))) if seq > 0 else None


def child_env(scratch: str, values: str, max_value_bytes: int, run_bytes: int | None, rank: int | None,
              graphs: tuple[str, ...], check: str | None = None) -> dict[str, str]:
    """The variables the parent sets for the command (every Python process of it reads them)."""
    return {ENV_DIR: scratch, ENV_VALUES: values, ENV_MAX_VALUE_BYTES: str(max_value_bytes),
            ENV_RUN_BYTES: "" if run_bytes is None else str(run_bytes), ENV_RANK: "all" if rank is None else str(rank),
            ENV_GRAPHS: ",".join(graphs), ENV_CHECK: check or ""}
