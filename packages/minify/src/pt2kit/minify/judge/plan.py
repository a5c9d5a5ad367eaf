"""Which functions judge a failure, by role: the one rule both minify's workers (:func:`.verdicts.outcome`)
and every repro.py (its main is handed them by name, and embeds only their code: :mod:`..parent.embed`) follow.
Torch-free, so minify's parent writes a repro's main from it: a role is a (module, name) pair.

Roles: ``judge`` (a crash is judged by how a child process dies, a violation in the graph the backend is
handed, the rest by the two sides' results); ``backend_of`` (a name torch registers, or the user's file's
NAME); ``side`` (what a run of the graph gives: its outputs, or a training step's gradients); ``compiled``
(how the compiled side runs); ``configured`` (how the config is applied: code handed over as FILE.py:NAME
loaded first, where it holds some, a decomposition put into Inductor's table where it holds one); ``float64``
(an accuracy failure's float64 reference); ``inputs`` (how a repro makes its inputs from their specs);
``verdict`` (what is judged on the two sides' results; an accuracy failure's judge, :func:`.verdicts.accuracy_judged`,
runs its rule straight through); ``fresh`` (each side's copy of the inputs);
``precision`` (how the precision settings the failure was judged under are applied); ``under`` (the
torch.autocast the script called the graph under, entered around each side's call); ``signature`` (an error's: what a compile error is
judged by, what eager must raise where a crash is the compiled side's signal where eager raises, and what a
query says of a side that raised).
"""

from __future__ import annotations

import re
from typing import Any

from pt2kit.runtime.common.precision import HARNESS as HARNESS_PRECISION

from .loading import DECOMPOSITIONS, is_code

ANSWER, HARNESS, LOADING, VERDICTS = (f"pt2kit.minify.judge.{m}" for m in ("answer", "harness", "loading", "verdicts"))
PRECISION = "pt2kit.runtime.common.precision"
SHORT = "pt2kit.minify.judge.short"
Role = tuple[str, str]


def is_backward(failure: dict[str, Any], train: bool = False) -> bool:
    """Whether the graph a failure is judged on is a backward graph run alone: a failure of the backward
    (``phase``) judged on no training step (which is a joint graph's)."""
    return failure.get("phase") == "backward" and not train


def compiled_side(backend: Any, train: bool = False, backward: bool = False) -> Role:
    """A training step through the compiled module (``train``), a backward graph as AOTAutograd compiles one
    (``backward``), an AOT Inductor package (backend "aoti"), else torch.compile under no_grad."""
    aoti = isinstance(backend, str) and backend == "aoti"
    if backward and not aoti:
        return HARNESS, "compile_backward"
    if train:
        return HARNESS, "compile_train"
    return HARNESS, "compile_aoti" if aoti else "compile_and_run"


def sides(failure: dict[str, Any], backend: Any, config: dict[str, dict[str, Any]], train: bool = False) -> dict[str, Role]:
    """The roles a run of both sides needs (``config``: typed, a code value a tuple ("pt2kit:code", FILE, NAME))."""
    code = any(is_code(v) for s in config.values() for v in s.values())
    verdict = {"nan": "nonfinite_verdict"}.get(failure["kind"], "passes")  # accuracy's is accuracy_judged's own
    configured = "apply_code_config" if code else "apply_decomposing_config" if DECOMPOSITIONS in config else \
        "apply_config"
    return {"side": (HARNESS, "gradients" if train else "eager_outputs"),
            "compiled": compiled_side(backend, train, is_backward(failure, train)),
            "configured": (LOADING, configured),
            "fresh": (HARNESS, "fresh"),
            "under": ("pt2kit_portable", "under_autocast") if failure.get("autocast") else (HARNESS, "no_autocast"),
            **({"precision": (PRECISION, "use_precision")} if failure.get("precision") else {}),
            **({"float64": (HARNESS, "run_float64")} if failure["kind"] == "accuracy" else {}),
            **({"verdict": (VERDICTS, verdict)} if failure["kind"] != "accuracy" else {}),
            "signature": (VERDICTS, "exception_signature")}


# where float64_mode changes a run of the float64 copy: an op handed a float32 or complex64 dtype (widened to float64
# there, kept as it is without), a higher-order op (its operands widened); names only aten graphs spell as such
_NARROW_DTYPE = re.compile(r"torch\.(float32|float|complex64|cfloat)\b|torch\.ops\.higher_order\.")


