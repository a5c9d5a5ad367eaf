"""aotiprint: per-kernel intermediate values of AOT Inductor and JIT Inductor, as `kernel` records.

Public (everything else is private):

* ``parse_printer(lines)``: the AOTI intermediate value printer's output lines (any mode) as a
  ``PrinterLog``: each launch's arguments before and after it, the model's inputs, the saved files.
* ``kernel_fields(log, wrapper, provenance, saved=None, kernels=None)``: a ``PrinterLog`` as the
  fields of `kernel` records in launch order, buffers no launch has written yet marked uninitialised.
* ``instrument_wrapper(source)``: a JIT Inductor Python wrapper with a probe before and after every
  kernel launch; returns (the new source, the launch sites).
* ``tensor_stats(t)``: numel, mean/min/max of the finite values, NaN and Inf counts of one tensor,
  in one pass (a Triton kernel on CUDA, chunked torch elsewhere).

Importing this package does not import torch; each name imports what it needs when first used.
"""

from pt2kit.runtime.api import exports

__version__ = "1.4.7"

_PUBLIC = {
    "parse_printer": ".printer:parse",
    "kernel_fields": ".records:from_printer",
    "instrument_wrapper": ".jitwrap:instrument",
    "tensor_stats": ".stats",
}
__all__ = ["__version__", *_PUBLIC]
__getattr__, __dir__ = exports(__name__, _PUBLIC)
