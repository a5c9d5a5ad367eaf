"""The short form of a repro (issue 58): the check a repro.py embeds by source (:mod:`..parent.embed`) in place of
the full judge where :func:`.plan.short_form` allows it, and minify writes only where it fails in every fresh run
(:mod:`..parent.verify`); else the full form.

- :func:`short_accuracy`: an accuracy failure judged by PyTorch's own rule, as its benchmark harness and its
  minifier judge one: ``torch._dynamo.utils.same`` of eager's and the compiled outputs against a float64 run,
  under torch's own precision defaults, and of each tensor input as the run left it (a write into one, which
  PyTorch's rule does not read and minify's workers do); :func:`short_train`: the same rule on a training step's gradients
  (:func:`.harness.step`, the full form's own step).
- :func:`short_error`: a compile error, judged by PyTorch's minifier's rule (:func:`says`: the error, or one it
  holds, says in its text what the workers signed: :func:`.verdicts.exception_signature`);
  :func:`short_missing_error`: a missing error (eager raises, the compiled side returns), eager's error signed as
  the workers sign it, by the rule for an error no compiler raised (:func:`.verdicts.error_signature`).
- :func:`short_nan`: NaN or Inf in the compiled outputs (a training step's gradients), judged by the workers' own rule
  (:func:`.verdicts.nonfinite`).
- :func:`short_crash`: a crash, judged as the full form judges one: by how a child process running the file dies
  (:func:`.answer._in_child`), eager's side ended first; what eager raises is named, not signed.
- A user's backend file (``FILE.py:NAME``): :func:`file_backend` loads it in the repro's main, before the check, as
  :func:`code_config` loads a pass the config holds as code;
  ``--backend aoti``: :func:`aoti`, AOT Inductor's export, package and load as torch.compile's backend.
- A training step's compile error, crash or missing error: :func:`short_error`, :func:`short_crash` or
  :func:`short_missing_error`, each side a training step (:func:`training`, handed as ``run``).
- Under the script's torch.autocast, main enters it around the check; ``short_train`` (a training step's
  ``short_nan``) takes its gradients outside it
  (:func:`autocast_off_for`), as the script's ``loss.backward()`` after its block.

Guarantees: exit 1 with one line while the failure is there, 0 once it is gone, 125 with one line on stderr where a
side cannot run here (no such device, a backend torch does not register, an op this torch lacks, eager raising
what the failure does not expect of it). Not guaranteed for accuracy: kdiff's verdict. ``same`` passes what agrees
within its tolerance before it asks the float64 run, and a leaf whose two RMSEs are both NaN; that the form is
verified before it is written is what keeps it true. Not guaranteed for a compile error: the workers' verdict. Every
error whose signature is the workers' fails :func:`says`, and so does one that only quotes it (a check_str's
looseness); a missing error's form judges as the workers do. Each runs in a fresh process (a repro's own, or
minify's verifying one), so none resets Dynamo first.
"""

import contextlib
import importlib.util
import os
import sys

import torch
from torch._dynamo.debug_utils import run_fwd_maybe_bwd
from torch._dynamo.utils import same

from pt2kit_portable import each_to_float64, escape, exception_line, held_exception, tol_for

from .answer import _in_child, _tell
from .harness import aoti_loaded, step
from .loading import UNTESTABLE, Untestable, apply_config, is_code
from .verdicts import error_signature, masked, nonfinite


