"""The record kinds of the pt2kit stream, version 1.

Guarantees (the contract every tool keeps):

* A record is one JSON object on one line. ``kind`` tags it, ``v`` is the schema *major* it was
  written with and ``run`` the id of the run (one tool invocation) that wrote it. All three are
  required, so a line means the same after ``grep``, ``jq`` or ``cat``.
* Adding an optional field (one with a default) keeps the major. Removing or retyping a field, or
  making an optional one required, bumps it, and ``migrations.py`` gains a step from the old major.
* Readers ignore fields they do not know (``forbid_unknown_fields`` is never set) and forward
  kinds they do not know untouched, so an older tool passes a newer tool's records along.
* Fields with defaults are left out of the encoded line (``omit_defaults``); that is why ``v`` and
  ``run`` have none.
* Floats that may be non-finite (NaN, ±Inf: worst values, relative errors) are typed ``Num`` and
  written as the strings ``"nan"``, ``"inf"``, ``"-inf"``, because JSON has no such numbers and
  msgspec would write ``null``. Use :func:`num` to build them and :func:`as_float` to read them.
* Large payloads never sit in a record: a :class:`BlobRef` points into the store.
"""

from __future__ import annotations

import math
from typing import Literal, Union

import msgspec

SCHEMA_MAJOR = 1

Num = Union[float, Literal["nan", "inf", "-inf"]]
"""A float that may be non-finite: finite values as numbers, others as "nan", "inf", "-inf" (no other
string is a valid ``Num``: a reader stops at ``FILE:LINE`` on one)."""


def num(x: float | int | None) -> Num | None:
    """Encode a float for a ``Num`` field (keeps NaN and ±Inf, which JSON cannot carry)."""
    if x is None:
        return None
    x = float(x)
    if math.isfinite(x):
        return x
    if math.isnan(x):
        return "nan"
    return "inf" if x > 0 else "-inf"


def as_float(x: Num | None) -> float | None:
    """Decode a ``Num`` field back to a Python float."""
    if x is None or isinstance(x, float | int):
        return x
    return float(x)


class _Struct(msgspec.Struct, omit_defaults=True, kw_only=True):
    """Base for the value types nested inside records."""


class BlobRef(_Struct):
    """A file in the content-addressed store. ``path`` is relative to the store root."""

    path: str
    sha256: str
    size: int
    media_type: str


class TensorMeta(_Struct):
    """What a tensor looks like, without its values."""

    name: str
    dtype: str | None = None
    shape: list[int | str] | None = None  # a symbolic size is written as its expression, e.g. "s0"
    stride: list[int | str] | None = None
    device: str | None = None
    type: str | None = None  # the Python type, for leaves that are not tensors
    layout: str | None = None  # (1.8) "jagged": a torch.nested jagged tensor; its ragged size is "j1" in shape
    offsets: list[int] | None = None  # (1.8) a jagged tensor's offsets into its values() along the ragged size


class Stats(_Struct):
    """Summary statistics of one tensor, computed in one pass."""

    numel: int
    mean: Num | None = None
    min: Num | None = None
    max: Num | None = None
    nan: int = 0
    inf: int = 0
    of: str | None = None  # (1.8) "magnitude": the stats are of |x|, a complex tensor's


class Metrics(_Struct):
    """How far a tested tensor is from its reference."""

    numel: int
    max_abs: Num
    mean_abs: Num
    max_rel: Num
    rmse: Num
    mismatches: int
    mismatch_share: float
    nan_ref: int = 0
    nan_test: int = 0
    inf_ref: int = 0
    inf_test: int = 0


class Latency(_Struct):
    """Seconds per call over ``n`` timed repetitions."""

    n: int
    mean: float
    median: float
    min: float
    max: float
    std: float = 0.0
    p90: float | None = None
    p10: float | None = None  # (1.6)
    iqr: float | None = None  # (1.6) p75 - p25


class Accuracy(_Struct):
    """(1.3) PyTorch's accuracy rule (``torch._dynamo.utils.same``) for one leaf.

    The leaf passes when it passes ``assert_close`` against the reference, or when it is no further
    from a float64 run of the same model than the eager baseline is:
    ``rmse(test, fp64) <= multiplier * rmse(baseline, fp64) + tol / 10``.
    """

    passed: bool
    rmse_test: Num  # rmse(test, fp64)
    rmse_baseline: Num  # rmse(baseline, fp64): the rounding noise eager itself has
    multiplier: float
    tol: float
    baseline: str = "eager"


