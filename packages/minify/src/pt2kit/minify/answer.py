"""The repro's main: embedded in every repro.py after :mod:`.harness`, verbatim but for the import of
harness's names below (the repro defines them above it).

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

from .harness import (
    UNTESTABLE,
    Untestable,
    escape,
    exception_line,
    load_file_attr,
    make_inputs,
    outcome,
    signal_name,
    violations,
)


def check_devices(specs, device):
    """Untestable unless every device the inputs are put on (REPRO_DEVICE's, else the specs') exists here."""
    wanted = [device] if device else sorted({s[4] for s in specs if s[0] in ("tensor", "jagged")})
    for d in wanted:
        try:
            torch.empty(0, device=d)
        except Exception as e:
            where = f"REPRO_DEVICE={d}" if device else f"the inputs' device {d}"
            raise Untestable(f"{where} is not available here ({exception_line(e)})") from None


def load_backend(backend):
    """A backend by name as it is (Untestable where torch registers no such name here: a third-party one
    not installed); (file, name) the user's torch.compile backend NAME in that file."""
    if not isinstance(backend, (tuple, list)):
        if backend != "aoti" and backend not in torch._dynamo.list_backends(exclude_tags=()):
            raise Untestable(f"torch registers no backend {backend!r} here (not installed here?)")
        return backend
    path, name = backend
    return load_file_attr(path, name, "backend")


def _in_child(failure):
    """The crash, judged by how a child process running this file died; Untestable where the child
    could not get as far as the code that crashes (its setup failed: exit 125 or a traceback's 1)."""
    p = subprocess.run([sys.executable, *sys.argv], env={**os.environ, "_REPRO_CHILD": "1"},
                       capture_output=True, text=True)
    died = signal_name(p.returncode) or f"exit {p.returncode}"
    if died == failure["signature"]:
        print(f"repro: the bug is present: the process died with {died}")
        return 1
    if p.returncode == 0 or p.returncode < 0:  # ran to its end, or died of another signal: not this crash
        print(f"repro: no {failure['signature']}: the process ended with {died}")
        return 0
    last = (p.stderr.strip().splitlines() or [""])[-1]
    if p.returncode == UNTESTABLE:
        raise Untestable(last.removeprefix("repro: cannot test here: "))
    raise Untestable(f"the child process ended with {died} before the crash could be judged: {last[:300]}")


def _judge(module_cls, specs, backend, config, failure, dynamic, seed, train, grad):
    device = os.environ.get("REPRO_DEVICE") or None
    check_devices(specs, device)
    backend = load_backend(backend)
    if failure["kind"] == "crash" and not os.environ.get("_REPRO_CHILD"):
        return _in_child(failure)  # the bug kills the process: run it in a child, judge by how it died
    inputs = make_inputs(specs, seed, device)
    module = module_cls()
    if failure["kind"] == "violation":
        found = violations(module, inputs, failure)
        if found:
            print(f"repro: the bug is present: {failure['constraint']}: {failure['op']} in the graph ({found[0]})")
            return 1
        print(f"repro: no {failure['op']}{' with a misaligned output' if failure.get('align') else ''} in the graph: "
              "fixed")
        return 0
    fails, sig, detail = outcome(module, inputs, backend, config, failure, dynamic, strict=True, train=train,
                                 grad=grad)
    if fails:
        what = failure["kind"] if sig == failure["kind"] else f"{failure['kind']}: {sig}"
        print(f"repro: the bug is present: {what}" + (f": {detail.splitlines()[0]}" if detail else ""))
        return 1
    print(f"repro: {failure['kind']} gone ({sig}): fixed")
    return 0


def main(module_cls, specs, backend, config, failure, dynamic=False, seed=0, train=False, grad=None):
    """Exit 1 with one line while the failure is present, 0 once it is gone, 125 with one line on
    stderr where it cannot be judged here (git bisect run then skips the revision). ``train``: the graph
    runs as a training step (forward, loss, backward) and the gradients of the inputs ``grad`` marks
    (one bool per spec; None: every floating one) are judged."""
    try:
        return _judge(module_cls, specs, backend, config, failure, dynamic, seed, train, grad)
    except Untestable as e:
        why = str(e)
    except Exception as e:  # setup that broke some other way (an op this torch lacks): not a verdict
        why = exception_line(e)
    print(f"repro: cannot test here: {escape(why)}", file=sys.stderr)  # one line, whatever a path holds
    return UNTESTABLE