def short_accuracy(module_cls, specs, backend, config, make, dynamic=False, seed=0):
    """Eager, float64 and compiled outputs of the graph on the same inputs (``make``'s of ``specs``: the repro hands
    it the maker :func:`.plan.inputs_maker` picks), each side on inputs of its own; exit 1 where an output, or an input
    as the run left it (:func:`left`), fails ``same`` at the benchmark harness's tolerance for its dtype. The float64
    inputs are widened each alone (``each_to_float64``, where the full form's ``to_float64`` keeps two that share a
    storage views of one): a failure that needs a write through one read through the other does not fail here, and
    keeps the full form."""
    try:  # torch.compile raises InvalidBackend here for a backend this torch does not register
        device = os.environ.get("REPRO_DEVICE") or None  # each side runs on inputs of its own, made alike
        with torch.no_grad():  # no random op in the graph (the short form's): no seed to set
            eager = left(module_cls(), make(specs, seed, device))
            fp64 = left(module_cls(), each_to_float64(make(specs, seed, device)))  # each alone
            with apply_config(config):
                compiled = torch.compile(module_cls(), backend=backend, dynamic=dynamic or None)
                test = left(compiled, make(specs, seed, device))
    except Exception as e:  # a side that cannot run here is no verdict: git bisect run's "skip"
        print(f"repro: cannot test here: {escape(exception_line(e))}", file=sys.stderr)
        return UNTESTABLE
    return same_verdict(eager, test, fp64, "output", [i for i, s in enumerate(specs) if s[0] != "scalar"])


def left(module, inputs):
    """``module``'s outputs on ``inputs``, then each tensor input as the run left it: a write into an input (an
    ``add_``) is judged as an output is, as minify's workers judge one (:func:`.harness.written`)."""
    return [*module(*inputs), *(t for t in inputs if isinstance(t, torch.Tensor))]


def short_train(module_cls, specs, grad, backend, config, make, dynamic=False, seed=0, outside=contextlib.nullcontext):
    """A training step (:func:`.harness.step`) of eager's, the float64 and the compiled module, each on inputs of its
    own (``make``'s of ``specs``), the floating ones ``grad`` marks requiring grad, the gradients taken under
    ``outside()`` (:func:`autocast_off_for` where main entered the script's autocast): exit 1 where a gradient fails ``same``
    as :func:`short_accuracy` judges an output."""
    try:  # torch.compile raises InvalidBackend here for a backend this torch does not register
        device = os.environ.get("REPRO_DEVICE") or None  # each side runs on inputs of its own, made alike
        eager = trained(module_cls(), make(specs, seed, device), grad, outside)
        fp64 = trained(module_cls(), each_to_float64(make(specs, seed, device)), grad, outside)
        with apply_config(config):
            test = trained(torch.compile(module_cls(), backend=backend, dynamic=dynamic or None), make(specs, seed, device),
                           grad, outside)
    except Exception as e:  # a side that cannot run here is no verdict: git bisect run's "skip"
        print(f"repro: cannot test here: {escape(exception_line(e))}", file=sys.stderr)
        return UNTESTABLE
    return same_verdict(eager, test, fp64, "gradient")


def autocast_off_for(devices):
    """A training step's ``outside`` where main entered the script's autocast: each of its ``devices``' autocast off for
    the gradients, as the script's loss.backward() after its block is."""
    def outside():
        stack = contextlib.ExitStack()
        for device in devices:
            stack.enter_context(torch.autocast(device, enabled=False))
        return stack
    return outside


def trained(module, inputs, grad, outside):
    """A training step (:func:`.harness.step`) of ``module`` on ``inputs``, the floating ones ``grad`` marks requiring
    grad (:func:`marked`): its gradients, taken under ``outside()``."""
    return step(module, marked(inputs, grad), outside)


def same_verdict(eager, test, fp64, what, inputs=()):
    """Exit 1 where the ``what`` (an output, a gradient) of the compiled side, or an input it left (the last items: the
    positions ``inputs`` names in INPUTS), fails ``same`` against float64 at the benchmark harness's tolerance for its
    dtype, else 0."""
    n = len(eager) - len(inputs)
    for i, (r, t, f) in enumerate(zip(eager, test, fp64, strict=True)):
        tol = tol_for(r.dtype) if isinstance(r, torch.Tensor) else 1e-4
        if not same(r, t, f, tol=tol, equal_nan=True, log_error=lambda *a: None):
            name = f"{what} {i}" if i < n else f"INPUTS[{inputs[i - n]}] as the run left it"
            print(f"repro: the bug is present: accuracy: {name} fails torch._dynamo.utils.same against float64 "
                  f"(tol {tol:g})")
            return 1
    print(f"repro: accuracy gone (every {what} passes torch._dynamo.utils.same): fixed")
    return 0


