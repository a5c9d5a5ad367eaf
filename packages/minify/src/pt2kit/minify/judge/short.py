"""The short form of a repro (issue 58): an accuracy failure judged by PyTorch's own rule, as its benchmark harness
and its minifier judge one: ``torch._dynamo.utils.same`` of eager's and the compiled outputs against a float64 run,
under torch's own precision defaults. A repro.py embeds this by source (:mod:`..parent.embed`) in place of the
full judge where :func:`.plan.short_form` allows it, and minify writes it only where it fails in every fresh run
(:mod:`..parent.verify`); else the full form, kdiff's rule under the precision the failure was found under.

Guarantees: exit 1 with one line while an output fails ``same``, 0 once every output passes, 125 with one line on
stderr where a side cannot run here (no such device, a backend torch does not register, an op this torch lacks).
Not guaranteed: kdiff's verdict. ``same`` passes what agrees within its tolerance before it asks the float64 run,
and a leaf whose two RMSEs are both NaN; that the form is verified before it is written is what keeps it true.
"""

import os
import sys

import torch
from torch._dynamo.utils import same

from pt2kit_portable import escape, exception_line, to_float64, tol_for

from .harness import fresh_plain
from .loading import UNTESTABLE, apply_config


def short_accuracy(module_cls, specs, backend, config, make, dynamic=False, seed=0):
    """Eager, float64 and compiled outputs of the graph on the same inputs (``make``'s of ``specs``: the repro hands
    it the maker :func:`.plan.inputs_maker` picks), each side on its own copy; exit 1 where an output fails ``same``
    at the benchmark harness's tolerance for its dtype."""
    try:
        if backend not in torch._dynamo.list_backends(exclude_tags=()):
            raise RuntimeError(f"torch registers no backend {backend!r} here (not installed here?)")
        inputs = make(specs, seed, os.environ.get("REPRO_DEVICE") or None)
        with torch.no_grad():
            torch.manual_seed(0)
            eager = list(module_cls()(*fresh_plain(inputs)))
            torch.manual_seed(0)
            fp64 = list(module_cls()(*to_float64(fresh_plain(inputs))))
            torch._dynamo.reset()
            with apply_config(config):
                torch.manual_seed(0)
                test = list(torch.compile(module_cls(), backend=backend, dynamic=dynamic or None)(*fresh_plain(inputs)))
    except Exception as e:  # a side that cannot run here is no verdict: git bisect run's "skip"
        print(f"repro: cannot test here: {escape(exception_line(e))}", file=sys.stderr)
        return UNTESTABLE
    for i, (r, t, f) in enumerate(zip(eager, test, fp64, strict=True)):
        tol = tol_for(r.dtype) if isinstance(r, torch.Tensor) else 1e-4
        if not same(r, t, f, tol=tol, equal_nan=True, log_error=lambda *a: None):
            print(f"repro: the bug is present: accuracy: output {i} fails torch._dynamo.utils.same against float64 "
                  f"(tol {tol:g})")
            return 1
    print("repro: accuracy gone (every output passes torch._dynamo.utils.same): fixed")
    return 0
