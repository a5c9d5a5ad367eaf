"""The repro's main and its judges: a repro.py embeds by source what of this its main is handed reaches
(:mod:`..parent.embed`; :func:`.plan.repro` picks, by the rule minify's workers judge by).

Guarantees: exit 1 (the failure is present) and 0 (gone) with one line on stdout, and only where every
side the failure needs ran to its verdict; 125, what ``git bisect run`` reads as "cannot test this
revision", with one line on stderr where it could not: no such device, a backend file missing or not
loading, eager unable to run the graph, a crash repro's child ending in an error before the crash
could be judged.
"""

import os
import subprocess
import sys

import torch

from pt2kit_portable import escape, exception_line, same_death, signal_name

from .loading import UNTESTABLE, Untestable, load_file_attr
from .verdicts import accuracy_judged, judged, violations


def check_devices(specs, device):
    """Untestable unless every device the inputs are put on (REPRO_DEVICE's, else the specs') exists here."""
    wanted = [device] if device else sorted({s[4] for s in specs if s[0] in ("tensor", "jagged")})
    for d in wanted:
        try:
            torch.empty(0, device=d)
        except Exception as e:
            where = f"REPRO_DEVICE={d}" if device else f"the inputs' device {d}"
            raise Untestable(f"{where} is not available here ({exception_line(e)})") from None


def named_backend(backend):
    """A backend by name as it is; Untestable where torch registers no such name here (a third-party one
    not installed)."""
    if backend != "aoti" and backend not in torch._dynamo.list_backends(exclude_tags=()):
        raise Untestable(f"torch registers no backend {backend!r} here (not installed here?)")
    return backend


def file_backend(backend):
    """(file, name): the user's torch.compile backend NAME in that file; a name (BACKEND edited to one, to
    see the bug gone without the user's backend) as :func:`named_backend` takes it."""
    if not isinstance(backend, tuple | list):
        return named_backend(backend)
    path, name = backend
    return load_file_attr(path, name, "backend")


EAGER = "repro: eager's side ended: "


def _tell(error):
    """The child's line that eager's side ended (raising ``error``, its words; nothing after :data:`EAGER` where it
    returned), out before the compiled side runs."""
    print(EAGER + (error or ""), flush=True)


def _in_child(failure):
    """The crash, judged by how a child process running this file died; Untestable where the child
    could not get as far as the code that crashes (its setup failed: exit 125 or a traceback's 1)."""
    p = subprocess.run([sys.executable, *sys.argv], env={**os.environ, "_REPRO_CHILD": "1"}, capture_output=True, text=True)
    died = signal_name(p.returncode) or f"exit {p.returncode}"
    eager = next((ln.removeprefix(EAGER) for ln in p.stdout.splitlines() if ln.startswith(EAGER)), None)
    if same_death(failure["signature"], died):
        if eager is None:  # eager's side never ended: its death is no compiler's
            raise Untestable(f"the process died with {died} before eager's side of the graph ended")
        print(f"repro: the bug is present: the process died with {died}" + (f" where eager raises {eager}" if eager else ""))
        return 1
    if p.returncode == 0 or p.returncode < 0:  # ran to its end, or died of another signal: not this crash
        print(f"repro: crash gone (the process ended with {died}): fixed")
        return 0
    last = (p.stderr.strip().splitlines() or [""])[-1]  # the child's own line where it could not test (exit 125)
    raise Untestable(last.removeprefix("repro: cannot test here: ") if p.returncode == UNTESTABLE else
                     f"the child process ended with {died} before the crash could be judged: {last[:300]}")


def judge_outcome(module_cls, specs, backend, config, failure, dynamic, seed, grad, how, said=None):
    """Exit 1 where the two sides' results still fail so (:func:`.verdicts.judged`), else 0."""
    device = os.environ.get("REPRO_DEVICE") or None
    check_devices(specs, device)
    backend = how["backend_of"](backend)
    inputs = how["inputs"](specs, seed, device)
    fails, sig, detail = judged(module_cls(), inputs, backend, config, failure, dynamic, True, grad, how, said)
    if fails:
        what = failure["kind"] if sig == failure["kind"] else f"{failure['kind']}: {sig}"
        print(f"repro: the bug is present: {what}" + (f": {detail.splitlines()[0]}" if detail else ""))
        return 1
    print(f"repro: {failure['kind']} gone ({sig}): fixed")
    return 0


def judge_accuracy(module_cls, specs, backend, config, failure, dynamic, seed, grad, how):
    """Exit 1 where an output still fails kdiff's accuracy rule (:func:`.verdicts.accuracy_judged`, what minify's
    workers judged it by), else 0."""
    device = os.environ.get("REPRO_DEVICE") or None
    check_devices(specs, device)
    backend = how["backend_of"](backend)
    fails, sig, why = accuracy_judged(module_cls(), how["inputs"](specs, seed, device), backend, config, failure,
                                      dynamic, True, grad, how)
    print(f"repro: the bug is present: accuracy: {why}" if fails else f"repro: accuracy gone ({sig}): fixed")
    return int(fails)


def judge_crash(module_cls, specs, backend, config, failure, dynamic, seed, grad, how):
    """The bug kills the process: run this file in a child, judge by how it died; the child runs the sides,
    and says what eager's did before the compiled side runs."""
    if os.environ.get("_REPRO_CHILD"):
        return judge_outcome(module_cls, specs, backend, config, failure, dynamic, seed, grad, how, _tell)
    check_devices(specs, os.environ.get("REPRO_DEVICE") or None)
    how["backend_of"](backend)
    return _in_child(failure)


def judge_violation(module_cls, specs, backend, config, failure, dynamic, seed, grad, how):
    """Exit 1 where the op (and dtype, and misaligned size) the violation names is still in the aten graph."""
    device = os.environ.get("REPRO_DEVICE") or None
    check_devices(specs, device)
    how["backend_of"](backend)
    found = violations(module_cls(), how["inputs"](specs, seed, device), failure)
    if found:
        print(f"repro: the bug is present: {failure['constraint']}: {failure['op']} in the graph ({found[0]})")
        return 1
    print(f"repro: no {failure['op']}{' with a misaligned output' if failure.get('align') else ''} in the graph: "
          "fixed")
    return 0


def main(module_cls, specs, backend, config, failure, dynamic=False, seed=0, grad=None, **how):
    """Exit 1 with one line while the failure is present, 0 once it is gone, 125 with one line on
    stderr where it cannot be judged here (git bisect run then skips the revision). ``how``: the
    functions that judge it, by role (:func:`.plan.repro`); ``grad``: which inputs a training step differentiates
    (one bool per spec; None: every floating one)."""
    try:
        return how["judge"](module_cls, specs, backend, config, failure, dynamic, seed, grad, how)
    except Untestable as e:
        why = str(e)
    except Exception as e:  # setup that broke some other way (an op this torch lacks): not a verdict
        why = exception_line(e)
    print(f"repro: cannot test here: {escape(why)}", file=sys.stderr)  # one line, whatever a path holds
    return UNTESTABLE