def short_error(module_cls, specs, backend, config, make, signature, dynamic=False, seed=0, run=None, check_str=None):
    """Eager's side, then the compiled one, of the graph on ``make``'s inputs, each on inputs of its own: exit 1 where the
    compiled side raises an error of ``signature`` (a compile error); eager raising cannot be judged (125), as in the
    workers' strict run. ``run``: how a side runs (:func:`raised`, at inference; a training step's, :func:`training`).
    ``check_str`` (minify --check-str): any error whose text, or a held one's, holds it as it is counts instead (no
    signature read, as in the workers' rule for it, which reads the raised error's signature and first 2,000
    characters: the form is written only where it fails, so both held it then)."""
    run = run or raised
    try:  # torch.compile raises InvalidBackend here for a backend this torch does not register
        device = os.environ.get("REPRO_DEVICE") or None  # each side runs on inputs of its own, made alike
        if (eager := run(module_cls(), make(specs, seed, device))) is not None:
            print(f"repro: cannot test here: eager cannot run the graph: {escape(exception_line(eager))}", file=sys.stderr)
            return UNTESTABLE
        with apply_config(config):
            test = run(torch.compile(module_cls(), backend=backend, dynamic=dynamic or None), make(specs, seed, device))
    except Exception as e:  # a side that cannot run here is no verdict: git bisect run's "skip"
        print(f"repro: cannot test here: {escape(exception_line(e))}", file=sys.stderr)
        return UNTESTABLE
    if test is not None and (says(test, check_str, str) if check_str else says(test, signature)):
        print(f"repro: the bug is present: compile-error: {escape(signature)}")
        return 1
    print(f"repro: compile-error gone ({escape(exception_line(test) if test else 'the compiled side returns')}): fixed")
    return 0


def says(e, signature, mask=masked):
    """Whether ``e``, or an exception it holds, says the error ``signature`` signs in its own text (its lines stripped,
    ``mask``-ed as a signature is: :func:`.verdicts.masked`; ``str``: as it is): PyTorch's minifier's rule for a compile error (after_aot's
    ``check_str in repr(e)``) on the signature minify's workers judged by (:func:`.verdicts.exception_signature`), in
    a third of its lines. Each wrapper torch raises around the compiler's error says it in its own text
    (BackendCompilerFailed, InductorError, LoweringException; a compile worker's SubprocException, in its
    traceback); the chain it holds reaches the rest."""
    for _ in range(8):  # a chain of causes, never a cycle
        if e is None:
            return False
        lines = "\n".join(ln.strip() for ln in str(e).strip().splitlines())
        if signature in mask(f"{type(e).__name__}: {lines}"):
            return True
        e = held_exception(e)
    return False


def short_missing_error(module_cls, specs, backend, config, make, signature, dynamic=False, seed=0, run=None):
    """Eager's side, then the compiled one, as :func:`short_error`'s: exit 1 where eager raises an error of ``signature``
    (:func:`.verdicts.error_signature`) and the compiled side returns; eager raising another cannot be judged (125).
    ``run``: how a side runs, as :func:`short_error`'s (a training step's: :func:`training`)."""
    run = run or raised
    try:  # torch.compile raises InvalidBackend here for a backend this torch does not register
        device = os.environ.get("REPRO_DEVICE") or None  # each side runs on inputs of its own, made alike
        eager = run(module_cls(), make(specs, seed, device))
        if eager is not None and error_signature(eager) != signature:
            print(f"repro: cannot test here: eager cannot run the graph: {escape(exception_line(eager))}", file=sys.stderr)
            return UNTESTABLE
        with apply_config(config):
            test = run(torch.compile(module_cls(), backend=backend, dynamic=dynamic or None), make(specs, seed, device))
    except Exception as e:  # a side that cannot run here is no verdict: git bisect run's "skip"
        print(f"repro: cannot test here: {escape(exception_line(e))}", file=sys.stderr)
        return UNTESTABLE
    if eager is not None and test is None:
        print(f"repro: the bug is present: missing-error: the compiled side returns where eager raises {escape(signature)}")
        return 1
    why = "eager returns" if eager is None else "raises as eager does" if error_signature(test) == signature else \
        f"the compiled side raises {exception_line(test)}"  # a compiler's wrapper: its own words
    print(f"repro: missing-error gone ({escape(why)}): fixed")
    return 0