class Tie(_Struct):
    """(1.3) A data-dependent selection (sort, top-k, argmax, NMS...) that met a near-tie in the eager run."""

    op: str  # aten.topk.default
    margin: float  # smallest gap between selected and unselected values, relative to their scale
    source: str | None = None  # the user's (or library's) file:line
    code: str | None = None


class Precision(_Struct):
    """(1.8) Under ``--precision as-configured``: the reduced-precision float32 modes each side ran with
    ("TF32 matmul", "TF32 cuDNN", "BF16 CPU matmul"), and, for a leaf that failed so, whether it passes
    under PyTorch's accuracy-harness settings (then ``rule`` is "precision" and ``passed`` true)."""

    ref: list[str] = []
    test: list[str] = []
    settings: list[str] = []  # every setting that was not the harness's, "key=value"
    harness_passed: bool | None = None  # the failing leaf judged again under the harness's settings
    op: str | None = None  # with the modes on, the first diverging aten op
    source: str | None = None  # its file:line


class Autocast(_Struct):
    """(1.31) One device type's ``torch.autocast`` a model is called under: the arguments that enter it."""

    device_type: str  # "cpu", "cuda"
    dtype: str  # "bfloat16", "float16"
    cache_enabled: bool = True


class Record(msgspec.Struct, tag_field="kind", omit_defaults=True, kw_only=True):
    """Fields every record carries."""

    v: int
    run: str


class Header(Record, tag="header", kw_only=True):
    """Starts the part of a stream that one tool invocation wrote."""

    tool: str
    tool_version: str
    argv: list[str]
    time: str  # ISO 8601, UTC
    host: str
    python: str
    store: str  # absolute path of the store directory blobs of this run live in
    torch: str | None = None
    device: str | None = None
    schema: str | None = None  # version of pt2kit-schema that wrote the run
    # (1.7) the --config KEY=VALUE this run gave on its command line, over the models it read from a
    # stream: the records it wrote were seen under them (a downstream minify runs the model so)
    config: dict[str, str] = {}
    # (1.8) the precision settings its accuracy verdicts ran under: "harness" (PyTorch's accuracy
    # harness: TF32 off, deterministic cuDNN, fallback_random...) or "as-configured" (the model's own)
    precision: str | None = None
    # (1.23) pt2kit capture: the structured trace (TORCH_TRACE log) of each process of the script that
    # compiled no graph the stream keeps (a model record carries the others' as captured.trace), so
    # guardscan can still say why nothing was compiled (an LSTM Dynamo skips, a DDP wrapper, a break)
    traces: list[BlobRef] = []