def float64_run(graph: str, level: str = "aten") -> Role:
    """How a repro runs an accuracy failure's float64 reference: under float64_mode (:func:`.harness.run_float64`,
    minify's workers' always) where the graph's source may need it, else the float64 copy as it is
    (:func:`.harness.run_float64_cast`): an aten graph that names no float32 dtype and no higher-order op."""
    if level == "aten" and not _NARROW_DTYPE.search(graph):
        return HARNESS, "run_float64_cast"
    return HARNESS, "run_float64"


def plain(specs: list[tuple[Any, ...]]) -> bool:
    """Whether every input spec is a scalar or a seeded tensor on a storage of its own (no real values, no
    offset or shared storage, a leaf): what :func:`.harness.make_plain_inputs` makes as make_inputs does."""
    return all(s[0] == "scalar" or (s[0] == "tensor" and len(s) == 7) for s in specs)


def valued(specs: list[tuple[Any, ...]]) -> bool:
    """Whether every input spec is a scalar or a tensor of its own storage, seeded or given its real values (no
    offset, shared storage or non-leaf): what :func:`.harness.make_valued_inputs` makes as make_inputs does."""
    return all(s[0] == "scalar" or (s[0] == "tensor" and (len(s) == 7 or (len(s) == 8 and (s[7] is None or isinstance(
        s[7], list))))) for s in specs)


def laid(specs: list[tuple[Any, ...]]) -> bool:
    """Whether every input spec is :func:`plain` or a seeded tensor of a storage of its own at an offset into it or in
    a larger one (its last item ``{"offset": N, "storage": M}``: a slice of a larger tensor), a leaf: what
    :func:`.harness.make_laid_inputs` makes as make_inputs does."""
    return all(plain([s]) or (s[0] == "tensor" and len(s) == 9 and s[7] is None and isinstance(s[8], dict)
                              and set(s[8]) <= {"offset", "storage"}) for s in specs)


def shared(specs: list[tuple[Any, ...]]) -> bool:
    """Whether every input spec is a scalar or a tensor that is a leaf, seeded or of real values, at an offset into
    its storage or in a larger one, or a view of another input's storage (``{"view_of": J}``): what
    :func:`.harness.make_shared_inputs` makes as make_inputs does (not a jagged tensor or a non-leaf)."""
    return all(s[0] == "scalar" or (s[0] == "tensor" and "non-leaf" not in s[8:9]) for s in specs)


