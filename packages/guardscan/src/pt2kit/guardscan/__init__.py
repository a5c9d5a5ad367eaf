"""guardscan: graph breaks, guards and recompilations of torch.compile, with the user's lines and advice.

Public (everything else is private):

* ``read_trace(path)``: the structured-trace events of a ``TORCH_TRACE`` directory (or one of its
  logs), one ``Trace`` per log file, as ``[(path, trace), ...]``. Imports no torch.
* ``analyze(trace, torch_dir=None)``: one ``Trace`` (read, or kept by a live run) turned into findings:
  frames, graph breaks, guards, recompiles, with the user's lines.
* ``scan(model, inputs, variants, ...)``: runs a model compiled, then with each input variant (``[]``:
  the example inputs alone), and keeps the structured trace of it all (``scan(...).trace`` goes to
  ``analyze``).

Importing this package does not import torch; each name imports it when first used.
"""

from pt2kit.runtime.api import exports

__version__ = "2.4.10"

_PUBLIC = {"analyze": ".findings", "read_trace": ".tracelog", "scan": ".live"}
__all__ = ["__version__", *_PUBLIC]
__getattr__, __dir__ = exports(__name__, _PUBLIC)