def short_nan(module_cls, specs, backend, config, make, signature, dynamic=False, seed=0, grad=None,
              outside=contextlib.nullcontext):
    """Eager's outputs, then the compiled ones, of the graph on ``make``'s inputs, each side on inputs of its own: exit 1
    where the compiled outputs hold the NaN/Inf ``signature`` says ("nan", "inf", "nan+inf", " (eager too)" where
    eager's held it as well), as minify's workers judge it (:func:`.verdicts.nonfinite_verdict`). ``grad``: a training
    step's GRAD, whose gradients (:func:`trained`, taken under ``outside()``) are judged in place of the outputs."""
    what = "outputs" if grad is None else "gradients"
    try:  # torch.compile raises InvalidBackend here for a backend this torch does not register
        device = os.environ.get("REPRO_DEVICE") or None  # each side runs on inputs of its own, made alike
        with torch.no_grad():  # a training step's enables grad for itself
            side = (lambda m, xs: list(m(*xs))) if grad is None else (lambda m, xs: trained(m, xs, grad, outside))
            eager = nonfinite(side(module_cls(), make(specs, seed, device)))
            with apply_config(config):
                got = nonfinite(side(torch.compile(module_cls(), backend=backend, dynamic=dynamic or None),
                                     make(specs, seed, device)))
    except Exception as e:  # a side that cannot run here is no verdict: git bisect run's "skip"
        print(f"repro: cannot test here: {escape(exception_line(e))}", file=sys.stderr)
        return UNTESTABLE
    sig = f"{got} (eager too)" if got and eager else got
    if got and sig == signature:
        print(f"repro: the bug is present: nan: the compiled {what} hold {sig}")
        return 1
    print(f"repro: nan gone (the compiled {what} hold {sig or 'no NaN or Inf'}): fixed")
    return 0


def short_crash(module_cls, specs, backend, config, make, failure, dynamic=False, seed=0, run=None):
    """This file run again in a child process, whose death is the verdict (:func:`.answer._in_child`: exit 1 where it
    dies of ``failure["signature"]`` after eager's side ended); in the child, eager's side, then the compiled one.
    Eager returns or raises (the crash is then the compiled side's signal where eager raises), and says so before
    the compiled side runs. Unlike the workers' child, it is not held to the error ``failure["eager"]`` names: the
    verdict is the compiled side's death, and a revision whose eager words its error otherwise is judged, not
    skipped (the signature rule stays out of the file). ``run``: how a side runs, as :func:`short_error`'s."""
    run = run or raised
    try:
        if not os.environ.get("_REPRO_CHILD"):
            return _in_child(failure)
        device = os.environ.get("REPRO_DEVICE") or None  # each side runs on inputs of its own, made alike
        eager = run(module_cls(), make(specs, seed, device))
        _tell(None if eager is None else exception_line(eager))  # what the parent reads: eager's side ended
        with apply_config(config):
            test = run(torch.compile(module_cls(), backend=backend, dynamic=dynamic or None), make(specs, seed, device))
        if test is not None and eager is None:
            raise Untestable(f"the compiled side raised {exception_line(test)}, so its crash cannot be judged")
    except Exception as e:  # a side that cannot run here is no verdict: git bisect run's "skip"; each one line
        print(f"repro: cannot test here: {e if isinstance(e, Untestable) else exception_line(e)}", file=sys.stderr)
        return UNTESTABLE
    return 0  # the child ran to its end: no crash


def file_backend(backend):
    """The user's backend of BACKEND's (file, name), loaded once, before the check (:func:`load_file`). A name (BACKEND
    edited to one, to see the bug gone without the user's backend) as it is."""
    return backend if isinstance(backend, str) else load_file(*backend, "backend")