def leaves(specs: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """``specs`` with every input that was no leaf in the real run (its "non-leaf" mark) made a leaf of its own storage,
    as a short form makes it: at inference no grad is taken, and a training step's GRAD marks it requiring grad, so
    the graph and its backward are the same; where its leafness is the failure (a backend that looks at is_leaf),
    the form does not fail and the full form, which rebuilds it as none, is written."""
    out = []
    for s in specs:
        if s[0] == "tensor" and len(s) > 8 and s[8] == "non-leaf":  # (..., values, "non-leaf"[, layout])
            s = (*s[:8], *s[9:])
            s = s[:7] if len(s) == 8 and s[7] is None else s
        out.append(s)
    return out


# the floating dtypes, by name, whose every seeded input pt2kit_portable's _drawn draws by _uniform where a range is known
_UNIFORM = frozenset({"float16", "bfloat16", "float32", "float64"})


def uniform(specs: list[tuple[Any, ...]]) -> bool:
    """Whether every input spec is :func:`plain` and each tensor's of a common floating dtype (:data:`_UNIFORM`) whose
    range is known: what :func:`.harness.make_uniform_inputs` makes as make_inputs does."""
    return plain(specs) and all(s[0] == "scalar" or (s[3] in _UNIFORM and None not in s[5:7]) for s in specs)


def inputs_maker(specs: list[tuple[Any, ...]] | None) -> Role:
    """How a repro makes its inputs from ``specs``: the plainest of the makers that makes them all."""
    if specs is not None and uniform(specs):
        return HARNESS, "make_uniform_inputs"
    if specs is not None and plain(specs):
        return HARNESS, "make_plain_inputs"
    if specs is not None and laid(specs):
        return HARNESS, "make_laid_inputs"
    if specs is not None and valued(specs):
        return HARNESS, "make_valued_inputs"
    return HARNESS, "make_shared_inputs" if specs is not None and shared(specs) else "make_inputs"


def repro(failure: dict[str, Any], backend: Any, config: dict[str, dict[str, Any]], train: bool = False,
          specs: list[tuple[Any, ...]] | None = None, graph: str = "", level: str = "aten") -> dict[str, Role]:
    """What a repro's main is handed: the judge, how the backend is had, how its inputs are made from ``specs``
    and copied (:func:`plain`), its precision settings where it runs on the CPU alone (:func:`on_cpu`), and where
    the judge runs both sides, :func:`sides` (without ``signature`` but for a compile
    error: the repro's own run is strict, an error in any other failure cannot be judged, and is said in one
    line), the float64 reference as its ``graph`` (source, at ``level``) needs it (:func:`float64_run`)."""
    judge = {"crash": "judge_crash", "violation": "judge_violation", "accuracy": "judge_accuracy"}.get(failure["kind"],
                                                                                                     "judge_outcome")
    how = {"judge": (ANSWER, judge),
           "backend_of": (ANSWER, "file_backend" if isinstance(backend, tuple | list) else "named_backend"),
           "inputs": inputs_maker(specs)}
    if failure["kind"] == "violation":
        return how
    run = sides(failure, backend, config, train)
    if failure["kind"] != "compile-error" and not failure.get("eager"):  # a crash where eager raises: eager's error
        del run["signature"]
    if "float64" in run:
        run["float64"] = float64_run(graph, level)
    if specs is not None and valued(specs):  # each input a leaf on a storage of its own
        run["fresh"] = (HARNESS, "fresh_plain")
    if "precision" in run and specs is not None and on_cpu(specs, graph):
        run["precision"] = (PRECISION, "use_cpu_precision")
    return {**how, **run}


def on_cpu(specs: list[tuple[Any, ...]], graph: str = "") -> bool:
    """Whether a repro runs on the CPU alone as it is written: every input there and no device named in its graph
    (``REPRO_DEVICE=cuda`` moves it, without CUDA's precision settings: a repro made on CUDA carries those)."""
    return all(s[0] == "scalar" or s[4] == "cpu" for s in specs) and "cuda" not in graph


# an op that draws random numbers, by its name: Inductor's draws differ from eager's without fallback_random, which
# the short form leaves at torch's default (a difference no fix would remove, so the full form judges such a graph)
_RANDOM = re.compile(r"rand|dropout|bernoulli|normal|uniform|multinomial|exponential|poisson|cauchy|geometric|philox"
                     r"|rng|seed")


def short_form(failure: dict[str, Any], backend: Any, config: dict[str, dict[str, Any]], specs: list[tuple[Any, ...]],
               graph: str, ops: list[str], level: str = "aten", phase: str = "forward", dynamic: bool = False) -> Role | None:
    """The short form's check (:mod:`.short`) where a repro may be written so, else None. Each form needs a graph
    run at inference (``phase`` forward; a backward graph too, which a backend torch registers compiles so: see
    :func:`compiled_side`) or as a training step (joint) on tensors seeded or of real values, each on a storage of
    its own, at an offset into it or in a larger one, or a view of another input's (:func:`shared`; no jagged tensor),
    once :func:`leaves` made each a leaf, through a backend torch registers, a user's backend file
    (:func:`file_backend`: not for a backward graph alone, which the full form hands its bw_compiler, the short form
    its fw_compiler) or AOT Inductor (at inference, static shapes: :func:`.short.aoti`, torch.compile's backend in
    the form), with no decomposition in its config (code in it, a pass, is loaded by :func:`.short.code_config`),
    under the accuracy harness's precision or none named (the model's own is the user's: the full form keeps it),
    under the script's torch.autocast or none (the repro's check runs inside it, :func:`autocast_entered`; a training
    step's gradients are taken outside it, as the script's ``loss.backward()`` after its block; a backward graph
    alone runs outside it, as it ran in the script: its dtypes are the ones AOTAutograd traced under it).
    Then ``short_accuracy`` (``short_train`` for a training step's gradients): an accuracy failure judged against
    eager (by kdiff's float64 rule or assert_close: PyTorch's own rule stands in for either, and the form is written
    only where it fails), with no random op and a float64 reference the inputs' cast makes (:func:`_accuracy_short`);
    ``short_error``: a compile error, judged by PyTorch's check_str rule on its signature (or on the failure's own
    --check-str); ``short_missing_error``: a missing error; ``short_crash``: a crash, judged by how a child process dies (the error's and the crash's also for a training step, each side run as one:
    :func:`.short.training`); ``short_nan``: NaN or Inf in the compiled outputs (a training step's gradients). The
    caller writes it only where it fails in every fresh run."""
    made = leaves(specs)  # the inputs as the form makes them
    if not (failure.get("precision") in (None, HARNESS_PRECISION) and phase in ("forward", "backward", "joint")
            and shared(made)
            and isinstance(backend, str) and (backend != "aoti" or (phase == "forward" and not dynamic))
            and (":" not in backend or (file_backend(backend) and phase != "backward"))
            and DECOMPOSITIONS not in config):
        return None
    if failure["kind"] == "compile-error":  # at inference, or a training step's; its --check-str too
        return SHORT, "short_error"
    if failure["kind"] == "crash":
        return SHORT, "short_crash"
    if failure["kind"] == "nan":  # the outputs at inference (a backward graph alone too), a training step's gradients
        return SHORT, "short_nan"
    if failure["kind"] == "missing-error" and failure.get("eager"):  # a training step's too, each side run as one
        return SHORT, "short_missing_error"
    if phase == "joint":  # a training step: else only an accuracy failure of its gradients
        return (SHORT, "short_train") if _accuracy_short(failure, graph, ops, level) else None
    return (SHORT, "short_accuracy") if _accuracy_short(failure, graph, ops, level) else None


# what makes a Dynamo graph's float64 run differ from its run on float64 inputs: a dtype it names or casts to, a
# tensor it makes (in the default dtype), a higher-order op
_DYNAMO_NARROW = re.compile(r"dtype|\.(float|half|bfloat16|double|to|type|type_as|new_\w+)\(|torch\.(zeros|ones|empty|full|"
                            r"rand\w*|arange|linspace|logspace|tensor|eye|scalar_tensor)\b|higher_order")


def file_backend(backend: str) -> bool:
    """Whether ``backend`` names a user's backend in a Python file (``FILE.py:NAME``), which a short form loads by
    path (:func:`.short.file_backend`); not a ``module:attr`` one."""
    path, _, name = backend.rpartition(":")
    return path.endswith(".py") and name.isidentifier()


def _accuracy_short(failure: dict[str, Any], graph: str, ops: list[str], level: str) -> bool:
    """An accuracy failure against eager, of a graph with no random op whose float64 run is its run on float64 inputs
    (:func:`float64_run`'s cast; a Dynamo graph that names no dtype, makes no tensor and calls no higher-order op)."""
    castable = float64_run(graph, level) == (HARNESS, "run_float64_cast") or (  # a bare torch.float32 too
        level == "dynamo" and not _DYNAMO_NARROW.search(graph) and not _NARROW_DTYPE.search(graph))
    return (failure["kind"] == "accuracy" and failure.get("ref", "eager") == "eager" and castable
            and not any(_RANDOM.search(op) for op in ops))


# an autocast entry's values as a repro writes them into code: a device type's and a floating dtype's bare names
_NAME = re.compile(r"[a-z][a-z0-9_]*")


def autocast_entered(state: list[dict[str, Any]] | None) -> list[str]:
    """The calls that make the torch.autocast the script called the graph under (a record's ``autocast``:
    :func:`pt2kit_portable.autocast_now`'s entries), one an entry, as a short form's main enters them around its
    check: ``torch.autocast('cpu', dtype=torch.bfloat16)``; none for none. Each name is checked to be a bare word, so
    no record's text becomes code (ValueError else)."""
    out = []
    for s in state or ():
        if not (_NAME.fullmatch(str(s["device_type"])) and _NAME.fullmatch(str(s["dtype"]))):
            raise ValueError(f"{s!r}: not an autocast entry")
        cache = "" if s.get("cache_enabled", True) else ", cache_enabled=False"
        out.append(f"torch.autocast({s['device_type']!r}, dtype=torch.{s['dtype']}{cache})")
    return out