class Captured(_Struct):
    """(1.11) Where a `model` record written by ``pt2kit capture`` came from: one graph torch.compile handed
    its backend inside the user's own, unmodified program."""

    command: list[str]  # the user's command, as given after `pt2kit capture --`
    compile_id: str  # Dynamo's compile id: "0/1" is frame 0's second compile (a recompile)
    code: BlobRef  # the model file capture wrote, in the store (Model.file is where it lies on this machine)
    backend: str | None = None  # what the user asked for: "inductor", "aot_eager", a custom backend's name
    # (1.14) where the backend lives when the script handed torch.compile code (a function, an aot_autograd
    # object), not a name torch registers: "FILE.py:QUALNAME", what `--backend` takes to hand it over (a
    # stream never makes a tool import code); a qualname with "<" (a closure, a lambda, an object bound to
    # no module-level name) is not reachable by name
    backend_code: str | None = None
    backend_in_script: bool = False  # (1.14) that FILE.py is the script itself (its __main__)
    mode: str | None = None  # torch.compile(mode=...): "max-autotune", "reduce-overhead"...
    options: dict[str, str] = {}  # torch.compile(options=...), each value as its repr
    # (1.16) the Inductor settings `mode` stands for (torch._inductor.list_mode_options(mode, dynamic), read
    # in the script's process), each value as its repr: what a tool applies so the mode travels
    mode_options: dict[str, str] = {}
    dynamic: bool | None = None  # torch.compile(dynamic=...)
    function: str | None = None  # the compiled frame's user function, e.g. "forward"
    source: str | None = None  # that function's file:line
    # (1.22) the user's own line that called into the compiled code, past torch and installed libraries
    # (a Hugging Face model's function is its library wrapper; this is the script's `model(**batch)`)
    called_from: str | None = None
    grad: bool = False  # the graph needs gradients: it ran under grad mode with an input requiring grad
    rank: int | None = None  # the torchrun / torch.distributed rank of the process that compiled it
    pid: int | None = None  # that process
    values: str = "none"  # small | all | none: whether the model file's inputs hold the script's real values
    error: str | None = None  # the user's backend raised on this graph: its exception line
    trace: BlobRef | None = None  # that process's structured trace (TORCH_TRACE log): what guardscan reads
    # (1.13) every tensor file the model file (`code`) loads: the record names all the blobs it needs, so
    # `pt2kit gc` given the stream keeps them (a seeded input has none)
    tensors: list[BlobRef] = []
    # (1.19) the model file holds the inputs (weights included) of this graph's call number `step` (1 is its
    # first call in the process): the first call that raised (its crash record says how) or, under
    # `pt2kit capture --check nan|accuracy`, the first the check failed, and `check` says how ("nan: ..."
    # or "accuracy: ..."); None: the values the graph was compiled with (its first call)
    step: int | None = None
    check: str | None = None
    # (1.20) why the model file does not load and run here, one line (capture loaded and ran each model file
    # eagerly after the script ended: an op it calls that no import registers, a load error, outputs of
    # other shapes or dtypes than the graph's); None: it ran (or was not checked). A tool handed it says
    # "cannot judge" instead of blaming the model
    unrunnable: str | None = None
    # (1.29) code the script installed into the compiler, each as where it lives ("FILE.py:QUALNAME"): an
    # Inductor hook setting ("inductor.post_grad_custom_post_pass"), a decomposition in Inductor's table
    # ("decomposition:aten.silu.default"). A stream never makes a tool import it: the tool names it and the
    # flag that hands it over (--config KEY=FILE.py:NAME; a decomposition, --backend FILE.py:NAME of a
    # backend that installs it) and exits 2
    code_settings: dict[str, str] = {}
    # (1.37) the folder Inductor cached in for the script's process (TORCHINDUCTOR_CACHE_DIR, else torch's
    # default under the temporary folder): its FX graphs, kernels and max-autotune's benchmark results, which a
    # tool compiling the graph again reads back where it compiles in the same folder; None: not known
    cache_dir: str | None = None


class Model(Record, tag="model", kw_only=True):
    """How to load and run a model again, so a downstream tool can reproduce it."""

    model: str  # a label: FILE.py or FILE.py:NAME, what other records name in their `model`
    file: str  # absolute path
    entry: str | None = None  # NAME of a zero-argument factory, when FILE.py:NAME was given
    device: str = "cpu"
    config: dict[str, str] = {}  # --config KEY=VALUE as given
    # (1.8) what the worker had once the model file ran: every non-default dynamo, inductor, functorch
    # and fx setting, whoever set it (the file at module level, the environment, --config), as
    # --config takes it ({"inductor.cpp.inject_relu_bug_TESTING_ONLY": "accuracy"}); minify starts from it
    settings: dict[str, str] = {}
    inputs: list[TensorMeta] = []
    kwargs: bool = False  # example_inputs was a dict of keyword args
    parameters: int = 0
    trainable: int = 0
    frozen: int = 0  # (1.8) parameter tensors with requires_grad=False: no gradient to compare
    # (1.11) run it as a training step: gradients cleared, forward, loss (the sum of each floating output's
    # mean), backward; what `--mode train` gives (kdiff, minify, benchrun) and what a downstream tool keeps
    train: bool = False
    captured: Captured | None = None  # (1.11) the graph came from `pt2kit capture`: where, and how compiled
    # (1.31) the torch.autocast every tool calls the model under, each enabled device type's: what the model
    # file's `autocast_state` says (pt2kit capture writes the one the script's compiled call ran under, `with
    # torch.autocast("cuda", dtype=torch.bfloat16): loss = model(x)`); [] none
    autocast: list[Autocast] = []