def code_config(config):
    """CONFIG, each value that is code, ("pt2kit:code", FILE, NAME) (a pass a model file installed, or one handed to
    minify with --config KEY=FILE.py:NAME), that function loaded from its file (:func:`load_file`), once, before the
    check; the full form's :func:`.loading.apply_code_config` loads it where it is applied."""
    return {m: {k: load_file(v[1], v[2], "pass") if is_code(v) else v for k, v in settings.items()}
            for m, settings in config.items()}


def load_file(path, name, what):
    """NAME of the Python file at ``path``, run as a module (its ``__main__`` block not): the user's ``what`` (a backend,
    a pass); exit 125 with one line where it cannot (git bisect run's "skip"). What the file's top level sets in the
    compiler's configs is put back, as the full form's loader and minify's workers put it back
    (:func:`.loading.load_file_attr`): CONFIG says which settings the repro runs under (the search kept those the
    failure needs). Unlike that loader, a decomposition the file puts into Inductor's table stays (the form is
    written only where it fails in every fresh run)."""
    try:
        spec = importlib.util.spec_from_file_location(f"{what}_file", path)
        module = importlib.util.module_from_spec(spec)
        configs = [(c, c.get_config_copy()) for c in (torch._inductor.config, torch._dynamo.config, torch._functorch.config)]
        spec.loader.exec_module(module)
        for c, before in configs:  # only what changed, by setattr as every torch takes it (a deprecated key warns)
            for k, v in c.get_config_copy().items():
                if k in before and v != before[k]:
                    setattr(c, k, before[k])
        return getattr(module, name)
    except Exception as e:  # no such file here, it does not load or lacks NAME
        print(escape(f"repro: cannot test here: the {what} file {path}: {exception_line(e)}"), file=sys.stderr)
        raise SystemExit(125) from None


def aoti(gm, example_inputs):
    """``--backend aoti`` as torch.compile's backend, so each check runs it as it runs any other: the graph Dynamo hands
    over exported (torch.export), packaged and loaded as the full form's :func:`.harness.aoti_run` packages one
    (:func:`.harness.aoti_loaded`: under the machine's lock, since minify verifies a repro in 3 processes side by
    side); the full form's :func:`.harness.compile_aoti` exports the module itself (the same aten graph)."""
    return aoti_loaded(torch.export.export(gm, tuple(example_inputs)))


def raised(fn, inputs):
    """The exception a run of ``fn`` on ``inputs`` (no grad, seeded as every side is) raised, None where it returned."""
    try:
        with torch.no_grad():
            torch.manual_seed(0)
            fn(*inputs)
            if torch.cuda.is_initialized():  # a kernel's device-side error is its own run's (harness.sync's rule,
                torch.cuda.synchronize()  # here in 2 lines: a def of it is 3 more in every short form)
    except Exception as e:
        return e


def training(grad):
    """How each side of a training step's compile error or crash runs, in place of :func:`raised`: the step PyTorch's
    own minifier runs for one (``torch._dynamo.debug_utils.run_fwd_maybe_bwd``: the forward on clones of the inputs,
    ``reduce_to_scalar_loss`` of its outputs, backward), under grad, the floating inputs ``grad`` marks requiring it.
    Not the workers' step (:func:`.harness.step`, whose loss sums the floating outputs' means): what is judged is
    the compiled side's error or death, not a gradient, so the file holds the step a maintainer knows from
    PyTorch's own repros and no loss of ours; the form is written only where it fails in every fresh run."""
    def run(fn, inputs):  # raised runs a side under no_grad: the step differentiates
        return raised(lambda *xs: torch.enable_grad()(run_fwd_maybe_bwd)(fn, marked(xs, grad)), inputs)
    return run


def marked(inputs, grad):
    """``inputs``, the floating tensors ``grad`` marks requiring grad (each a leaf of its own storage: the form's)."""
    return [x.requires_grad_(g and x.is_floating_point()) if isinstance(x, torch.Tensor) else x
            for x, g in zip(inputs, grad, strict=True)]
