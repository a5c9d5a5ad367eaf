"""aotiprint: per-kernel intermediate values of AOT Inductor and JIT Inductor, as `kernel` records.

Library use: :func:`pt2kit.aotiprint.printer.parse` reads the AOTI intermediate value printer's
output; :func:`pt2kit.aotiprint.records.from_printer` turns it into record fields;
:func:`pt2kit.aotiprint.jitwrap.instrument` puts probes into a JIT wrapper;
:func:`pt2kit.aotiprint.stats.tensor_stats` is the one-pass tensor statistics. Importing this
package does not import torch.
"""

__version__ = "1.2.0"