class Graph(Record, tag="graph", kw_only=True):
    """One captured graph: Dynamo FX, AOT forward/backward aten, or Inductor's generated code."""

    model: str | None = None
    phase: str  # dynamo | forward | backward | inductor | pre_functional
    index: int = 0  # which graph of this phase (graph breaks make several)
    nodes: int = 0
    ops: dict[str, int] = {}  # op (e.g. aten.addmm.default) -> count
    code: BlobRef | None = None
    kernels: list[str] = []  # inductor: names of generated kernels
    blobs: list[BlobRef] = []  # inductor: each kernel's source, in `kernels` order
    frame: str | None = None  # dynamo: the compile id that made it, e.g. 0/0
    function: str | None = None  # dynamo: the compiled function, e.g. forward (/work/m.py:6)


class Violation(Record, tag="violation", kw_only=True):
    """One finding against an accelerator's capability profile."""

    model: str | None = None
    constraint: str
    message: str
    phase: str
    graph: int = 0
    node: str | None = None
    op: str | None = None  # aten.addmm.default
    dtype: str | None = None
    shape: list[int | str] | None = None
    source: str | None = None  # the user's file:line
    code: str | None = None  # that line's text
    module: str | None = None  # nn.Module path, e.g. layers.0.conv
    count: int = 1  # (1.3) how many nodes of this graph share this finding (op, tensor and message); the first is named
    # (1.9) the subgraph of a higher-order op the node lives in, from the graph down, e.g. "cond → false_graph_0"
    # or "while_loop → while_loop_body_graph_0"; None for a node of the graph itself
    subgraph: str | None = None


class Diff(Record, tag="diff", kw_only=True):
    """One output (or gradient) leaf compared against a reference."""

    model: str | None = None
    output: str  # pytree key path, e.g. out[0] or out['logits']
    ref: str
    test: str
    dtype: str | None = None
    shape: list[int] | None = None
    metrics: Metrics | None = None
    atol: float
    rtol: float
    equal_nan: bool = False
    passed: bool
    worst_index: list[int] | None = None
    worst_ref: Num | None = None
    worst_test: Num | None = None
    heatmap: BlobRef | None = None
    note: str | None = None  # e.g. shape or dtype mismatch
    rule: str | None = None  # (1.3) what decided `passed`: "fp64" (PyTorch's accuracy rule) | "close" | "tie"
    # | "precision" (1.8: it fails only with the model's own precision modes on) | "undefined" (1.36: its values
    # are uninitialised memory, torch.empty's: only its shape and dtype were compared)
    close: bool | None = None  # (1.3) the assert_close verdict against the reference, whatever the rule
    accuracy: Accuracy | None = None  # (1.3) the float64 check, where it ran
    tie: Tie | None = None  # (1.3) the near-tie that explains a difference, when one does
    precision: Precision | None = None  # (1.8) the precision modes, under --precision as-configured
    # (1.35) the reference raised this (its exception line) and the test returned: there are no values to compare,
    # the failure is the error the test side does not raise ("eager raises, compiled returns")
    raised: str | None = None


class Divergence(Record, tag="divergence", kw_only=True):
    """The first aten node whose compiled value leaves tolerance against the reference."""

    model: str | None = None
    output: str | None = None
    node: str
    op: str | None = None
    index: int | None = None  # position of the node in the graph
    source: str | None = None
    code: str | None = None
    module: str | None = None
    metrics: Metrics | None = None
    ref_stats: Stats | None = None
    test_stats: Stats | None = None
    compiles: int = 0  # how many compiles the search took
    phase: str | None = None  # (1.3) forward | backward: the graph the node belongs to
    # (1.9) the subgraph of a higher-order op the node lives in, from the graph down, e.g.
    # "cond → true_graph_0"; None for a node of the graph itself
    subgraph: str | None = None
    # (1.12) phase "backward": the forward op the node differentiates (AOTAutograd's seq_nr link), e.g.
    # "aten.relu.default" for a threshold_backward; source/code/module are then that forward op's
    forward_op: str | None = None


class GraphBreak(Record, tag="graph_break", kw_only=True):
    model: str | None = None
    reason: str
    gb_id: str | None = None  # GB0000..., torch's stable graph break id
    call: str | None = None
    source: str | None = None
    code: str | None = None
    graph: int | None = None
    hints: list[str] = []  # torch's own hints for this break
    explanation: str | None = None
    count: int = 1  # how many compiles met it


class Guard(Record, tag="guard", kw_only=True):
    model: str | None = None
    frame: str  # compile id or function name
    guard: str  # guard kind, e.g. TENSOR_MATCH
    expr: str | None = None  # L['x'].size()[0] == 8
    source: str | None = None  # what it guards, e.g. L['x']
    user_source: str | None = None
    code: str | None = None  # the user's line that made the guard
    count: int = 1  # (1.3) guards this record stands for: guardscan writes one per (kind, input) of a compile
    user: bool = False  # (1.3) made by a line outside torch and installed libraries
    full: BlobRef | None = None  # (1.3) the compile's whole guard tree, as torch printed it


class Recompile(Record, tag="recompile", kw_only=True):
    model: str | None = None
    frame: str
    reason: str
    guard: str | None = None
    trigger: str | None = None  # the input change that caused it
    expected: bool = False  # e.g. automatic dynamic shapes' one recompile
    function: str | None = None  # the recompiled function, e.g. forward (/work/m.py:6)
    source: str | None = None  # the user's file:line that made the failing guard
    code: str | None = None  # that line's text
    reasons: list[str] = []  # every cache entry's reason, newest first (`reason` is the first)
    compiled: bool = True  # False: the recompile limit stopped Dynamo and the call ran eagerly


class Variant(Record, tag="variant", kw_only=True):
    """One call of a model with changed inputs, and whether it reused a compiled graph."""

    model: str | None = None
    name: str  # the changes, e.g. "x: dim 0 4 -> 8", or "example inputs"
    changes: list[str] = []
    outcome: str  # compiled | reused | recompiled | eager (recompile limit) | unknown | invalid | unchanged
    frames: list[str] = []  # compile ids made during the call
    error: str | None = None  # invalid: why the model itself rejected the inputs
    graphs: int | None = None  # (1.3) graphs compiled during the call, counted as torch._dynamo.explain counts them
    breaks: int | None = None  # (1.3) graph breaks met during the call, counted as explain counts them


class Advice(Record, tag="advice", kw_only=True):
    model: str | None = None
    rule: str
    message: str
    change: str | None = None  # the concrete change, as code
    source: str | None = None


class KernelArg(_Struct):
    name: str
    numel: int | None = None
    dtype: str | None = None
    shape: list[int] | None = None
    stride: list[int] | None = None
    device: str | None = None
    stats: Stats | None = None
    uninitialised: bool = False  # an output buffer before launch: its values mean nothing
    blob: BlobRef | None = None


class Kernel(Record, tag="kernel", kw_only=True):
    model: str | None = None
    name: str
    launch: int  # launch order, from 0
    when: str = "after"  # before | after
    args: list[KernelArg] = []
    nodes: list[str] = []  # FX/aten nodes the kernel fused, when provenance is known
    sources: list[str] = []  # the user's file:line of those nodes
    code: list[str] = []  # (1.2) the text of those lines
    finding: str | None = None  # (1.2) set on the launch a finding names: "nan" | "inf" | "nan+inf"
    note: str | None = None  # (1.3) non-finite values that are no finding (an additive attention mask), and why


class Crash(Record, tag="crash", kw_only=True):
    """The model, the compiler or a loaded package killed the process doing the work."""

    model: str | None = None
    # load | capture | compile | lowering | build | export | run | aoti-compile | aoti-load | aoti-run | ...
    stage: str
    signal: str | None = None  # SIGSEGV
    exitcode: int | None = None
    exception: str | None = None  # exception type, when Python raised
    message: str | None = None
    last_kernel: str | None = None
    stderr_tail: str = ""
    backend: str | None = None  # (1.6) benchrun: the backend of the job that crashed
    wall_s: float | None = None  # (1.6) benchrun: how long the job ran before it died
    # (1.18) capture: the call of the model's compiled code that raised (1 is its first call in the process;
    # stage run or aoti-run); the model record holds that call's inputs
    step: int | None = None
    # (1.28) capture: where in the step that call failed: "forward" (the compiled call raised or was killed)
    # or "backward" (the compiled backward of that call's forward, run from loss.backward())
    phase: str | None = None


class Repro(Record, tag="repro", kw_only=True):
    """A standalone repro.py of one failure, made by minify, and how often it reproduced."""

    model: str | None = None
    path: BlobRef
    # accuracy | compile-error | crash | nan | violation | missing-error (1.35: eager raises, the compiled side returns)
    failure: str
    nodes_before: int
    nodes_after: int
    reproduces: bool
    signature: str | None = None  # (1.5) what "still fails" meant: exception type and message, signal, ...
    graph: int | None = None  # (1.5) which of the model's graphs
    subgraph: str | None = None  # (1.9) the higher-order op's subgraph of that graph the repro is cut from
    # (1.12) which graph the repro is cut from: "forward" (what inference runs), "backward" (AOTAutograd's
    # backward graph, the forward's saved values as its inputs) or "joint" (forward and backward together)
    phase: str | None = None
    ops: list[str] = []  # (1.5) the repro's aten ops
    inputs_before: int | None = None  # (1.5) input elements
    inputs_after: int | None = None  # (1.5)
    config: dict[str, str] = {}  # (1.5) the settings the failure needs
    backend: str | None = None  # (1.5)
    queries: int = 0  # (1.5) candidates compiled and judged
    wall_s: float | None = None  # (1.5)
    reproduced: int = 0  # (1.5) runs of repro.py, in fresh processes, that failed the same way
    runs: int = 0  # (1.5)
    output: str | None = None  # (1.5) where -o wrote it


class BisectRun(_Struct):
    """(1.27) One compile of a repro's graph under one setting of the bisection, judged as minify judged
    the repro (the failure's signature, or what the run showed instead)."""

    setting: str  # "TORCH_BISECT_BACKEND=inductor TORCH_BISECT_SUBSYSTEM=lowerings TORCH_BISECT_MAX=0", ...
    fails: bool  # failed the way the repro fails
    signature: str | None = None  # what it showed: the failure's signature, "passes", another error


class Bisect(Record, tag="bisect", kw_only=True):
    """(1.27) Which stage of the compiler breaks a repro minify made, found with PyTorch's own switches
    (``torch._inductor.compiler_bisector``: backends eager, aot_eager, aot_eager_decomp_partition,
    inductor; then a subsystem's applications, or one config change), and checked: ``off`` is the run
    with the culprit switched off (it must pass), ``on`` the run with it on (it must fail)."""

    model: str | None = None
    graph: int | None = None  # the repro's graph (its ``repro`` record's)
    phase: str | None = None  # the repro's phase: forward | backward | joint
    tested: str | None = None  # the backend the repro compiles with (inductor, FILE.py:NAME, ...)
    # the first backend of eager -> aot_eager -> aot_eager_decomp_partition -> inductor that fails; None: none told
    backend: str | None = None
    chain: dict[str, bool] = {}  # each backend tried: whether it fails as the repro does
    subsystem: str | None = None  # lowerings, post_grad_passes, decomposition, ... (torch's names)
    application: int | None = None  # which application of the subsystem (0-based: TORCH_BISECT_MAX's count)
    applications: int | None = None  # how many the repro's compile makes
    what: str | None = None  # that application's debug info: the lowered node, the pass's name, the decomposed op
    config: str | None = None  # the one config change that makes the failure go away ("module.key=value")
    env: dict[str, str] = {}  # TORCH_BISECT_* variables that switch the culprit on alone, PyTorch's own way
    found: bool = False  # a stage was told and both runs below agree with it
    verdict: str = ""  # one line: what was found, or why no stage can be told
    off: BisectRun | None = None  # faithfulness: the run with the culprit switched off (passes)
    on: BisectRun | None = None  # the run with it switched on (fails)
    steps: int = 0  # compiles the bisection ran
    wall_s: float | None = None


class CompileTime(_Struct):
    """(1.6) One compile, in seconds: the first compiled call's wall time and, where torch's compile
    metrics exist, its parts (Dynamo's tracing, AOTAutograd, Inductor, and the first run itself)."""

    total_s: float  # wall time of the first call of the compiled model, compile included
    dynamo_s: float | None = None  # tracing, guards, bytecode: the frame's compile time less the backend's
    aot_s: float | None = None  # AOTAutograd: the backend's compile time less Inductor's
    inductor_s: float | None = None
    first_run_s: float | None = None  # the first call's wall time less the whole compile
    cache_hits: int | None = None  # FX graph / AOTAutograd cache hits (warm runs should have some)
    cache_misses: int | None = None


class Memory(_Struct):
    """(1.6) Peak device memory in bytes: cold = the first (compiling) call, warm = steady-state calls."""

    cold_allocated: int | None = None
    cold_reserved: int | None = None
    warm_allocated: int | None = None
    warm_reserved: int | None = None


class KernelTime(_Struct):
    """(1.6) One kernel's time per iteration, from torch.profiler."""

    name: str
    calls: float  # launches per iteration
    us: float  # microseconds per iteration, all its launches together
    share: float  # of the iteration's kernel time, 0..1


class Bench(Record, tag="bench", kw_only=True):
    """One (model, backend) timed against eager in one process: latency, compile, memory, counts, accuracy."""

    model: str | None = None
    backend: str
    device: str | None = None
    compile_s: float | None = None  # the cold compile's total (compile_cold.total_s)
    latency: Latency | None = None  # the backend's seconds per call
    peak_mem_bytes: int | None = None  # warm peak allocated of the backend
    graphs: int | None = None
    kernels: int | None = None  # kernels Inductor generated
    mode: str | None = None  # (1.6) infer | train (benchrun always writes it)
    dtype: str | None = None  # (1.6) the --dtype the model ran in; None: as the file made it
    timer: str | None = None  # (1.6) events | cudagraph | wall
    eager: Latency | None = None  # (1.6) eager's seconds per call, interleaved with the backend's
    speedup: float | None = None  # (1.6) median eager / median backend
    speedup_lo: float | None = None  # (1.6) bootstrap 95% interval of the speedup
    speedup_hi: float | None = None  # (1.6)
    compile_cold: CompileTime | None = None  # (1.6) with an empty Inductor cache
    compile_warm: CompileTime | None = None  # (1.6) a fresh process with the cold run's caches
    memory: Memory | None = None  # (1.6) the backend's peaks (CUDA only)
    eager_memory: Memory | None = None  # (1.6)
    compression: float | None = None  # (1.6) eager's warm peak / the backend's warm peak
    breaks: int | None = None  # (1.6) graph breaks
    recompiles: int | None = None  # (1.6) recompilations, warm-up and timed calls included
    launches: float | None = None  # (1.6) kernel launches per iteration (CUDA: profiler)
    accuracy: str | None = None  # (1.6) pass | fail_accuracy | fail_to_run; None: --no-accuracy
    accuracy_note: str | None = None  # (1.6) the failing output and its errors, or why it did not run
    top_kernels: list[KernelTime] = []  # (1.6) --profile-kernels: the slowest kernels
    kernel_table: BlobRef | None = None  # (1.6) --profile-kernels: every kernel, as JSON
    wall_s: float | None = None  # (1.6) the whole job's wall time (what --durations reads)
    error: str | None = None  # (1.6) fail_to_run: the exception, one line


class Report(Record, tag="report", kw_only=True):
    path: str
    format: str
    records: int = 0


class Error(Record, tag="error", kw_only=True):
    """A tool stopped on bad input or an internal error; records before it stay valid."""

    message: str
    exit_code: int
    where: str | None = None
    model: str | None = None  # (1.3)


RECORD_TYPES: tuple[type[Record], ...] = (
    Header,
    Model,
    Graph,
    Violation,
    Diff,
    Divergence,
    GraphBreak,
    Guard,
    Recompile,
    Variant,
    Advice,
    Kernel,
    Crash,
    Repro,
    Bisect,
    Bench,
    Report,
    Error,
)

KINDS: dict[str, type[Record]] = {t.__struct_config__.tag: t for t in RECORD_TYPES}

AnyRecord = Union[RECORD_TYPES]  # type: ignore[valid-type]
